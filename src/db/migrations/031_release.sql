-- Campaign release at tens of thousands of recipients a second: a released recipient costs its
-- email row and that row's index entries, and nothing per row besides.

-- A campaign email's first event, QUEUED at its creation, is implied by the row (listEvents shows
-- it) rather than stored: the release writes one row per recipient, not two. Those stored before
-- go, so none is shown twice.
DELETE FROM email_events ev USING emails e
WHERE ev.team_id = e.team_id AND ev.email_id = e.id AND e.campaign_id IS NOT NULL AND ev.status = 'QUEUED';
