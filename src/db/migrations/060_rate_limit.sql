-- The per-team rate limit shared by every API process of a database. A process leases a slice of
-- the team's budget for the current one-second window here and serves requests from it in memory,
-- so the table sees one statement per slice, not one per request (src/http/shared-rate-limit.ts).
--
-- One row per team, overwritten by the team's next window (leaseRateLimitSlice): past windows are
-- never kept, so nothing has to delete them and the table stays as small as the set of teams that
-- ever made a request. The columns it rewrites are not indexed, so each lease is a HOT update.
--
-- UNLOGGED: a lease is worth one second, so it is not worth a WAL record. After a crash the table
-- comes back empty, which at worst lets one window of each team through twice.
--
-- No foreign key to teams: it would cost a probe and a row lock on every team's first lease, and
-- teams are never deleted (see 031_release.sql).
CREATE UNLOGGED TABLE rate_limit_windows (
  team_id integer PRIMARY KEY,
  window_start timestamptz NOT NULL,
  -- Handed out to processes in this window; may pass the limit by less than one slice (see the lease).
  leased integer NOT NULL
);
