//! The guest's own layers inside a container (docker or gVisor): the engine
//! made the namespaces, the root, the mounts, the cgroup and dropped the
//! capabilities; the guest checks what it can see of that, then applies
//! rlimits, no_new_privs, landlock and the same seccomp table as the native
//! jail, and reports what is in force.

use nix::sys::statfs::{TMPFS_MAGIC, statfs};
use nix::sys::statvfs::{FsFlags, statvfs};
use paddock_proto::{
    DowngradeLayer, Enforcement, LayerState, NetworkPolicy, WORKSPACE_MOUNT,
    WorkspaceQuotaEnforcement,
};

use crate::guest::hardening::{self as guest_hardening, GuestLayers};
use crate::process::threads::ensure_single_threaded;
use crate::spec::ContainerSpec;
use crate::{JailError, host::workspace_quota, init::capabilities, validate};

/// Applies the guest's layers in the calling process (single-threaded,
/// checked) and reports every layer. An error means a layer is missing
/// and its downgrade was not allowed: the caller prints it and exits.
pub fn enter_container(spec: &ContainerSpec) -> Result<Enforcement, JailError> {
    let single = ensure_single_threaded()?;
    let writable_paths = validate::scope_rels(&validate::spec(spec)?);
    let allowed = |layer| spec.allowed(layer);
    // A temporary workspace with a quota is the engine's tmpfs (checked
    // below); any other is a bind of a host directory that no tmpfs or
    // project quota holds, so a quota there is refused unless downgraded.
    let mut quota = workspace_quota::plan(
        &spec.policy.limits,
        spec.tier.temporary_workspace,
        spec.policy.read_only,
        !writable_paths.is_empty(),
        spec.workspace_quota.as_ref(),
        allowed,
    )?;

    if spec.tier.namespaces.iter().any(|n| n == "pid") && nix::unistd::getpid().as_raw() != 1 {
        return Err(missing(
            "pid namespace",
            "the guest is not PID 1 of the container",
        ));
    }
    check_read_only_root()?;
    check_tmp(spec.policy.limits.tmp_bytes)?;
    check_volumes(&spec.policy.volumes)?;
    if let Some(asked) = quota.tmpfs.take() {
        let (held, state) = check_workspace_tmpfs(
            &asked,
            spec.policy.limits.workspace_inodes.is_some(),
            allowed(DowngradeLayer::WorkspaceQuota),
        )?;
        quota.tmpfs = Some(held);
        quota.state = state;
    }
    // runc keeps the container in the host's user namespace: its ids are
    // the host's (the backend checked them from the host). gVisor's sentry
    // shows the same identity map inside but runs as its own host user,
    // which the guest cannot see.
    let (uid_map, gid_map) = if spec.tier.engine == "docker" {
        host_ids()?
    } else {
        (None, None)
    };
    if spec.policy.network == NetworkPolicy::None {
        check_loopback_only()?;
    }
    // The engine dropped every capability (cap-drop ALL, a non-root user):
    // the same check as the native jail's, none may be left in any set.
    capabilities::verify()?;
    guest_hardening::harden(
        &single,
        GuestLayers {
            policy: &spec.policy,
            writable_paths,
            cgroup: spec.tier.cgroup.as_ref(),
            no_cgroup: format!(
                "the {} engine gave the container no cgroup limits",
                spec.tier.engine
            ),
            quota,
            uid_map,
            gid_map,
            namespaces: spec.tier.namespaces.clone(),
            vm: None,
            egress_path: spec.policy.network.egress_path().map(str::to_owned),
            secrets: spec.tier.secrets.clone(),
        },
    )
}

fn missing(layer: &'static str, detail: impl Into<String>) -> JailError {
    JailError::EngineLayerMissing {
        layer,
        detail: detail.into(),
    }
}

/// The image root is mounted read-only (ReadonlyRootfs): statvfs says so,
/// or (gVisor, whose statvfs does not report the flag) the mount table does.
fn check_read_only_root() -> Result<(), JailError> {
    let root = statvfs("/").map_err(|e| missing("read_only_root", format!("statvfs /: {e}")))?;
    if root.flags().contains(FsFlags::ST_RDONLY) || root_listed_read_only() {
        Ok(())
    } else {
        Err(missing("read_only_root", "/ is mounted read-write"))
    }
}

/// The last mount of "/" in /proc/self/mounts has the `ro` option.
fn root_listed_read_only() -> bool {
    listed_read_only("/") == Some(true)
}

/// Whether the last mount at `path` in /proc/self/mounts has the `ro`
/// option; None when nothing is mounted there.
fn listed_read_only(path: &str) -> Option<bool> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts
        .lines()
        .rev()
        .find_map(|line| {
            let mut fields = line.split_whitespace();
            let target = fields.nth(1)?;
            let options = fields.nth(1)?;
            (target == path).then_some(options)
        })
        .map(|options| options.split(',').any(|o| o == "ro"))
}

/// Each named volume is a mount of its own at its path (the engine bound
/// it), read-only when the policy says so.
fn check_volumes(volumes: &[paddock_proto::VolumeMount]) -> Result<(), JailError> {
    for volume in volumes {
        let Some(listed_ro) = listed_read_only(&volume.path) else {
            return Err(missing(
                "volumes",
                format!("volume {:?} is not mounted at {}", volume.name, volume.path),
            ));
        };
        let statvfs_ro =
            statvfs(volume.path.as_str()).is_ok_and(|s| s.flags().contains(FsFlags::ST_RDONLY));
        if volume.read_only && !(listed_ro || statvfs_ro) {
            return Err(missing(
                "volumes",
                format!(
                    "volume {:?} at {} is mounted read-write",
                    volume.name, volume.path
                ),
            ));
        }
    }
    Ok(())
}

const PAGE: u64 = 4096;

/// /tmp is a tmpfs no bigger than asked.
fn check_tmp(tmp_bytes: u64) -> Result<(), JailError> {
    let tmp = statfs("/tmp").map_err(|e| missing("tmp", format!("statfs /tmp: {e}")))?;
    if tmp.filesystem_type() != TMPFS_MAGIC {
        return Err(missing("tmp", "/tmp is not a tmpfs"));
    }
    let size = tmp.blocks().saturating_mul(tmp.block_size().unsigned_abs());
    // tmpfs rounds its size up to whole pages.
    let allowed = tmp_bytes.div_ceil(PAGE) * PAGE;
    if size == 0 || size > allowed {
        return Err(missing(
            "tmp",
            format!("/tmp holds {size} bytes, at most {tmp_bytes} were asked"),
        ));
    }
    Ok(())
}

/// /workspace is a tmpfs no bigger than asked, holding at most the inodes
/// asked. gVisor's tmpfs keeps no inode limit (it reports 0 files): that is
/// refused when inodes were asked for explicitly, unless the quota may be
/// downgraded; with only bytes asked the report says 0 inodes (none held).
/// Returns the limits in force and the layer's state.
fn check_workspace_tmpfs(
    asked: &WorkspaceQuotaEnforcement,
    inodes_asked: bool,
    may_downgrade: bool,
) -> Result<(WorkspaceQuotaEnforcement, LayerState), JailError> {
    let layer = "workspace_quota";
    let ws = statfs(WORKSPACE_MOUNT)
        .map_err(|e| missing(layer, format!("statfs {WORKSPACE_MOUNT}: {e}")))?;
    if ws.filesystem_type() != TMPFS_MAGIC {
        return Err(missing(layer, format!("{WORKSPACE_MOUNT} is not a tmpfs")));
    }
    let size = ws.blocks().saturating_mul(ws.block_size().unsigned_abs());
    let allowed = asked.bytes.div_ceil(PAGE) * PAGE;
    if size == 0 || size > allowed {
        return Err(missing(
            layer,
            format!(
                "{WORKSPACE_MOUNT} holds {size} bytes, at most {} were asked",
                asked.bytes
            ),
        ));
    }
    let files = ws.files();
    if files > asked.inodes {
        return Err(missing(
            layer,
            format!(
                "{WORKSPACE_MOUNT} holds {files} inodes, at most {} were asked",
                asked.inodes
            ),
        ));
    }
    let held = WorkspaceQuotaEnforcement {
        mechanism: asked.mechanism.clone(),
        bytes: asked.bytes,
        inodes: files,
    };
    if files == 0 && inodes_asked {
        let reason = format!("the engine's tmpfs at {WORKSPACE_MOUNT} holds no inode limit");
        if !may_downgrade {
            return Err(missing(layer, reason));
        }
        return Ok((held, LayerState::Downgraded { reason }));
    }
    Ok((held, LayerState::Enforced))
}

/// One line of a uid or gid map: (inside, outside, count).
type IdMapLine = (u32, u32, u32);

/// The guest's uid and gid, when this process is in the host's user
/// namespace (the identity map): then they are host ids too.
fn host_ids() -> Result<(Option<IdMapLine>, Option<IdMapLine>), JailError> {
    let identity = |file: &str| {
        std::fs::read_to_string(file)
            .map(|map| map.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"])
            .map_err(|e| missing("user ids", format!("reading {file}: {e}")))
    };
    if !identity("/proc/self/uid_map")? || !identity("/proc/self/gid_map")? {
        return Ok((None, None));
    }
    let uid = nix::unistd::getuid().as_raw();
    let gid = nix::unistd::getgid().as_raw();
    Ok((Some((uid, uid, 1)), Some((gid, gid, 1))))
}

/// With network none the container sees no interface but loopback.
fn check_loopback_only() -> Result<(), JailError> {
    let dev = std::fs::read_to_string("/proc/net/dev")
        .map_err(|e| missing("network", format!("reading /proc/net/dev: {e}")))?;
    let others: Vec<&str> = dev
        .lines()
        .skip(2)
        .filter_map(|line| line.split(':').next())
        .map(str::trim)
        .filter(|name| *name != "lo")
        .collect();
    if others.is_empty() {
        Ok(())
    } else {
        Err(missing(
            "network",
            format!("interfaces besides loopback: {}", others.join(", ")),
        ))
    }
}
