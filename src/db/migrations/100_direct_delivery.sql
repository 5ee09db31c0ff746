-- Direct delivery (SMTP_URL=direct): the recipients an email still owes, where its mail is routed,
-- the IP pool and warm-up of each sending domain, and what the deliverability view reads.

-- Recipients not yet settled after an attempt that settled others (delivered to one domain,
-- deferred by another): the next attempt goes to these alone. Null: every recipient of the email.
ALTER TABLE emails ADD COLUMN pending_recipients text[];
-- The destination (registrable domain of the MX hosts) an email waiting for a retry is routed to.
ALTER TABLE emails ADD COLUMN destination text;
-- GET /v1/deliverability/destinations counts a team's mail waiting per destination.
CREATE INDEX emails_waiting_destination ON emails (team_id, destination) WHERE destination IS NOT NULL AND send_at IS NOT NULL;

-- The IP pool (IP_POOLS) a domain's mail leaves from.
ALTER TABLE domains ADD COLUMN ip_pool text NOT NULL DEFAULT 'default';
-- Warm-up: the UTC day it began (day 1), and the daily caps when given explicitly (null: the ramp).
ALTER TABLE domains ADD COLUMN warmup_started_on date;
ALTER TABLE domains ADD COLUMN warmup_daily_limits integer[];

-- Attempts a warming-up domain has made on a UTC day: taken before each attempt, up to the day's
-- cap, and given back for mail that was not tried after all.
CREATE TABLE domain_warmup_days (
  team_id integer NOT NULL,
  domain_id integer NOT NULL,
  day date NOT NULL,
  sent integer NOT NULL DEFAULT 0,
  PRIMARY KEY (team_id, domain_id, day)
);

-- Outcomes of direct delivery per team, destination and minute: the last hour of the view.
CREATE TABLE delivery_stats (
  team_id integer NOT NULL,
  destination text NOT NULL,
  minute timestamptz NOT NULL,
  delivered integer NOT NULL DEFAULT 0,
  deferred integer NOT NULL DEFAULT 0,
  bounced integer NOT NULL DEFAULT 0,
  PRIMARY KEY (team_id, destination, minute)
);
CREATE INDEX delivery_stats_minute ON delivery_stats (minute);

-- What each worker's destinations hold right now, per team: written every few seconds, read while
-- fresh (a worker that stopped writing is not counted).
CREATE UNLOGGED TABLE destination_states (
  worker_id text NOT NULL,
  team_id integer NOT NULL,
  destination text NOT NULL,
  queued integer NOT NULL,
  in_flight integer NOT NULL,
  connection_limit integer NOT NULL,
  paused_until timestamptz,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (worker_id, team_id, destination)
);
