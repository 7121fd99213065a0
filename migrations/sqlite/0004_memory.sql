-- Long-horizon runs: compactions of a session's history, the session's own
-- memory, and project memory records with full-text search.

-- One compaction: the messages up to through_seq are replaced by summary in
-- the context a model sees (the messages themselves stay).
CREATE TABLE compactions (
    tenant_id         TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    seq               INTEGER NOT NULL CHECK (seq > 0),
    run_id            TEXT NOT NULL,
    through_seq       INTEGER NOT NULL CHECK (through_seq >= 0),
    replaced_messages INTEGER NOT NULL CHECK (replaced_messages >= 0),
    summary           TEXT NOT NULL,
    fallback          INTEGER NOT NULL CHECK (fallback IN (0, 1)),
    tokens_before     INTEGER NOT NULL,
    tokens_after      INTEGER NOT NULL,
    created_at        INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id),
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, id)
) STRICT;

-- What a session knows about itself (summary, open questions, next steps,
-- workspace facts), replaced as a whole by each update.
CREATE TABLE session_memories (
    tenant_id   TEXT NOT NULL,
    session_id  TEXT NOT NULL PRIMARY KEY,
    run_id      TEXT NOT NULL,
    memory      TEXT NOT NULL,   -- JSON SessionMemory
    updated_at  INTEGER NOT NULL,
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id),
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, id)
) STRICT;

-- Project memory. No key on workspace, run or session: a record outlives them.
CREATE TABLE memories (
    id                TEXT PRIMARY KEY,
    tenant_id         TEXT NOT NULL REFERENCES tenants (id),
    scope             TEXT NOT NULL CHECK (scope IN ('tenant', 'workspace', 'project')),
    workspace_id      TEXT,
    project           TEXT,
    kind              TEXT NOT NULL
                      CHECK (kind IN ('preference', 'convention', 'pitfall', 'fact', 'rule')),
    text              TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('active', 'proposed')),
    source_run_id     TEXT,
    source_session_id TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    superseded_by     TEXT,
    CHECK ((scope = 'workspace') = (workspace_id IS NOT NULL)),
    CHECK ((scope = 'project') = (project IS NOT NULL))
) STRICT;

CREATE INDEX memories_by_tenant ON memories (tenant_id, updated_at);

-- The full-text index over memories.text (external content: the text is
-- stored once), kept in step by the triggers below.
CREATE VIRTUAL TABLE memories_fts USING fts5(
    text,
    content = 'memories',
    content_rowid = 'rowid',
    tokenize = 'porter unicode61'
);

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, text) VALUES (new.rowid, new.text);
END;

CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;

CREATE TRIGGER memories_fts_update AFTER UPDATE OF text ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    INSERT INTO memories_fts (rowid, text) VALUES (new.rowid, new.text);
END;
