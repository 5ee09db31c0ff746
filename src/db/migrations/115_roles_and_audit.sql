-- People's roles in their team, and the audit log of changes.
--
-- Until now everyone who signed in could do everything: each person there becomes an owner, so
-- nobody loses a right they had. From now on the service names the role of each new person.
ALTER TABLE users ADD COLUMN role text NOT NULL DEFAULT 'owner' CHECK (role IN ('owner', 'admin', 'member', 'viewer'));
ALTER TABLE users ALTER COLUMN role DROP DEFAULT;

-- One row per change made through the API, the dashboard or the CLI, written in the change's own
-- transaction (src/events/audit.ts). Never a secret: who (actor_*), what (action), to what
-- (target_*), from where (ip). Rows older than AUDIT_RETENTION_DAYS are deleted.
CREATE TABLE audit_log (
  team_id integer NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  id text NOT NULL,
  at timestamptz NOT NULL,
  actor_type text NOT NULL CHECK (actor_type IN ('user', 'apiKey', 'cli')),
  actor_id text NOT NULL,
  actor_label text NOT NULL,
  action text NOT NULL,
  target_type text NOT NULL,
  target_id text,
  ip text,
  PRIMARY KEY (team_id, id)
);
-- The log reads newest first (ids sort by time); filters narrow within a team.
CREATE INDEX audit_log_team_at ON audit_log (team_id, at DESC, id DESC);
CREATE INDEX audit_log_expiry ON audit_log (at);
