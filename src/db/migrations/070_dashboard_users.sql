-- The people of a team who use the dashboard (src/dashboard/), and their sessions.
--
-- A person is invited by an operator (CLI `user invite`) and chooses a password through the
-- invite link. Only hashes are kept: the password's (scrypt, with its parameters, so they can be
-- raised later), the invite token's and the session token's (SHA-256: both carry 256 random bits).

CREATE TABLE users (
  id text PRIMARY KEY,
  team_id integer NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  email text NOT NULL,
  password_hash text,
  invite_token_hash text UNIQUE,
  invite_expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- Sign-in is by address alone, so an address names one person across all teams.
CREATE UNIQUE INDEX users_email ON users (lower(email));
CREATE INDEX users_team ON users (team_id, created_at);

CREATE TABLE sessions (
  token_hash text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expiry ON sessions (expires_at);
