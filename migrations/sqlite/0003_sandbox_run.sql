-- The agent run that owns a sandbox (NULL for one started through the
-- sandbox API): its lifecycle is the run's, so the API shows the run and
-- refuses to delete or drive the sandbox behind the run's back.
ALTER TABLE sandboxes ADD COLUMN run_id TEXT;
