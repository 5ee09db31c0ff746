-- Campaign release at tens of thousands of recipients a second: a released recipient costs its
-- email row and that row's index entries, and nothing per row besides.

-- No foreign keys on emails: each costs a probe (and a row lock) per inserted row, a third of a
-- release. Teams are never deleted, and every email takes its team from an authenticated key or
-- from its campaign. Deleting a domain clears domain_id of its mail in the same transaction, as
-- ON DELETE SET NULL did (see deleteDomain), so mail of a deleted domain still fails unsigned.
ALTER TABLE emails DROP CONSTRAINT emails_team_id_fkey;
ALTER TABLE emails DROP CONSTRAINT emails_domain_id_fkey;

-- A campaign email's first event, QUEUED at its creation, is implied by the row (listEvents shows
-- it) rather than stored: the release writes one row per recipient, not two. Those stored before
-- go, so none is shown twice.
DELETE FROM email_events ev USING emails e
WHERE ev.team_id = e.team_id AND ev.email_id = e.id AND e.campaign_id IS NOT NULL AND ev.status = 'QUEUED';
