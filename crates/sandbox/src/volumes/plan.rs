//! The volume pool planned as data: which steps bring the pool from what the
//! host shows to mounted with quotas on, where a volume lives in it, and how
//! the tools' output is read. Applied by `pool.rs` over [`Kernel`](super::kernel::Kernel).

use std::path::{Path, PathBuf};

use paddock_core::ids::{TenantId, WorkspaceId};
use paddock_core::volume::VolumeName;

/// What the host shows of the pool before a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PoolState {
    /// The pool's image file exists (it is only ever renamed into place
    /// once formatted, so existing means formatted).
    pub image_exists: bool,
    /// The pool is mounted at its mount point.
    pub mounted: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PoolStep {
    /// Make a sparse file of the pool's size beside the image, format it
    /// btrfs and rename it into place.
    MakeImage,
    /// Loop-mount the image at the mount point.
    Mount,
    /// Turn quota groups on (a no-op where they are on already). Run once
    /// per process: a crash between the mount and this step must not leave
    /// volumes without a quota.
    EnableQuota,
}

/// The steps that make the pool ready. Never formats an existing image: a
/// pool that exists but does not mount is an error for the operator, not a
/// reason to wipe the volumes.
pub(crate) fn pool_steps(state: PoolState) -> Vec<PoolStep> {
    match (state.image_exists, state.mounted) {
        (_, true) => vec![PoolStep::EnableQuota],
        (true, false) => vec![PoolStep::Mount, PoolStep::EnableQuota],
        (false, false) => vec![PoolStep::MakeImage, PoolStep::Mount, PoolStep::EnableQuota],
    }
}

/// Where a tenant's volume lives under the pool's mount point:
/// `<mount>/<tenant>/<name>`. Both parts are checked names (no `/`, never
/// `.` or `..`), so the path stays under the mount point.
pub(crate) fn volume_dir(mount: &Path, tenant: &TenantId, name: &VolumeName) -> PathBuf {
    mount.join(tenant.as_str()).join(name.as_str())
}

/// Where a tenant's quota-held persistent workspace lives:
/// `<mount>/<tenant>/.workspaces/<id>`. A volume's name never starts with
/// `.`, so no volume is this directory; the id is a checked `ws_<hex>`.
pub(crate) fn workspace_dir(mount: &Path, tenant: &TenantId, id: &WorkspaceId) -> PathBuf {
    mount
        .join(tenant.as_str())
        .join(".workspaces")
        .join(id.as_str())
}

/// Where a snapshot of a tenant's volume lives:
/// `<mount>/<tenant>/.snapshots/<volume>/<snapshot>`, apart from every
/// volume (no volume's name starts with `.`); both names are checked.
pub(crate) fn snapshot_dir(
    mount: &Path,
    tenant: &TenantId,
    volume: &VolumeName,
    snapshot: &VolumeName,
) -> PathBuf {
    mount
        .join(tenant.as_str())
        .join(".snapshots")
        .join(volume.as_str())
        .join(snapshot.as_str())
}

/// Whether `/proc/self/mountinfo` lists a mount at `path` (its fifth field,
/// where the kernel writes space, tab, newline and backslash as octal
/// escapes).
pub(crate) fn mountinfo_has(mountinfo: &str, path: &Path) -> bool {
    let mut escaped = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            ' ' => escaped.push_str("\\040"),
            '\t' => escaped.push_str("\\011"),
            '\n' => escaped.push_str("\\012"),
            '\\' => escaped.push_str("\\134"),
            c => escaped.push(c),
        }
    }
    mountinfo
        .lines()
        .any(|line| line.split(' ').nth(4) == Some(escaped.as_str()))
}

/// The one qgroup row `btrfs qgroup show -rf --raw` printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QgroupRow {
    /// `level/id`, e.g. `0/257`.
    pub id: String,
    pub referenced: u64,
    /// Bytes no other subvolume shares.
    pub exclusive: u64,
    /// The limit on referenced bytes; None where the tool prints `none`.
    pub max_referenced: Option<u64>,
}

/// Reads the qgroup row (the first line starting with a `level/id` id):
/// id, referenced, exclusive, max referenced.
pub(crate) fn parse_qgroup(output: &str) -> Option<QgroupRow> {
    output.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let id = fields.next()?;
        let (level, sub) = id.split_once('/')?;
        level.parse::<u64>().ok()?;
        sub.parse::<u64>().ok()?;
        let referenced = fields.next()?.parse().ok()?;
        let exclusive = fields.next()?.parse().ok()?;
        let max_referenced = fields.next().and_then(|m| m.parse().ok());
        Some(QgroupRow {
            id: id.to_owned(),
            referenced,
            exclusive,
            max_referenced,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_pool_is_made_mounted_and_given_quotas() {
        let fresh = PoolState {
            image_exists: false,
            mounted: false,
        };
        assert_eq!(
            pool_steps(fresh),
            [PoolStep::MakeImage, PoolStep::Mount, PoolStep::EnableQuota]
        );
    }

    #[test]
    fn after_a_restart_the_pool_is_mounted_again_never_formatted() {
        let restarted = PoolState {
            image_exists: true,
            mounted: false,
        };
        assert_eq!(
            pool_steps(restarted),
            [PoolStep::Mount, PoolStep::EnableQuota]
        );
    }

    #[test]
    fn a_mounted_pool_only_has_its_quotas_checked() {
        let mounted = PoolState {
            image_exists: true,
            mounted: true,
        };
        assert_eq!(pool_steps(mounted), [PoolStep::EnableQuota]);
    }

    #[test]
    fn a_volume_lives_under_its_tenant() {
        let tenant = TenantId::parse("acme").unwrap();
        let name = VolumeName::parse("cache").unwrap();
        assert_eq!(
            volume_dir(Path::new("/d/volumes/mnt"), &tenant, &name),
            Path::new("/d/volumes/mnt/acme/cache")
        );
    }

    #[test]
    fn mountinfo_is_matched_on_the_whole_escaped_mount_point() {
        let info = "47 27 0:40 / /var/lib/paddock/volumes/mnt rw,relatime - btrfs /dev/loop0 rw\n\
                    48 27 0:41 / /a\\040b rw - btrfs /dev/loop1 rw\n";
        assert!(mountinfo_has(
            info,
            Path::new("/var/lib/paddock/volumes/mnt")
        ));
        assert!(mountinfo_has(info, Path::new("/a b")));
        assert!(!mountinfo_has(info, Path::new("/var/lib/paddock/volumes")));
        assert!(!mountinfo_has(
            info,
            Path::new("/var/lib/paddock/volumes/mnt/x")
        ));
    }

    #[test]
    fn the_qgroup_row_is_read_with_its_limit() {
        let out = "Qgroupid    Referenced    Exclusive  Max referenced   Path \n\
                   --------    ----------    ---------  --------------   ---- \n\
                   0/256           118784       118784         8388608   v1\n";
        assert_eq!(
            parse_qgroup(out),
            Some(QgroupRow {
                id: "0/256".into(),
                referenced: 118_784,
                exclusive: 118_784,
                max_referenced: Some(8_388_608)
            })
        );
        let unlimited = "0/257  16384  16384  none  t/.workspaces/ws\n";
        assert_eq!(parse_qgroup(unlimited).unwrap().max_referenced, None);
        assert_eq!(parse_qgroup("Qgroupid Referenced\n-------- ---\n"), None);
    }

    #[test]
    fn a_workspace_lives_apart_from_every_volume_name() {
        let tenant = TenantId::parse("acme").unwrap();
        let id = WorkspaceId::generate();
        let dir = workspace_dir(Path::new("/d/volumes/mnt"), &tenant, &id);
        assert_eq!(
            dir,
            Path::new("/d/volumes/mnt/acme/.workspaces").join(id.as_str())
        );
        assert!(VolumeName::parse(".workspaces").is_err());
        let (volume, snap) = (
            VolumeName::parse("cache").unwrap(),
            VolumeName::parse("monday").unwrap(),
        );
        assert_eq!(
            snapshot_dir(Path::new("/m"), &tenant, &volume, &snap),
            Path::new("/m/acme/.snapshots/cache/monday")
        );
    }
}
