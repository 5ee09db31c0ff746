-- When a contact last engaged with its book's campaigns: the moment one of the campaign emails it
-- got was first opened, and a link in one first clicked. Engagement conditions of segments read
-- these from the contact's own row, so counting or releasing a segment probes no other table for
-- each contact. They are kept where events are appended (src/data/engagement.ts); here they are
-- gathered from the events stored before.
ALTER TABLE contacts ADD COLUMN last_opened_at timestamptz, ADD COLUMN last_clicked_at timestamptz;

UPDATE contacts c SET last_opened_at = g.opened, last_clicked_at = g.clicked
FROM (
  SELECT e.team_id, cp.contact_book_id, e.contact_id,
    max(ev.created_at) FILTER (WHERE ev.status = 'OPENED') AS opened,
    max(ev.created_at) FILTER (WHERE ev.status = 'CLICKED') AS clicked
  FROM email_events ev
  JOIN emails e ON e.team_id = ev.team_id AND e.id = ev.email_id
  JOIN campaigns cp ON cp.team_id = e.team_id AND cp.id = e.campaign_id
  WHERE ev.status IN ('OPENED', 'CLICKED') AND e.contact_id IS NOT NULL
  GROUP BY e.team_id, cp.contact_book_id, e.contact_id
) g
WHERE c.team_id = g.team_id AND c.contact_book_id = g.contact_book_id AND c.id = g.contact_id;
