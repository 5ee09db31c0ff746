-- One row per running worker process, beating every second. A claim (emails.claimed_by,
-- webhook_calls.claimed_by) starts with its worker's id, so when a worker falls silent (killed,
-- frozen, its machine gone) another process takes its claims over within seconds instead of
-- waiting out the lease. UNLOGGED: a heartbeat is worth nothing after a database crash, and every
-- live worker writes its row again within a second.
CREATE UNLOGGED TABLE workers (
  id text PRIMARY KEY,
  host text NOT NULL,
  pid integer NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  beat_at timestamptz NOT NULL DEFAULT now()
);
