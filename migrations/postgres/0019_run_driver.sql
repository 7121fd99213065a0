-- What drives a run's agent: `builtin` (Paddock's own loop; every run
-- before this migration) or an agent CLI run inside the run's sandbox.
ALTER TABLE runs ADD COLUMN driver TEXT NOT NULL DEFAULT 'builtin'
    CHECK (driver IN ('builtin', 'claude-code', 'codex', 'opencode'));
