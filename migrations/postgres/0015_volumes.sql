-- Named persistent volumes: a tenant's directory with a size quota, kept
-- apart from sandboxes (it outlives them). The row is the control plane's;
-- the bytes live in the volume host (a btrfs subvolume with a qgroup limit,
-- crates/sandbox/src/volumes/). Names are unique per tenant.
CREATE TABLE volumes (
    tenant_id   TEXT NOT NULL REFERENCES tenants (id),
    name        TEXT NOT NULL,
    quota_bytes BIGINT NOT NULL CHECK (quota_bytes > 0),
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
