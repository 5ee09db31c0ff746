-- A call row is written for each email event of a team with webhooks, inside the statement that
-- records the outcome of a send. The foreign key to webhooks made each of those rows run a check
-- (a trigger and a lookup per row) and made a webhook deleted while mail went out fail the
-- statement that recorded its outcome. The webhook's delete removes its calls itself, and a call
-- written for a webhook deleted at that moment is never claimed (the sender reads only the queues
-- of webhooks that exist).
ALTER TABLE webhook_calls DROP CONSTRAINT webhook_calls_team_id_webhook_id_fkey;
