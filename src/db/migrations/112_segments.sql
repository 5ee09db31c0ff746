-- Segments: saved filters over one contact book (the filter language is src/audience/segment-filter.ts).
CREATE TABLE segments (
  team_id integer NOT NULL,
  contact_book_id text NOT NULL,
  id text NOT NULL,
  name text NOT NULL,
  filter jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (team_id, id)
);
CREATE INDEX segments_book ON segments (team_id, contact_book_id, created_at);

-- A campaign may go to a segment of its book, read at each batch of its release. A segment in use
-- by a campaign not yet sent cannot be deleted (the service refuses it); a sent one forgets it.
ALTER TABLE campaigns ADD COLUMN segment_id text;

-- Engagement conditions find a contact's mail through its contact id.
CREATE INDEX emails_contact ON emails (team_id, contact_id) WHERE contact_id IS NOT NULL;

-- A property's text as a moment when it is an ISO 8601 date (UTC without a zone), else null: a
-- segment comparing dates never fails on what a contact's property holds.
CREATE FUNCTION mailroom_moment(value text) RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF value IS NULL OR value !~ '^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$' THEN
    RETURN NULL;
  END IF;
  BEGIN
    IF value ~ '[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})$' THEN
      RETURN value::timestamptz;
    END IF;
    RETURN value::timestamp AT TIME ZONE 'UTC';
  EXCEPTION WHEN others THEN
    RETURN NULL;
  END;
END
$$;
