-- Read-only snapshots of named volumes (POST /v1/volumes/{name}/snapshots).
-- The row is the control plane's; the bytes are a read-only btrfs snapshot
-- of the volume's subvolume in the volume pool (crates/sandbox/src/volumes/).
-- Names are unique per volume. A volume with snapshots is not deleted: its
-- snapshots are deleted first (the service says so; the key holds it).
CREATE TABLE volume_snapshots (
    tenant_id  TEXT NOT NULL,
    volume     TEXT NOT NULL,
    name       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, volume, name),
    FOREIGN KEY (tenant_id, volume) REFERENCES volumes (tenant_id, name)
);
