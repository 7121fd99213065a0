-- A resumed run names the interrupted run it continues (a new run in the
-- same session; the old one stays interrupted).
ALTER TABLE runs ADD COLUMN resumed_from TEXT,
    ADD FOREIGN KEY (tenant_id, resumed_from) REFERENCES runs (tenant_id, id);
