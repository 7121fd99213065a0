-- Agent runtime: workspace roots, fork and subagent links on sessions, run settings
-- and results, goals, plans and their tasks, and the message history.
--
-- SQLite cannot add a table constraint to an existing table, so the new reference
-- columns of sessions and runs get a single-column REFERENCES to the target's
-- primary key; the store checks that the target is the same tenant's.
-- New tables use tenant-scoped keys (tenant_id, x) like 0001.

-- A directory registered by `paddock run --workspace DIR`; NULL: the server's default
-- location. NULLs never collide in a unique index, so only set roots are unique.
ALTER TABLE workspaces ADD COLUMN root TEXT;
CREATE UNIQUE INDEX workspaces_root ON workspaces (tenant_id, root);

-- The run of `forked_from` whose end the fork started from (NULL: its latest state).
ALTER TABLE sessions ADD COLUMN forked_at_run_id TEXT REFERENCES runs (id);
-- Set on a subagent's session: the run (in another session) that spawned it.
ALTER TABLE sessions ADD COLUMN parent_run_id TEXT REFERENCES runs (id);
-- Counters bumped in the appender's transaction, like last_event_seq: the next
-- message gets last_message_seq + 1, the next saved plan last_plan_version + 1.
ALTER TABLE sessions ADD COLUMN last_message_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN last_plan_version INTEGER NOT NULL DEFAULT 0;

ALTER TABLE runs ADD COLUMN mode TEXT NOT NULL DEFAULT 'build'
    CHECK (mode IN ('build', 'plan'));
ALTER TABLE runs ADD COLUMN profile TEXT
    CHECK (profile IN ('explore', 'plan', 'review', 'build'));
ALTER TABLE runs ADD COLUMN task_key TEXT;
-- JSON objects; a missing field reads back as its default, so '{}' (what runs
-- created before this migration get) means the default budgets and zero usage.
ALTER TABLE runs ADD COLUMN budgets TEXT NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN usage TEXT NOT NULL DEFAULT '{}';
-- What ended the run; the state only says completed / failed / cancelled / ...
ALTER TABLE runs ADD COLUMN end_reason TEXT
    CHECK (end_reason IN ('completed', 'budget_exceeded', 'repeated_call', 'awaiting_user',
        'cancelled', 'model_error', 'infrastructure_error', 'interrupted'));
ALTER TABLE runs ADD COLUMN review TEXT;  -- JSON, once the run ended with one
-- Deleting the snapshot leaves the run without one (a fork from it restores nothing)
-- rather than refusing the delete.
ALTER TABLE runs ADD COLUMN end_snapshot_id TEXT REFERENCES snapshots (id) ON DELETE SET NULL;
CREATE INDEX runs_parent ON runs (tenant_id, parent_run_id, id);
-- Crash recovery looks for these at every start; terminal runs are the vast majority.
CREATE INDEX runs_unfinished ON runs (id)
    WHERE state NOT IN ('completed', 'cancelled', 'failed', 'interrupted');

CREATE INDEX run_events_run ON run_events (run_id, seq);
-- Blob garbage collection asks whether any row still points at a blob.
CREATE INDEX snapshots_blob ON snapshots (blob_hash);

-- A goal may name a run of another session of the tenant: a fork copies its
-- source's goals, plan and history with their original runs.
CREATE TABLE goals (
    id                  TEXT PRIMARY KEY,
    tenant_id           TEXT NOT NULL,
    session_id          TEXT NOT NULL,
    run_id              TEXT NOT NULL,
    description         TEXT NOT NULL,
    success_criteria    TEXT NOT NULL,   -- JSON array of strings
    status              TEXT NOT NULL CHECK (status IN ('open', 'met', 'not_met', 'unsure')),
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    UNIQUE (tenant_id, id),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id),
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, id)
) STRICT;
CREATE INDEX goals_session ON goals (tenant_id, session_id, id);

-- One row per saved version of a session's plan; `tasks` holds the latest task list.
CREATE TABLE plans (
    tenant_id   TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    version     INTEGER NOT NULL CHECK (version > 0),
    run_id      TEXT NOT NULL,
    explanation TEXT,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, version),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id),
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, id)
) STRICT;

CREATE TABLE tasks (
    tenant_id   TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    task_key    TEXT NOT NULL,   -- the id the model uses
    position    INTEGER NOT NULL CHECK (position >= 0),   -- order in the latest plan
    title       TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('pending', 'in_progress', 'done', 'blocked',
                    'cancelled')),
    run_id      TEXT NOT NULL,   -- the run that last changed it
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, task_key),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id),
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, id)
) STRICT;

-- The conversation history the model sees, in the session's message order.
CREATE TABLE messages (
    tenant_id   TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    seq         INTEGER NOT NULL CHECK (seq > 0),
    run_id      TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content     TEXT NOT NULL,   -- JSON array of content parts
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id),
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, id)
) STRICT;
