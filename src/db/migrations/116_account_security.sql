-- Each person's own sign-in security: a second factor (TOTP, RFC 6238) with its recovery codes,
-- and password resets by mailed link (src/people/).
--
-- The TOTP secret must be used in clear again to check a code, so it is sealed with the key
-- derived from SECRET (as webhook signing secrets are), never stored as it is. While
-- totp_enabled_at is null the secret is one being set up, not yet confirmed with a code.
-- totp_last_step is the time step of the last code accepted: a code is good once, so one of that
-- step or an earlier one is refused (steps of 30 s since 1970 fit an integer until the year 4010).
ALTER TABLE users ADD COLUMN totp_secret text;
ALTER TABLE users ADD COLUMN totp_enabled_at timestamptz;
ALTER TABLE users ADD COLUMN totp_last_step integer;

-- Shown once when made; only their SHA-256 is kept (each carries 80 random bits). A code is
-- spent by setting used_at in the statement that checks it is unused.
CREATE TABLE recovery_codes (
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  code_hash text NOT NULL,
  used_at timestamptz,
  PRIMARY KEY (user_id, code_hash)
);

-- A reset link is good once, for an hour. Its token is signed from the row's id when the mail is
-- sent (src/mail/links.ts); the row keeps only its SHA-256. Rows of a person that are spent or
-- expired are deleted when they ask for another, and all of them once one is used.
CREATE TABLE password_resets (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token_hash text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX password_resets_user ON password_resets (user_id);
