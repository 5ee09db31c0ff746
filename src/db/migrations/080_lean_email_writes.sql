-- Accepting an email writes one row and its index entries, nothing besides.

-- The schedule an email was accepted with. Its first event (SCHEDULED with this time, or QUEUED
-- when null) is read off the row, as a campaign email's QUEUED is (see listEvents), rather than
-- stored; scheduled_at cannot stand in, since a reschedule moves it.
ALTER TABLE emails ADD COLUMN first_scheduled_at timestamptz;

UPDATE emails e SET first_scheduled_at = (ev.data->>'scheduledAt')::timestamptz
FROM email_events ev
WHERE e.campaign_id IS NULL AND ev.team_id = e.team_id AND ev.email_id = e.id AND ev.status = 'SCHEDULED'
  AND ev.seq = (SELECT min(seq) FROM email_events f WHERE f.team_id = e.team_id AND f.email_id = e.id);

DELETE FROM email_events ev USING emails e
WHERE e.campaign_id IS NULL AND ev.team_id = e.team_id AND ev.email_id = e.id AND ev.status IN ('SCHEDULED', 'QUEUED')
  AND ev.seq = (SELECT min(seq) FROM email_events f WHERE f.team_id = e.team_id AND f.email_id = e.id);

-- No foreign key from events to emails: it cost a probe of the emails primary key per event
-- written. Emails are never deleted (retention drops their content, not their rows), and every
-- event is written by a statement that reads or writes its email's row in the same snapshot.
ALTER TABLE email_events DROP CONSTRAINT email_events_team_id_email_id_fkey;

-- Email ids are unique across teams, so one index on id keys the table; a lookup by team and id
-- probes it and checks the team. The (team_id, id) key it replaces was a second entry per row.
ALTER TABLE emails DROP CONSTRAINT emails_pkey;
ALTER TABLE emails ADD CONSTRAINT emails_pkey PRIMARY KEY USING INDEX emails_id;
