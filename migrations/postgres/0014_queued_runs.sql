-- Queued runs: where the operator asks for queueing (`[runs] when_full =
-- "queue"`), a run that finds its tenant's or the node's slots full is
-- recorded `queued` and starts when a slot frees; one that waits past
-- `runs.max_queue_wait_secs` ends `failed` with end_reason `queue_timeout`.
-- (SQLite rebuilds the table; Postgres replaces the two checks, named as
-- Postgres named them when 0001 and 0002 declared them inline.)
ALTER TABLE runs DROP CONSTRAINT runs_state_check;
ALTER TABLE runs ADD CONSTRAINT runs_state_check CHECK (state IN ('queued', 'preparing',
    'planning', 'acting', 'observing', 'verifying', 'awaiting_user', 'cancelling', 'completed',
    'cancelled', 'failed', 'interrupted'));
ALTER TABLE runs DROP CONSTRAINT runs_end_reason_check;
ALTER TABLE runs ADD CONSTRAINT runs_end_reason_check CHECK (end_reason IN ('completed',
    'budget_exceeded', 'repeated_call', 'awaiting_user', 'cancelled', 'model_error',
    'infrastructure_error', 'interrupted', 'queue_timeout'));
