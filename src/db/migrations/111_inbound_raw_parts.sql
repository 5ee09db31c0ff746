-- A received message's raw bytes in parts of at most 1 MiB, written and read a part at a time: a
-- 25 MiB message in one value cost the writer (and the embedded database) several copies of it
-- at once.

CREATE TABLE inbound_email_parts (
  team_id integer NOT NULL,
  email_id text NOT NULL,
  seq integer NOT NULL,
  bytes bytea NOT NULL,
  PRIMARY KEY (team_id, email_id, seq)
);

INSERT INTO inbound_email_parts (team_id, email_id, seq, bytes)
SELECT team_id, id, 0, raw FROM inbound_emails WHERE raw IS NOT NULL;

DROP INDEX inbound_emails_retention;
ALTER TABLE inbound_emails DROP COLUMN raw;
-- Retention: received mail that still holds its content, by age.
CREATE INDEX inbound_emails_retention ON inbound_emails (received_at) WHERE body_dropped_at IS NULL;
