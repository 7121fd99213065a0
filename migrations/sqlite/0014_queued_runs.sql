-- Queued runs: where the operator asks for queueing (`[runs] when_full =
-- "queue"`), a run that finds its tenant's or the node's slots full is
-- recorded `queued` and starts when a slot frees; one that waits past
-- `runs.max_queue_wait_secs` ends `failed` with end_reason `queue_timeout`.
--
-- SQLite cannot change a CHECK in place, so the runs table is rebuilt. The
-- migration runs in one transaction, where `PRAGMA foreign_keys = OFF` does
-- nothing: the rows referring to runs (events, goals, messages, sessions'
-- forks, ...) are kept whole by deferring the foreign keys to the commit,
-- dropping the old table (which counts each such row as a violation),
-- creating the new one under the same name and copying the rows back into
-- it (each inserted run fixes the rows that refer to it): the commit finds
-- no violation left, or fails and changes nothing.
PRAGMA defer_foreign_keys = ON;

CREATE TABLE runs_0014_copy AS SELECT * FROM runs;
DROP TABLE runs;
CREATE TABLE runs (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL,
    session_id      TEXT NOT NULL,
    parent_run_id   TEXT,
    state           TEXT NOT NULL CHECK (state IN ('queued', 'preparing', 'planning', 'acting',
                        'observing', 'verifying', 'awaiting_user', 'cancelling', 'completed',
                        'cancelled', 'failed', 'interrupted')),
    goal            TEXT NOT NULL,
    error           TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    finished_at     INTEGER,
    mode            TEXT NOT NULL DEFAULT 'build' CHECK (mode IN ('build', 'plan')),
    profile         TEXT CHECK (profile IN ('explore', 'plan', 'review', 'build')),
    task_key        TEXT,
    budgets         TEXT NOT NULL DEFAULT '{}',
    usage           TEXT NOT NULL DEFAULT '{}',
    end_reason      TEXT CHECK (end_reason IN ('completed', 'budget_exceeded', 'repeated_call',
                        'awaiting_user', 'cancelled', 'model_error', 'infrastructure_error',
                        'interrupted', 'queue_timeout')),
    review          TEXT,
    end_snapshot_id TEXT REFERENCES snapshots (id) ON DELETE SET NULL,
    resumed_from    TEXT REFERENCES runs (id),
    steering_closed_at INTEGER,
    UNIQUE (tenant_id, id),
    UNIQUE (session_id, id),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id),
    FOREIGN KEY (tenant_id, parent_run_id) REFERENCES runs (tenant_id, id)
) STRICT;
INSERT INTO runs (id, tenant_id, session_id, parent_run_id, state, goal, error, created_at,
        updated_at, finished_at, mode, profile, task_key, budgets, usage, end_reason, review,
        end_snapshot_id, resumed_from, steering_closed_at)
    SELECT id, tenant_id, session_id, parent_run_id, state, goal, error, created_at,
        updated_at, finished_at, mode, profile, task_key, budgets, usage, end_reason, review,
        end_snapshot_id, resumed_from, steering_closed_at
    FROM runs_0014_copy ORDER BY created_at, id;
DROP TABLE runs_0014_copy;
CREATE INDEX runs_session ON runs (tenant_id, session_id, id);
CREATE INDEX runs_parent ON runs (tenant_id, parent_run_id, id);
-- Crash recovery looks for these at every start (queued runs among them:
-- they stay queued); terminal runs are the vast majority.
CREATE INDEX runs_unfinished ON runs (id)
    WHERE state NOT IN ('completed', 'cancelled', 'failed', 'interrupted');
