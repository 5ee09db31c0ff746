-- Sender domains: DKIM key, per-record verification state, and the worker's schedule and lease.

ALTER TABLE domains ADD COLUMN subdomain text;
ALTER TABLE domains ADD COLUMN dkim_selector text NOT NULL;
-- PKCS#8 PEM. Read only by the signer; no API response or log ever carries it.
ALTER TABLE domains ADD COLUMN dkim_private_key text NOT NULL;
-- Base64 SubjectPublicKeyInfo: the p= of the DKIM record.
ALTER TABLE domains ADD COLUMN dkim_public_key text NOT NULL;
ALTER TABLE domains ADD COLUMN click_tracking boolean NOT NULL DEFAULT false;
ALTER TABLE domains ADD COLUMN open_tracking boolean NOT NULL DEFAULT false;

-- What the last check found for each record (the domain status values).
ALTER TABLE domains ADD COLUMN dkim_status text NOT NULL DEFAULT 'NOT_STARTED'
  CHECK (dkim_status IN ('NOT_STARTED', 'PENDING', 'SUCCESS', 'FAILED', 'TEMPORARY_FAILURE'));
ALTER TABLE domains ADD COLUMN spf_status text NOT NULL DEFAULT 'NOT_STARTED'
  CHECK (spf_status IN ('NOT_STARTED', 'PENDING', 'SUCCESS', 'FAILED', 'TEMPORARY_FAILURE'));
ALTER TABLE domains ADD COLUMN mx_status text NOT NULL DEFAULT 'NOT_STARTED'
  CHECK (mx_status IN ('NOT_STARTED', 'PENDING', 'SUCCESS', 'FAILED', 'TEMPORARY_FAILURE'));
ALTER TABLE domains ADD COLUMN dmarc_status text NOT NULL DEFAULT 'NOT_STARTED'
  CHECK (dmarc_status IN ('NOT_STARTED', 'PENDING', 'SUCCESS', 'FAILED', 'TEMPORARY_FAILURE'));
ALTER TABLE domains ADD COLUMN is_verifying boolean NOT NULL DEFAULT false;
ALTER TABLE domains ADD COLUMN last_checked_at timestamptz;
ALTER TABLE domains ADD COLUMN verification_error text;
ALTER TABLE domains ADD COLUMN error_message text;

-- The verification window runs from here; missing records after it make the domain FAILED.
ALTER TABLE domains ADD COLUMN verification_started_at timestamptz;
-- When a worker should look next (null: no check planned), and how many checks in a row have
-- not succeeded (the backoff).
ALTER TABLE domains ADD COLUMN next_check_at timestamptz;
ALTER TABLE domains ADD COLUMN check_attempts integer NOT NULL DEFAULT 0;
-- A worker's claim: no transaction stays open across DNS lookups, so the lease keeps other workers
-- off the domain meanwhile, and the token makes a result whose claim was superseded (a new verify,
-- an expired lease) change nothing.
ALTER TABLE domains ADD COLUMN claim_token text;
ALTER TABLE domains ADD COLUMN claimed_until timestamptz;

-- The workers' claim scans due domains of every team in time order.
CREATE INDEX domains_next_check ON domains (next_check_at) WHERE next_check_at IS NOT NULL;
