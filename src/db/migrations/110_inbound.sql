-- Inbound email: routes that claim addresses of a team's domains for the inbound listener, and the
-- mail they took.

CREATE TABLE inbound_routes (
  team_id integer NOT NULL,
  id text NOT NULL,
  -- The address it claims (support@example.com), or every address of a domain (*@in.example.com),
  -- lower-cased; `domain` and `local_part` (null for the wildcard) are its two halves.
  match text NOT NULL,
  domain text NOT NULL,
  local_part text,
  action text NOT NULL CHECK (action IN ('store', 'webhook', 'forward')),
  forward_to jsonb NOT NULL DEFAULT '[]',
  -- The webhooks told of its mail (action webhook); null: every webhook of the team that takes email.received.
  webhook_ids jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (team_id, id)
);
-- One route per address across every team; the listener finds a recipient's route through it,
-- the exact address first, then its domain's wildcard.
CREATE UNIQUE INDEX inbound_routes_address ON inbound_routes (domain, (coalesce(local_part, '*')));
CREATE INDEX inbound_routes_team ON inbound_routes (team_id, created_at DESC, id DESC);

CREATE TABLE inbound_emails (
  team_id integer NOT NULL,
  id text NOT NULL,
  -- The route that took it; null once that route is deleted.
  route_id text,
  -- The envelope: who the client said it was from, the recipients the route claimed, and the client.
  mail_from text NOT NULL,
  rcpt_to jsonb NOT NULL,
  client_address text,
  helo text,
  from_address text,
  to_addresses jsonb NOT NULL DEFAULT '[]',
  cc_addresses jsonb NOT NULL DEFAULT '[]',
  subject text NOT NULL DEFAULT '',
  text text,
  html text,
  -- [{ key, value }] in the message's order.
  headers jsonb NOT NULL DEFAULT '[]',
  message_id text,
  in_reply_to text,
  -- The email of the team it answers, found by its Message-ID.
  in_reply_to_email_id text,
  -- [{ id, filename, contentType, size }]; the bytes are read from the raw message.
  attachments jsonb NOT NULL DEFAULT '[]',
  -- { spf, dkim, dmarc }: each a result and what it was about.
  authentication jsonb NOT NULL,
  size integer NOT NULL,
  -- The message as it arrived, byte for byte; null once retention dropped it with text and html.
  raw bytea,
  received_at timestamptz NOT NULL,
  body_dropped_at timestamptz,
  PRIMARY KEY (team_id, id)
);
-- GET /v1/inbound/emails pages through a team's mail newest first.
CREATE INDEX inbound_emails_team_received ON inbound_emails (team_id, received_at DESC, id DESC);
-- Retention: received mail that still holds its content, by age.
CREATE INDEX inbound_emails_retention ON inbound_emails (received_at) WHERE raw IS NOT NULL;
