-- Control plane: tenants, workspaces, sandboxes, sessions, leases, runs, run events,
-- tool invocations and snapshots. Append-only: change the schema with a new file.
--
-- Times are milliseconds since the Unix epoch. Every tenant-owned table is UNIQUE on
-- (tenant_id, id) and refers to other rows by (tenant_id, their id), so the database
-- itself refuses a row that points into another tenant.

CREATE TABLE tenants (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    created_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE workspaces (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id),
    name        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    UNIQUE (tenant_id, id)
) STRICT;

CREATE TABLE sandboxes (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants (id),
    workspace_id    TEXT,
    backend         TEXT NOT NULL,
    node            TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('running', 'stopped', 'lost')),
    spec            TEXT NOT NULL,
    pid             INTEGER CHECK (pid > 0),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    last_active_at  INTEGER NOT NULL,
    expires_at      INTEGER,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, workspace_id) REFERENCES workspaces (tenant_id, id)
) STRICT;
CREATE INDEX sandboxes_node_state ON sandboxes (node, state);
CREATE INDEX sandboxes_tenant_state ON sandboxes (tenant_id, state, id);

CREATE TABLE sessions (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants (id),
    workspace_id    TEXT NOT NULL,
    title           TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('active', 'archived')),
    forked_from     TEXT,
    -- sequence number of the session's last event; appenders bump it in their transaction
    last_event_seq  INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, workspace_id) REFERENCES workspaces (tenant_id, id),
    FOREIGN KEY (tenant_id, forked_from) REFERENCES sessions (tenant_id, id)
) STRICT;
CREATE INDEX sessions_workspace ON sessions (tenant_id, workspace_id, id);

-- One row per resource ever leased; the row (and so its token) outlives release.
CREATE TABLE leases (
    resource    TEXT PRIMARY KEY,
    owner       TEXT,                -- NULL once released
    token       INTEGER NOT NULL CHECK (token > 0),
    expires_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE runs (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL,
    session_id      TEXT NOT NULL,
    parent_run_id   TEXT,
    state           TEXT NOT NULL CHECK (state IN ('preparing', 'planning', 'acting',
                        'observing', 'verifying', 'awaiting_user', 'cancelling', 'completed',
                        'cancelled', 'failed', 'interrupted')),
    goal            TEXT NOT NULL,
    error           TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    finished_at     INTEGER,
    UNIQUE (tenant_id, id),
    UNIQUE (session_id, id),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id),
    FOREIGN KEY (tenant_id, parent_run_id) REFERENCES runs (tenant_id, id)
) STRICT;
CREATE INDEX runs_session ON runs (tenant_id, session_id, id);

CREATE TABLE run_events (
    tenant_id   TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    seq         INTEGER NOT NULL CHECK (seq > 0),
    run_id      TEXT,
    kind        TEXT NOT NULL,
    payload     TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id),
    FOREIGN KEY (session_id, run_id) REFERENCES runs (session_id, id)
) STRICT;

CREATE TABLE tool_invocations (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    tool        TEXT NOT NULL,
    input       TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
    output      TEXT,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id),
    FOREIGN KEY (session_id, run_id) REFERENCES runs (session_id, id)
) STRICT;
CREATE INDEX tool_invocations_run ON tool_invocations (tenant_id, run_id, id);

CREATE TABLE snapshots (
    id                  TEXT PRIMARY KEY,
    tenant_id           TEXT NOT NULL REFERENCES tenants (id),
    workspace_id        TEXT,
    source_sandbox_id   TEXT,
    session_id          TEXT,
    parent_id           TEXT,
    file_count          INTEGER NOT NULL CHECK (file_count >= 0),
    bytes_raw           INTEGER NOT NULL CHECK (bytes_raw >= 0),
    bytes_compressed    INTEGER NOT NULL CHECK (bytes_compressed >= 0),
    excludes            TEXT NOT NULL,   -- JSON array of path patterns
    blob_hash           TEXT NOT NULL,
    created_at          INTEGER NOT NULL,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, workspace_id) REFERENCES workspaces (tenant_id, id),
    FOREIGN KEY (tenant_id, source_sandbox_id) REFERENCES sandboxes (tenant_id, id),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id),
    FOREIGN KEY (tenant_id, parent_id) REFERENCES snapshots (tenant_id, id)
) STRICT;
CREATE INDEX snapshots_workspace ON snapshots (tenant_id, workspace_id, id);
CREATE INDEX snapshots_session ON snapshots (tenant_id, session_id, id);
CREATE INDEX snapshots_parent ON snapshots (tenant_id, parent_id);
