//! The volume pool planned as data: which steps bring the pool from what the
//! host shows to mounted with quotas on, where a volume lives in it, and how
//! the tools' output is read. Applied by `pool.rs` over [`Kernel`](super::kernel::Kernel).

use std::path::{Path, PathBuf};

use paddock_core::ids::TenantId;
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

/// The referenced bytes of the one qgroup `btrfs qgroup show -rf --raw`
/// printed (its rows start with a `level/id` qgroup id).
pub(crate) fn parse_referenced(output: &str) -> Option<u64> {
    output.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        let id = fields.next()?;
        let (level, sub) = id.split_once('/')?;
        level.parse::<u64>().ok()?;
        sub.parse::<u64>().ok()?;
        fields.next()?.parse().ok()
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
    fn the_referenced_bytes_are_read_from_the_qgroup_row() {
        let out = "Qgroupid    Referenced    Exclusive  Max referenced   Path \n\
                   --------    ----------    ---------  --------------   ---- \n\
                   0/256           118784       118784         8388608   v1\n";
        assert_eq!(parse_referenced(out), Some(118_784));
        assert_eq!(
            parse_referenced("Qgroupid Referenced\n-------- ---\n"),
            None
        );
    }
}
