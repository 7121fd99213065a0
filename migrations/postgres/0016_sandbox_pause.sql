-- Paused sandboxes: `POST /v1/sandboxes/{id}/pause` (or idle, with
-- `on_idle = "pause"`) stops a sandbox but keeps what it holds; the row
-- says `paused` and its `pause` column (JSON: mode, the snapshot holding a
-- temporary workspace's files, why, when) is what a restarted server needs
-- to resume it. (SQLite rebuilds the table; Postgres replaces the check,
-- named as Postgres named it when 0001 declared it inline.)
ALTER TABLE sandboxes DROP CONSTRAINT sandboxes_state_check;
ALTER TABLE sandboxes ADD CONSTRAINT sandboxes_state_check
    CHECK (state IN ('running', 'stopped', 'lost', 'paused'));
ALTER TABLE sandboxes ADD COLUMN pause TEXT;
