-- Forks share their parent's history instead of copying it, and sessions can
-- be deleted with the checkpoint files only they use.
--
-- A fork made from now on reads the messages of `forked_from` with
-- seq <= history_upto_seq that were in its history as of the point
-- (history_at_message_seq, history_at_event_seq) (store::visible_messages
-- over the parent's rewinds), followed by its own, which are numbered after
-- the parent's last message at the fork. NULL on every other session,
-- including forks made before this migration, which hold a copy.
ALTER TABLE sessions ADD COLUMN history_upto_seq INTEGER CHECK (history_upto_seq >= 0);
ALTER TABLE sessions ADD COLUMN history_at_message_seq INTEGER
    CHECK (history_at_message_seq >= 0);
ALTER TABLE sessions ADD COLUMN history_at_event_seq INTEGER
    CHECK (history_at_event_seq >= 0);
-- Deleting a session asks which sessions were forked from it.
CREATE INDEX sessions_forked_from ON sessions (tenant_id, forked_from);

-- Checkpoint file blobs are stored per tenant (blobs/tenants/<tenant>/), so
-- the row that keeps one from the blob collection is per tenant too: a
-- tenant's checkpoint that stores a file another tenant stored first gets
-- its own row, and deleting the other tenant's sessions leaves it alone.
-- checkpoint_id is the checkpoint that stored it first, moved to another of
-- the tenant's checkpoints that names it when that one is deleted; NULL once
-- no checkpoint row is known to name it but the row must stay: rows from
-- before this migration (legacy = 1) may be what keeps another tenant's copy.
CREATE TABLE checkpoint_blobs_0013 (
    tenant_id      TEXT NOT NULL,
    blob_hash      TEXT NOT NULL,
    checkpoint_id  TEXT REFERENCES checkpoints (id),
    legacy         INTEGER NOT NULL DEFAULT 0 CHECK (legacy IN (0, 1)),
    PRIMARY KEY (tenant_id, blob_hash)
) STRICT;
INSERT INTO checkpoint_blobs_0013 (tenant_id, blob_hash, checkpoint_id, legacy)
    SELECT c.tenant_id, b.blob_hash, b.checkpoint_id, 1
    FROM checkpoint_blobs b JOIN checkpoints c ON c.id = b.checkpoint_id;
DROP TABLE checkpoint_blobs;
ALTER TABLE checkpoint_blobs_0013 RENAME TO checkpoint_blobs;
-- The blob collection asks by hash alone (a row of any tenant keeps a blob).
CREATE INDEX checkpoint_blobs_hash ON checkpoint_blobs (blob_hash);
CREATE INDEX checkpoint_blobs_checkpoint ON checkpoint_blobs (checkpoint_id);
