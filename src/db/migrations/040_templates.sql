-- Reusable email content: a subject and bodies with {{name}} placeholders, rendered when an email
-- that names the template is accepted (the email keeps what was rendered, and which template).
CREATE TABLE templates (
  team_id integer NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  id text NOT NULL,
  name text NOT NULL,
  subject text NOT NULL,
  html text,
  text text,
  content text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (team_id, id)
);
CREATE INDEX templates_team_created ON templates (team_id, created_at DESC, id DESC);

ALTER TABLE emails ADD COLUMN template_id text;
