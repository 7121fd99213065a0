-- Where a rewind happened in the session's events and where its checkpoint
-- stood in them, beside the message positions (through_seq, to_seq): a
-- checkpoint taken at the same message position just before a rewind (the
-- checkpoint a rewind takes of the workspace it overwrites) is then known
-- to come before it, so a rewind to that checkpoint brings back the
-- history as it was (store::visible_messages).
ALTER TABLE rewinds ADD COLUMN to_event_seq INTEGER NOT NULL DEFAULT 0
    CHECK (to_event_seq >= 0);
ALTER TABLE rewinds ADD COLUMN through_event_seq INTEGER NOT NULL DEFAULT 0
    CHECK (through_event_seq >= 0);

-- Rows from before: their checkpoint's event position, and the one of the
-- rewind's own checkpoint of the restored state (taken right after it with
-- no event between); 0 when it has none (such a rewind counts as made
-- before any point, as it did).
UPDATE rewinds SET
    to_event_seq = COALESCE((
        SELECT c.event_seq FROM checkpoints c
        WHERE c.tenant_id = rewinds.tenant_id AND c.id = rewinds.checkpoint_id
    ), 0),
    through_event_seq = COALESCE((
        SELECT MAX(c.event_seq) FROM checkpoints c
        WHERE c.tenant_id = rewinds.tenant_id AND c.run_id = rewinds.run_id
          AND c.reason = 'rewind'
    ), 0);
