-- Steering message ids count per run (1, 2, ... in each run's queue) instead
-- of one sequence over every tenant's messages, so the id a caller is given
-- tells nothing of other runs or tenants. The row key `id` stays for the
-- store alone; `seq` is the id callers see. Rows written before keep their
-- old id as their seq: unique and increasing within their run, as ever, and
-- the ids in past events still name them. A post takes the next seq of its
-- run under the run's row lock; a resumed run takes over its waiting
-- messages with their seq (steering::carry), and it had none of its own.
ALTER TABLE steering_messages ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
UPDATE steering_messages SET seq = id;
CREATE UNIQUE INDEX steering_run_seq ON steering_messages (tenant_id, run_id, seq);
DROP INDEX steering_pending;
CREATE INDEX steering_pending ON steering_messages (run_id, seq) WHERE delivered_at IS NULL;
