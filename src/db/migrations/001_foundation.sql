-- Every table carries team_id first in its keys: each team's rows stay together, and the schema can
-- be distributed by team later without rewriting queries.

CREATE TABLE teams (
  id serial PRIMARY KEY,
  name text NOT NULL,
  rate_limit_per_second integer CHECK (rate_limit_per_second > 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE domains (
  id serial PRIMARY KEY,
  team_id integer NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  name text NOT NULL,
  region text NOT NULL,
  status text NOT NULL DEFAULT 'NOT_STARTED'
    CHECK (status IN ('NOT_STARTED', 'PENDING', 'SUCCESS', 'FAILED', 'TEMPORARY_FAILURE')),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (team_id, name)
);

-- Only a hash of each token is kept; the token itself is shown once, at creation.
CREATE TABLE api_keys (
  id text PRIMARY KEY,
  team_id integer NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  name text,
  token_hash text NOT NULL UNIQUE,
  token_hint text NOT NULL,
  permission text NOT NULL CHECK (permission IN ('full', 'sending')),
  domain_id integer REFERENCES domains (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
CREATE INDEX api_keys_team ON api_keys (team_id, created_at);

CREATE TABLE contact_books (
  team_id integer NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  id text NOT NULL,
  name text NOT NULL,
  emoji text NOT NULL,
  properties jsonb NOT NULL DEFAULT '{}',
  variables jsonb NOT NULL DEFAULT '[]',
  double_opt_in_enabled boolean NOT NULL DEFAULT false,
  double_opt_in_from text,
  double_opt_in_subject text,
  double_opt_in_content text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (team_id, id)
);
CREATE UNIQUE INDEX contact_books_id ON contact_books (id);

CREATE TABLE contacts (
  team_id integer NOT NULL,
  contact_book_id text NOT NULL,
  id text NOT NULL,
  email text NOT NULL,
  first_name text,
  last_name text,
  properties jsonb NOT NULL DEFAULT '{}',
  subscribed boolean NOT NULL DEFAULT true,
  unsubscribe_reason text CHECK (unsubscribe_reason IN ('UNSUBSCRIBED', 'BOUNCED', 'COMPLAINED')),
  -- Set while a double opt-in contact has not confirmed yet.
  pending_confirmation boolean NOT NULL DEFAULT false,
  confirmation_sent_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- No foreign key to contact_books: checking it costs a third of a bulk insert. Every contact
  -- write holds a lock on its book row, and deleting a book deletes its contacts in the same
  -- transaction, which keeps the two consistent.
  PRIMARY KEY (team_id, contact_book_id, id)
);
-- Addresses are unique per book whatever their case; upserts conflict on this index.
CREATE UNIQUE INDEX contacts_email ON contacts (team_id, contact_book_id, lower(email));
-- Lists page through a book in creation order.
CREATE INDEX contacts_book_order ON contacts (team_id, contact_book_id, created_at, id);
