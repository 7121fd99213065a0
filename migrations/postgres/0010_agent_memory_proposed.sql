-- What an agent writes to project memory is proposed for its own workspace
-- until a person approves it (and only a person widens it to the tenant).
-- Before 0010 the `remember` tool could store active records for every
-- workspace of the tenant; such records (a run wrote them: source_run_id is
-- set; no end-of-run proposal was ever tenant-wide) go back to proposed,
-- scoped to the workspace of the session that wrote them where it still
-- exists, else left tenant-scoped but proposed, for a person to review.
UPDATE memories
SET status = 'proposed',
    scope = 'workspace',
    workspace_id = (
        SELECT s.workspace_id FROM sessions s
        WHERE s.tenant_id = memories.tenant_id AND s.id = memories.source_session_id
    )
WHERE source_run_id IS NOT NULL
  AND scope = 'tenant'
  AND EXISTS (
      SELECT 1 FROM sessions s
      WHERE s.tenant_id = memories.tenant_id AND s.id = memories.source_session_id
  );

UPDATE memories
SET status = 'proposed'
WHERE source_run_id IS NOT NULL AND scope = 'tenant';
