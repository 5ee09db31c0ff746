-- Feedback: every event source (dispatcher, inbound DSN/ARF, tracking, unsubscribe) goes through one
-- function that appends the event, moves the email's status, and counts each email once per kind.

-- What has been counted, for every email (campaign or not): one row per email and kind, so a
-- repeated report never counts twice, and every counter can be recounted from here. It replaces
-- the campaign-only ledger. No foreign key: rows are written only for emails read in the same
-- transaction, and the check would cost a probe per row on the dispatcher's hot path.
CREATE TABLE email_counts (
  team_id integer NOT NULL,
  email_id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('sent', 'delivered', 'opened', 'clicked', 'unsubscribed', 'bounced', 'hard_bounced', 'complained')),
  PRIMARY KEY (team_id, email_id, kind)
);
INSERT INTO email_counts (team_id, email_id, kind) SELECT team_id, email_id, kind FROM campaign_counts;
DROP TABLE campaign_counts;

-- Per team, sending domain and UTC day, what email_counts newly counted: the reputation metrics and
-- the time series read a few rows of it instead of scanning events. domain_id has no foreign key:
-- a deleted domain's history still counts in the team's totals (0: mail that had no domain left).
CREATE TABLE daily_email_counts (
  team_id integer NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  domain_id integer NOT NULL,
  day date NOT NULL,
  sent integer NOT NULL DEFAULT 0,
  delivered integer NOT NULL DEFAULT 0,
  opened integer NOT NULL DEFAULT 0,
  clicked integer NOT NULL DEFAULT 0,
  unsubscribed integer NOT NULL DEFAULT 0,
  bounced integer NOT NULL DEFAULT 0,
  hard_bounced integer NOT NULL DEFAULT 0,
  complained integer NOT NULL DEFAULT 0,
  PRIMARY KEY (team_id, domain_id, day)
);

-- A report applied twice (the same DSN, ARF report, open or click) appends its event once: such
-- events carry a key derived from the report, unique per email.
ALTER TABLE email_events ADD COLUMN dedupe_key text;
CREATE UNIQUE INDEX email_events_dedupe ON email_events (team_id, email_id, dedupe_key) WHERE dedupe_key IS NOT NULL;

-- Why a campaign was paused by the reputation guard; cleared when it is resumed or rescheduled.
ALTER TABLE campaigns ADD COLUMN paused_reason text;

-- The inbound listener accepts feedback-loop mail for any known domain's return-path host.
CREATE INDEX domains_name ON domains (name);
