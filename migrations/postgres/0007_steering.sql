-- Steering: messages a user sent to a run in progress. The loop driving the
-- run (on whichever node holds its session's lease) takes the undelivered
-- ones before each model request and puts them into the run's history.
CREATE TABLE steering_messages (
    id           BIGSERIAL PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    run_id       TEXT NOT NULL,
    text         TEXT NOT NULL CHECK (length(text) > 0),
    created_at   BIGINT NOT NULL,
    delivered_at BIGINT,
    FOREIGN KEY (tenant_id, run_id) REFERENCES runs (tenant_id, id)
);

-- What the loop asks before every model request: only undelivered rows.
CREATE INDEX steering_pending ON steering_messages (run_id, id) WHERE delivered_at IS NULL;
