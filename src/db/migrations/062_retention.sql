-- Retention (src/retention/worker.ts): after RETENTION_DAYS an email keeps its row, events and
-- counts but not what it said, and finished webhook calls go. Each pass walks an index that holds
-- only what may still be due for it, so a run costs what it removes, not the size of the tables.

-- When the email's html, text and attachments were dropped; null while it still has them.
ALTER TABLE emails ADD COLUMN body_dropped_at timestamptz;

-- Emails with nothing left to send that still carry content, by the time retention counts from
-- (their creation, or their scheduled time when that is later). Campaign mail stores no body of its
-- own (it is rendered from the campaign at send time) and scheduled mail has a send time, so a
-- release or a schedule adds nothing here; a row enters when its last attempt is written and
-- leaves when its body is dropped.
CREATE INDEX emails_retention ON emails ((GREATEST(created_at, scheduled_at)))
  WHERE send_at IS NULL AND (html IS NOT NULL OR text IS NOT NULL OR attachments <> '[]'::jsonb);

-- Finished calls by age. Only calls that left PENDING enter, so the outbox's inserts on the sending
-- path pay nothing for it.
CREATE INDEX webhook_calls_finished ON webhook_calls (created_at) WHERE status <> 'PENDING';
