-- Campaigns: one body per campaign, released to its book in set-based batches. A campaign email is
-- an ordinary email row that names its campaign and contact; the dispatcher renders it at send time.

CREATE TABLE campaigns (
  team_id integer NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  id text NOT NULL,
  name text NOT NULL,
  domain_id integer REFERENCES domains (id) ON DELETE SET NULL,
  from_address text NOT NULL,
  subject text NOT NULL,
  preview_text text,
  -- Null once the book is deleted (only a book no SCHEDULED or RUNNING campaign uses can be).
  contact_book_id text,
  -- What is sent: the given html, or the editor JSON `content` rendered to HTML at creation.
  html text NOT NULL,
  content text,
  reply_to_addresses jsonb NOT NULL DEFAULT '[]',
  cc_addresses jsonb NOT NULL DEFAULT '[]',
  bcc_addresses jsonb NOT NULL DEFAULT '[]',
  status text NOT NULL CHECK (status IN ('DRAFT', 'SCHEDULED', 'RUNNING', 'PAUSED', 'SENT')),
  scheduled_at timestamptz,
  batch_size integer NOT NULL CHECK (batch_size BETWEEN 1 AND 100000),
  batch_window_minutes integer NOT NULL CHECK (batch_window_minutes BETWEEN 0 AND 1440),
  -- Set when the first batch goes: the recipients are the book's contacts up to (last_created_at,
  -- last_contact_id) in creation order, and `total` is how many of them could be mailed then.
  started_at timestamptz,
  last_created_at timestamptz,
  last_contact_id text,
  -- The releaser's keyset cursor: the last contact a committed batch went past.
  cursor_created_at timestamptz,
  cursor_contact_id text,
  -- When the releaser should release the next batch; null while nothing is to be released.
  next_release_at timestamptz,
  released_all boolean NOT NULL DEFAULT false,
  total integer NOT NULL DEFAULT 0,
  sent integer NOT NULL DEFAULT 0,
  delivered integer NOT NULL DEFAULT 0,
  opened integer NOT NULL DEFAULT 0,
  clicked integer NOT NULL DEFAULT 0,
  unsubscribed integer NOT NULL DEFAULT 0,
  bounced integer NOT NULL DEFAULT 0,
  hard_bounced integer NOT NULL DEFAULT 0,
  complained integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (team_id, id)
);
-- Campaign ids are random and unique across teams: emails and recipient tokens name them alone.
CREATE UNIQUE INDEX campaigns_id ON campaigns (id);
-- GET /v1/campaigns pages through a team's campaigns newest first.
CREATE INDEX campaigns_team_created ON campaigns (team_id, created_at DESC, id DESC);
-- The releaser's claim: campaigns with a batch due, in time order.
CREATE INDEX campaigns_due ON campaigns (next_release_at) WHERE next_release_at IS NOT NULL;
-- Finishing: running campaigns whose recipients are all released.
CREATE INDEX campaigns_finishing ON campaigns (team_id, id) WHERE status = 'RUNNING' AND released_all;
-- Deleting a book asks which campaigns use it.
CREATE INDEX campaigns_book ON campaigns (team_id, contact_book_id);

ALTER TABLE emails ADD COLUMN campaign_id text;
ALTER TABLE emails ADD COLUMN contact_id text;
-- At most one email per contact and campaign, ever: the release inserts ON CONFLICT DO NOTHING on
-- it. Pause, resume and delete find a campaign's mail through it too.
CREATE UNIQUE INDEX emails_campaign_contact ON emails (team_id, campaign_id, contact_id) WHERE campaign_id IS NOT NULL;
-- Finishing asks whether any of a campaign's mail is still to be sent.
CREATE INDEX emails_campaign_pending ON emails (team_id, campaign_id) WHERE campaign_id IS NOT NULL AND send_at IS NOT NULL;

-- What each campaign counter has counted: one row per email and kind, so a repeated event (or a
-- second unsubscribe click) never counts twice, and the counters can be recounted from here.
CREATE TABLE campaign_counts (
  team_id integer NOT NULL,
  email_id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('sent', 'delivered', 'opened', 'clicked', 'unsubscribed', 'bounced', 'hard_bounced', 'complained')),
  campaign_id text NOT NULL,
  PRIMARY KEY (team_id, email_id, kind)
);

-- A double opt-in confirmation names the book of the contact it asks to confirm; the dispatcher
-- puts the signed link in at send time.
ALTER TABLE emails ADD COLUMN contact_book_id text;
