-- Automations: a trigger on one contact book and a list of steps (src/audience/automation-steps.ts),
-- walked by each contact that enters, one durable run row per walk.
CREATE TABLE automations (
  team_id integer NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  id text NOT NULL,
  contact_book_id text NOT NULL,
  name text NOT NULL,
  status text NOT NULL CHECK (status IN ('DRAFT', 'ACTIVE', 'PAUSED')),
  trigger_type text NOT NULL CHECK (trigger_type IN ('contact.added', 'event')),
  -- The event's name for an event trigger, null for contact.added.
  trigger_event text,
  allow_reentry boolean NOT NULL DEFAULT false,
  steps jsonb NOT NULL,
  -- The templates its send steps use: a template in use cannot be deleted.
  template_ids text[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (team_id, id),
  FOREIGN KEY (team_id, contact_book_id) REFERENCES contact_books (team_id, id) ON DELETE CASCADE
);
CREATE INDEX automations_trigger ON automations (team_id, contact_book_id, trigger_type) WHERE status <> 'DRAFT';
CREATE INDEX automations_templates ON automations USING gin (template_ids);

-- One row per contact walking an automation: the step it is at and when that step is due. A wait
-- is a due time here, never a timer in memory. A deleted contact's runs go with it.
CREATE TABLE automation_runs (
  team_id integer NOT NULL,
  id text NOT NULL,
  automation_id text NOT NULL,
  contact_book_id text NOT NULL,
  contact_id text NOT NULL,
  -- The contact's id while the run is active, or for good when the automation takes no reentry;
  -- the run's own id once it ended and the contact may enter again. Unique per automation.
  entry_key text NOT NULL,
  status text NOT NULL CHECK (status IN ('ACTIVE', 'COMPLETED', 'EXITED')),
  step_id text,
  -- When its step is due; at a wait step it sits out (waiting), when the wait ends.
  next_at timestamptz,
  waiting boolean NOT NULL DEFAULT false,
  -- The properties of the event that started it (template variables of its send steps).
  properties jsonb NOT NULL DEFAULT '{}',
  -- What it did, oldest first: [{ stepId, type, at, outcome?, emailId? }].
  history jsonb NOT NULL DEFAULT '[]',
  exit_reason text,
  started_at timestamptz NOT NULL,
  ended_at timestamptz,
  PRIMARY KEY (team_id, id),
  FOREIGN KEY (team_id, automation_id) REFERENCES automations (team_id, id) ON DELETE CASCADE,
  FOREIGN KEY (team_id, contact_book_id, contact_id) REFERENCES contacts (team_id, contact_book_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX automation_runs_entry ON automation_runs (team_id, automation_id, entry_key);
CREATE INDEX automation_runs_due ON automation_runs (next_at) WHERE status = 'ACTIVE';
CREATE INDEX automation_runs_contact ON automation_runs (team_id, contact_book_id, contact_id);
CREATE INDEX automation_runs_listing ON automation_runs (team_id, automation_id, started_at DESC, id DESC);

-- Per step: runs that went past it, and ended at it. Those at it now are counted live; those that
-- came to it are the three together.
CREATE TABLE automation_step_counts (
  team_id integer NOT NULL,
  automation_id text NOT NULL,
  step_id text NOT NULL,
  completed bigint NOT NULL DEFAULT 0,
  exited bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (team_id, automation_id, step_id),
  FOREIGN KEY (team_id, automation_id) REFERENCES automations (team_id, id) ON DELETE CASCADE
);

-- An automation's mail names the run and the step that sent it: one email per run and step, so a
-- step retried after a crash can never make a second.
ALTER TABLE emails ADD COLUMN automation_run_id text, ADD COLUMN automation_step_id text;
CREATE UNIQUE INDEX emails_automation_step ON emails (team_id, automation_run_id, automation_step_id) WHERE automation_run_id IS NOT NULL;
