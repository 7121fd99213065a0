-- A resumed run names the interrupted run it continues (a new run in the
-- same session; the old one stays interrupted). The store checks that the
-- run exists in the same tenant when it writes the row.
ALTER TABLE runs ADD COLUMN resumed_from TEXT REFERENCES runs (id);
