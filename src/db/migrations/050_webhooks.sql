-- Outgoing webhooks: a team's endpoints, and the calls owed to them (an outbox written in the same
-- transaction as the change it reports, so a committed change always gets its call and a rolled
-- back one never does).
CREATE TABLE webhooks (
  team_id integer NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  id text NOT NULL,
  url text NOT NULL,
  description text,
  -- Empty: every event type, including those added later.
  events text[] NOT NULL DEFAULT '{}',
  -- Empty: email events of every domain.
  domain_ids integer[] NOT NULL DEFAULT '{}',
  status text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'PAUSED', 'AUTO_DISABLED')),
  -- Sealed with a key derived from SECRET, like DKIM keys: a database dump cannot forge calls.
  secret text NOT NULL,
  -- Calls in a row that failed every attempt; WEBHOOK_AUTO_DISABLE_AFTER of them disable it.
  failed_in_a_row integer NOT NULL DEFAULT 0,
  disabled_reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (team_id, id)
);

CREATE TABLE webhook_calls (
  team_id integer NOT NULL,
  webhook_id text NOT NULL,
  id text NOT NULL,
  -- Orders one subject's calls (an email's events) for one webhook: they go out in this order.
  seq bigint GENERATED ALWAYS AS IDENTITY,
  type text NOT NULL,
  subject_key text,
  data jsonb NOT NULL,
  status text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED', 'DISCARDED')),
  attempt integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  response_status integer,
  response_time_ms integer,
  last_error text,
  claimed_by text,
  lease_until timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (team_id, webhook_id, id),
  FOREIGN KEY (team_id, webhook_id) REFERENCES webhooks (team_id, id) ON DELETE CASCADE
);
-- The sender's claim: each active webhook's pending calls by due time.
CREATE INDEX webhook_calls_due ON webhook_calls (team_id, webhook_id, next_attempt_at) WHERE status = 'PENDING';
-- "Is an earlier call of this subject still pending, and until when?", asked for every call
-- written and every call claimed.
CREATE INDEX webhook_calls_pending_subject ON webhook_calls (team_id, webhook_id, subject_key, seq) WHERE status = 'PENDING';
-- The call log, newest first.
CREATE INDEX webhook_calls_log ON webhook_calls (team_id, webhook_id, seq DESC);

-- The outbox for changes that happen one row at a time wherever they are made (campaign status,
-- domains): a trigger writes their calls in the changing transaction, so no code path can forget
-- one. Email and contact events, which come by the thousand, are written set-based by the
-- statements that make them (see data/webhook-outbox.ts), with the same subscription rule.
CREATE FUNCTION webhook_event(p_team integer, p_type text, p_subject text, p_data jsonb) RETURNS void LANGUAGE sql AS $$
  INSERT INTO webhook_calls (team_id, webhook_id, id, type, subject_key, data, next_attempt_at, created_at, updated_at)
  SELECT p_team, w.id,
    overlay(replace(gen_random_uuid()::text, '-', '') PLACING lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') FROM 1 FOR 12),
    p_type, p_subject, p_data, clock_timestamp(), clock_timestamp(), clock_timestamp()
  FROM webhooks w
  WHERE w.team_id = p_team AND w.status = 'ACTIVE' AND (cardinality(w.events) = 0 OR p_type = ANY(w.events))
$$;

CREATE FUNCTION webhook_iso(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

CREATE FUNCTION webhook_campaign_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM webhook_event(NEW.team_id, 'campaign.status_changed', 'campaign:' || NEW.id, jsonb_build_object(
    'id', NEW.id, 'name', NEW.name, 'status', NEW.status,
    'previousStatus', CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END,
    'domainId', NEW.domain_id, 'contactBookId', NEW.contact_book_id,
    'scheduledAt', webhook_iso(NEW.scheduled_at), 'pausedReason', NEW.paused_reason,
    'total', NEW.total, 'sent', NEW.sent, 'delivered', NEW.delivered,
    'updatedAt', webhook_iso(NEW.updated_at))) ; RETURN NULL ; END $$;
CREATE TRIGGER campaigns_created_webhook AFTER INSERT ON campaigns
  FOR EACH ROW EXECUTE FUNCTION webhook_campaign_status();
CREATE TRIGGER campaigns_status_webhook AFTER UPDATE OF status ON campaigns
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION webhook_campaign_status();

CREATE FUNCTION webhook_domain_data(d domains) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'id', d.id, 'name', d.name, 'status', d.status, 'region', d.region,
    'dkimStatus', d.dkim_status, 'spfStatus', d.spf_status, 'mxStatus', d.mx_status, 'dmarcStatus', d.dmarc_status,
    'clickTracking', d.click_tracking, 'openTracking', d.open_tracking, 'verificationError', d.verification_error,
    'createdAt', webhook_iso(d.created_at), 'updatedAt', webhook_iso(d.updated_at))
$$;

CREATE FUNCTION webhook_domain_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN PERFORM webhook_event(NEW.team_id, 'domain.created', 'domain:' || NEW.id, webhook_domain_data(NEW)) ; END IF ; IF TG_OP = 'DELETE' THEN PERFORM webhook_event(OLD.team_id, 'domain.deleted', 'domain:' || OLD.id, webhook_domain_data(OLD)) ; END IF ; IF TG_OP = 'UPDATE' THEN PERFORM webhook_event(NEW.team_id,
      CASE WHEN NEW.status = 'SUCCESS' AND OLD.status IS DISTINCT FROM 'SUCCESS' THEN 'domain.verified' ELSE 'domain.updated' END,
      'domain:' || NEW.id, webhook_domain_data(NEW)) ; END IF ; RETURN NULL ; END $$;
CREATE TRIGGER domains_created_webhook AFTER INSERT ON domains
  FOR EACH ROW EXECUTE FUNCTION webhook_domain_change();
CREATE TRIGGER domains_deleted_webhook AFTER DELETE ON domains
  FOR EACH ROW EXECUTE FUNCTION webhook_domain_change();
-- A check that finds what the last one found changes nothing a receiver would want to hear of.
CREATE TRIGGER domains_changed_webhook AFTER UPDATE ON domains
  FOR EACH ROW WHEN (
    (OLD.status, OLD.dkim_status, OLD.spf_status, OLD.mx_status, OLD.dmarc_status, OLD.click_tracking, OLD.open_tracking)
      IS DISTINCT FROM (NEW.status, NEW.dkim_status, NEW.spf_status, NEW.mx_status, NEW.dmarc_status, NEW.click_tracking, NEW.open_tracking)
  ) EXECUTE FUNCTION webhook_domain_change();
