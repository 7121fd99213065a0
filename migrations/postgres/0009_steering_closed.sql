-- A run's loop closes its steering queue as the run is about to end, in the
-- transaction that takes what still waits: a post after that is refused, so
-- every accepted message is delivered or reported undelivered in
-- run.finished. NULL: the queue is open (or the run ended before 0009; its
-- state refuses posts then).
ALTER TABLE runs ADD COLUMN steering_closed_at BIGINT;
