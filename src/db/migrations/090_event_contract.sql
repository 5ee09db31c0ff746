-- The events module (src/events) builds every call's payload when its event happens, and writes
-- the calls of campaign and domain changes itself: the triggers that wrote those, and their
-- functions, go.
DROP TRIGGER campaigns_created_webhook ON campaigns;
DROP TRIGGER campaigns_status_webhook ON campaigns;
DROP TRIGGER domains_created_webhook ON domains;
DROP TRIGGER domains_deleted_webhook ON domains;
DROP TRIGGER domains_changed_webhook ON domains;
DROP FUNCTION webhook_campaign_status();
DROP FUNCTION webhook_domain_change();
DROP FUNCTION webhook_domain_data(domains);
DROP FUNCTION webhook_event(integer, text, text, jsonb);
DROP FUNCTION webhook_iso(timestamptz);

-- A call of an email event kept only the event's details, and its payload was built from the email
-- each time the call was read. Each call now holds its payload whole: built here once, from the
-- email as it is now, the best that can be known of it as it was.
UPDATE webhook_calls c SET data = jsonb_strip_nulls(jsonb_build_object(
    'id', e.id, 'status', upper(substr(c.type, 7)), 'from', e.from_address, 'to', e.to_addresses,
    'subject', e.subject, 'occurredAt', to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'campaignId', e.campaign_id, 'contactId', e.contact_id, 'domainId', e.domain_id, 'templateId', e.template_id
  )) || CASE c.type
    WHEN 'email.bounced' THEN jsonb_build_object('bounce', jsonb_build_object(
      'type', COALESCE(c.data->>'bounceType', 'Undetermined'),
      'subType', COALESCE(c.data->>'bounceSubType', CASE WHEN c.data->>'bounceType' = 'Permanent' THEN 'General' ELSE 'Undetermined' END),
      'message', COALESCE(c.data->>'diagnostic', c.data->>'response'),
      'status', COALESCE(c.data->>'status', c.data->>'code'),
      'remoteMta', c.data->>'remoteMta',
      'recipients', COALESCE(c.data->'recipients', CASE WHEN c.data ? 'recipient' THEN jsonb_build_array(c.data->>'recipient') ELSE '[]'::jsonb END)))
    WHEN 'email.complained' THEN jsonb_build_object('complaint', jsonb_build_object(
      'feedbackType', c.data->>'feedbackType', 'recipients', COALESCE(c.data->'recipients', '[]'::jsonb),
      'userAgent', c.data->>'userAgent', 'arrivalDate', c.data->>'arrivalDate'))
    WHEN 'email.opened' THEN jsonb_build_object('open', jsonb_build_object(
      'timestamp', to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'userAgent', c.data->>'userAgent', 'ip', c.data->>'ip'))
    WHEN 'email.clicked' THEN jsonb_build_object('click', jsonb_build_object(
      'timestamp', to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'url', COALESCE(c.data->>'url', ''),
      'userAgent', c.data->>'userAgent', 'ip', c.data->>'ip'))
    WHEN 'email.failed' THEN jsonb_build_object('failed', jsonb_build_object('reason', c.data->>'reason'))
    WHEN 'email.delivery_delayed' THEN jsonb_build_object('delay', jsonb_build_object(
      'message', COALESCE(c.data->>'diagnostic', c.data->>'response'), 'nextAttemptAt', c.data->>'nextAttemptAt'))
    ELSE '{}'::jsonb END
FROM emails e
WHERE c.type LIKE 'email.%' AND e.team_id = c.team_id AND e.id = c.subject_key;
