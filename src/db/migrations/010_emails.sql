-- Emails: the row is the job. The dispatcher claims due rows (send_at set and reached) under a
-- lease, sends them and writes the outcome with its events in one batched transaction.

CREATE TABLE emails (
  team_id integer NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  id text NOT NULL,
  -- The sending domain; mail of a deleted domain fails rather than going out unsigned.
  domain_id integer REFERENCES domains (id) ON DELETE SET NULL,
  from_address text NOT NULL,
  to_addresses jsonb NOT NULL,
  cc_addresses jsonb NOT NULL DEFAULT '[]',
  bcc_addresses jsonb NOT NULL DEFAULT '[]',
  reply_to_addresses jsonb NOT NULL DEFAULT '[]',
  subject text NOT NULL,
  html text,
  -- Given, or derived from html at creation, so every attempt sends the same text part.
  text text,
  headers jsonb NOT NULL DEFAULT '{}',
  -- [{ filename, contentType, content (base64) }]
  attachments jsonb NOT NULL DEFAULT '[]',
  -- Stable across attempts, so a receiver can recognise a message sent twice after a crash.
  message_id text NOT NULL,
  status text NOT NULL CHECK (status IN (
    'SCHEDULED', 'QUEUED', 'SENT', 'DELIVERY_DELAYED', 'DELIVERED', 'BOUNCED', 'COMPLAINED',
    'OPENED', 'CLICKED', 'CANCELLED', 'FAILED', 'REJECTED', 'SUPPRESSED'
  )),
  scheduled_at timestamptz,
  -- When the dispatcher should (next) try; null once nothing is left to send.
  send_at timestamptz,
  attempts integer NOT NULL DEFAULT 0,
  -- A dispatcher's claim: no transaction stays open across SMTP, so the lease keeps others off the
  -- row meanwhile, and an outcome is written only while its claim still holds.
  claimed_by text,
  lease_until timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (team_id, id)
);
-- Email ids are random and unique across teams: the dispatcher and the events join on them.
CREATE UNIQUE INDEX emails_id ON emails (id);
-- The dispatcher's claim: due rows of every team in time order, a small partial index.
CREATE INDEX emails_due ON emails (send_at) WHERE send_at IS NOT NULL;
-- GET /v1/emails pages through a team's mail newest first, optionally for one domain.
CREATE INDEX emails_team_created ON emails (team_id, created_at DESC, id DESC);
CREATE INDEX emails_team_domain_created ON emails (team_id, domain_id, created_at DESC, id DESC);

-- Append-only history: one row per change of an email's state.
CREATE TABLE email_events (
  team_id integer NOT NULL,
  email_id text NOT NULL,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  status text NOT NULL,
  data jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (team_id, email_id, seq),
  FOREIGN KEY (team_id, email_id) REFERENCES emails (team_id, id) ON DELETE CASCADE
);

-- Addresses a team's mail is never sent to. Stored lower-cased, so a lookup is one probe.
CREATE TABLE suppressions (
  team_id integer NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  email text NOT NULL,
  reason text NOT NULL CHECK (reason IN ('HARD_BOUNCE', 'COMPLAINT', 'MANUAL')),
  -- The email whose bounce or complaint put the address here.
  source_email_id text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (team_id, email)
);

-- Idempotency-Key: the first request's body hash and answer, replayed for 24 hours.
CREATE TABLE idempotency_keys (
  team_id integer NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  key text NOT NULL,
  request_hash text NOT NULL,
  response jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (team_id, key)
);
-- Expired keys are deleted by age.
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
