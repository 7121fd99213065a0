-- The network changes of sandboxes (`PUT /v1/sandboxes/{id}/network`): one
-- row per `network.changed` event, kept after the sandbox stops and across
-- restarts, listed by `seq` (1, 2, ... per sandbox). The policies are the
-- JSON of `NetworkPolicy`, `cut` a JSON array of `host:port`. No foreign
-- key to `sandboxes` (SQLite migrations rebuild that table, as 0016 did);
-- a row is only written for a sandbox the same transaction found.
CREATE TABLE network_changes (
    tenant_id   TEXT NOT NULL REFERENCES tenants (id),
    sandbox_id  TEXT NOT NULL,
    seq         BIGINT NOT NULL CHECK (seq > 0),
    old_network TEXT NOT NULL,
    new_network TEXT NOT NULL,
    changed_by  TEXT NOT NULL,
    cut         TEXT NOT NULL,
    changed_at  BIGINT NOT NULL,
    PRIMARY KEY (sandbox_id, seq)
);
