-- Checkpoints: a session's workspace as a manifest of content-addressed file
-- blobs, with where its history, events and plan stood; and the rewinds that
-- took a session's history back to one.

CREATE TABLE checkpoints (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    run_id         TEXT NOT NULL,
    workspace_id   TEXT NOT NULL,
    reason         TEXT NOT NULL CHECK (reason IN ('run_start', 'tool_batch', 'rewind')),
    message_seq    INTEGER NOT NULL CHECK (message_seq >= 0),
    event_seq      INTEGER NOT NULL CHECK (event_seq >= 0),
    plan_version   INTEGER NOT NULL CHECK (plan_version >= 0),
    manifest_hash  TEXT NOT NULL,
    file_count     INTEGER NOT NULL CHECK (file_count >= 0),
    bytes          INTEGER NOT NULL CHECK (bytes >= 0),
    new_blobs      INTEGER NOT NULL CHECK (new_blobs >= 0),
    new_bytes      INTEGER NOT NULL CHECK (new_bytes >= 0),
    created_at     INTEGER NOT NULL,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id),
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, id),
    FOREIGN KEY (tenant_id, workspace_id) REFERENCES workspaces (tenant_id, id)
) STRICT;
CREATE INDEX checkpoints_session ON checkpoints (tenant_id, session_id, id);
CREATE INDEX checkpoints_manifest ON checkpoints (manifest_hash);

-- Every file blob some checkpoint stored first: the blob collection keeps
-- what is named here (a later checkpoint reusing a blob adds no row).
CREATE TABLE checkpoint_blobs (
    blob_hash      TEXT PRIMARY KEY,
    checkpoint_id  TEXT NOT NULL REFERENCES checkpoints (id)
) STRICT;

CREATE TABLE rewinds (
    tenant_id      TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    run_id         TEXT NOT NULL,
    checkpoint_id  TEXT NOT NULL,
    to_seq         INTEGER NOT NULL CHECK (to_seq >= 0),
    through_seq    INTEGER NOT NULL CHECK (through_seq >= 0),
    created_at     INTEGER NOT NULL,
    PRIMARY KEY (session_id, through_seq, run_id),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id),
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, id),
    FOREIGN KEY (tenant_id, checkpoint_id) REFERENCES checkpoints (tenant_id, id)
) STRICT;
