-- Paused sandboxes: `POST /v1/sandboxes/{id}/pause` (or idle, with
-- `on_idle = "pause"`) stops a sandbox but keeps what it holds; the row
-- says `paused` and its `pause` column (JSON: mode, the snapshot holding a
-- temporary workspace's files, why, when) is what a restarted server needs
-- to resume it.
--
-- SQLite cannot change a CHECK in place, so the sandboxes table is rebuilt
-- as 0014 rebuilt runs: foreign keys deferred to the commit (snapshots
-- refer to sandboxes), the old table dropped, the new one created under the
-- same name and the rows copied back.
PRAGMA defer_foreign_keys = ON;

CREATE TABLE sandboxes_0016_copy AS SELECT * FROM sandboxes;
DROP TABLE sandboxes;
CREATE TABLE sandboxes (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL REFERENCES tenants (id),
    workspace_id    TEXT,
    backend         TEXT NOT NULL,
    node            TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('running', 'stopped', 'lost', 'paused')),
    spec            TEXT NOT NULL,
    pid             INTEGER CHECK (pid > 0),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    last_active_at  INTEGER NOT NULL,
    expires_at      INTEGER,
    run_id          TEXT,
    pause           TEXT,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, workspace_id) REFERENCES workspaces (tenant_id, id)
) STRICT;
INSERT INTO sandboxes (id, tenant_id, workspace_id, backend, node, state, spec, pid,
        created_at, updated_at, last_active_at, expires_at, run_id)
    SELECT id, tenant_id, workspace_id, backend, node, state, spec, pid,
        created_at, updated_at, last_active_at, expires_at, run_id
    FROM sandboxes_0016_copy ORDER BY id;
DROP TABLE sandboxes_0016_copy;
CREATE INDEX sandboxes_node_state ON sandboxes (node, state);
CREATE INDEX sandboxes_tenant_state ON sandboxes (tenant_id, state, id);
