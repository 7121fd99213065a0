//! The guest's own layers as PID 1 of a microVM: the VM is the isolation
//! boundary (its own kernel; the host's QEMU shares only the workspace, /usr
//! and the guest binary over virtio-9p), and inside it the guest mounts the
//! workspace and a bounded /tmp, makes the root read-only, becomes the
//! workspace's owner without any capability, then applies rlimits,
//! no_new_privs, landlock and the same seccomp table as the native jail.

use std::path::Path;

use nix::mount::{MsFlags, mount};
use nix::unistd::{Gid, Uid, setgroups, setresgid, setresuid};
use paddock_proto::{Enforcement, VmEnforcement, WORKSPACE_MOUNT, WorkspaceQuotaEnforcement};

use crate::guest::hardening::{self as guest_hardening, GuestLayers};
use crate::process::threads::ensure_single_threaded;
use crate::spec::{MicroVmNetwork, MicroVmSpec, WORKSPACE_TAG};
use crate::{
    JailError, host::workspace_quota, host::writable, init::capabilities, init::net, validate,
};

const NINEP_OPTIONS: &str = "trans=virtio,version=9p2000.L,msize=262144,cache=none";

/// Mounts, drops to the workspace owner and applies the guest's layers in
/// the calling process (single-threaded, checked), reporting every layer.
pub fn enter_microvm(spec: &MicroVmSpec) -> Result<Enforcement, JailError> {
    let single = ensure_single_threaded()?;
    let scope = validate::spec(spec)?;
    let writable_paths = validate::scope_rels(&scope);
    let allowed = |layer| spec.allowed(layer);
    // A host directory's 9p share holds no quota; a temporary workspace
    // under one is a tmpfs in the VM's RAM instead (the memory limit).
    let quota = workspace_quota::plan(
        &spec.policy.limits,
        spec.tier.temporary_workspace,
        spec.policy.read_only,
        !writable_paths.is_empty(),
        spec.workspace_quota.as_ref(),
        allowed,
    )?;
    if nix::unistd::getpid().as_raw() != 1 {
        return Err(JailError::InvalidSpec {
            field: "sandbox_id",
            reason: "the microvm guest must be the VM's init (PID 1)".to_owned(),
        });
    }
    if let Some(ms) = spec.tier.clock_unix_ms {
        crate::sys::set_realtime(ms)
            .map_err(|e| JailError::mount("set the VM's clock", "CLOCK_REALTIME", e))?;
    }
    let workspace_transport = match &quota.tmpfs {
        Some(tmpfs) => {
            mount_workspace_tmpfs(tmpfs, spec.tier.uid, spec.tier.gid)?;
            "tmpfs".to_owned()
        }
        None => {
            mount_workspace(spec.policy.read_only, &scope)?;
            spec.tier.vm.workspace_transport.clone()
        }
    };
    mount_tmp(spec.policy.limits.tmp_bytes)?;
    mount_volumes(&spec.policy.volumes)?;
    mount_devpts()?;
    // The VM's RAM is the memory limit; the pids limit is a cgroup inside.
    if let Some(pids) = spec.policy.limits.pids {
        guest_pids_cgroup(pids)?;
    }
    if let Some(network) = &spec.tier.network {
        write_network_files(network)?;
    }
    // Nothing else in the VM is writable: the initramfs root goes read-only.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
        None::<&str>,
    )
    .map_err(|e| JailError::mount("remount / read-only", "/", e.into()))?;
    // Without network the VM has no network device at all; loopback is
    // its whole network. With it, eth0 (set up by the image's init) leads
    // to the tap in the host's namespace and nowhere else.
    net::loopback_up().map_err(JailError::LoopbackUp)?;
    let kernel = nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    capabilities::drop_all_becoming(spec.tier.uid, spec.tier.gid, |uid, gid| {
        setgroups(&[]).map_err(std::io::Error::from)?;
        setresgid(Gid::from_raw(gid), Gid::from_raw(gid), Gid::from_raw(gid))
            .map_err(std::io::Error::from)?;
        setresuid(Uid::from_raw(uid), Uid::from_raw(uid), Uid::from_raw(uid))
            .map_err(std::io::Error::from)
    })?;
    guest_hardening::harden(
        &single,
        GuestLayers {
            policy: &spec.policy,
            writable_paths,
            cgroup: spec.tier.cgroup.as_ref(),
            no_cgroup: "the host put the VM's QEMU process in no cgroup".to_owned(),
            quota,
            uid_map: None,
            gid_map: None,
            // The VM itself is the boundary; inside it the guest needs none.
            namespaces: Vec::new(),
            vm: Some(VmEnforcement {
                kernel,
                workspace_transport,
                ..spec.tier.vm.clone()
            }),
            egress_path: spec
                .tier
                .network
                .as_ref()
                .and(spec.policy.network.egress_path())
                .map(str::to_owned),
            secrets: spec
                .tier
                .network
                .as_ref()
                .map(|n| n.secrets.clone())
                .unwrap_or_default(),
        },
    )
}

/// The VM's resolver (the gateway on its tap, where the host's egress DNS
/// answers) and, with secrets, the CA bundle the proxy's leaves verify
/// against; written into the initramfs root before it goes read-only.
fn write_network_files(network: &MicroVmNetwork) -> Result<(), JailError> {
    let write = |path: &str, text: &str| {
        std::fs::write(path, text)
            .map_err(|e| JailError::mount("write a network file of the VM", path, e))
    };
    // The check the native jail makes of its namespace: the device is there.
    if !Path::new("/sys/class/net/eth0").exists() {
        return Err(JailError::InvalidSpec {
            field: "tier.network",
            reason: "the spec has network but the VM has no eth0".to_owned(),
        });
    }
    write(
        "/etc/resolv.conf",
        &format!("nameserver {}\noptions ndots:0\n", network.resolver),
    )?;
    if let Some(bundle) = &network.ca_bundle {
        write(crate::spec::CA_BUNDLE_PATH, bundle)?;
    }
    Ok(())
}

/// Each named volume's share (checked by `validate::spec`) at its path
/// (after the workspace and /tmp: it
/// may sit in either), its mount point made with its parents and reached
/// without a symlink; nosuid and nodev, read-only when asked (QEMU opened
/// that share read-only too).
fn mount_volumes(volumes: &[paddock_proto::VolumeMount]) -> Result<(), JailError> {
    for (i, volume) in volumes.iter().enumerate() {
        let path = Path::new(&volume.path);
        std::fs::DirBuilder::new()
            .recursive(true)
            .create(path)
            .map_err(|e| JailError::mount("make a volume's mount point", path, e))?;
        let real = std::fs::canonicalize(path)
            .map_err(|e| JailError::mount("resolve a volume's mount point", path, e))?;
        if real != path {
            return Err(JailError::mount(
                "resolve a volume's mount point",
                path,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("reached through a symlink (it leads to {})", real.display()),
                ),
            ));
        }
        let mut flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
        flags.set(MsFlags::MS_RDONLY, volume.read_only);
        mount(
            Some(crate::spec::volume_tag(i).as_str()),
            path,
            Some("9p"),
            flags,
            Some(NINEP_OPTIONS),
        )
        .map_err(|e| JailError::mount("mount a volume's share", path, e.into()))?;
    }
    Ok(())
}

/// A temporary workspace under a quota: a tmpfs of its sizes at /workspace,
/// owned by the workspace owner; the host's directory stays empty.
fn mount_workspace_tmpfs(
    tmpfs: &WorkspaceQuotaEnforcement,
    uid: u32,
    gid: u32,
) -> Result<(), JailError> {
    let options = format!(
        "mode=0755,size={},nr_inodes={},uid={uid},gid={gid}",
        tmpfs.bytes, tmpfs.inodes
    );
    mount(
        Some("tmpfs"),
        WORKSPACE_MOUNT,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(options.as_str()),
    )
    .map_err(|e| JailError::mount("mount the workspace tmpfs", WORKSPACE_MOUNT, e.into()))
}

/// The workspace share at /workspace. Read-only sandboxes get a share QEMU
/// itself opened read-only; a write scope gets a writable share mounted
/// read-only here, with each scope path bound over itself read-write.
fn mount_workspace(read_only: bool, writable: &[validate::ScopeEntry]) -> Result<(), JailError> {
    let base = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    let ro = if read_only && writable.is_empty() {
        ",ro"
    } else {
        ""
    };
    mount(
        Some(WORKSPACE_TAG),
        WORKSPACE_MOUNT,
        Some("9p"),
        base,
        Some(format!("{NINEP_OPTIONS}{ro}").as_str()),
    )
    .map_err(|e| JailError::mount("mount the workspace share", WORKSPACE_MOUNT, e.into()))?;
    if writable.is_empty() {
        return Ok(());
    }
    // The share is the guest's own, but it is walked as the native jail
    // walks a workspace: by descriptor, no symlink, missing paths made.
    let root = Path::new(WORKSPACE_MOUNT);
    for resolved in writable::resolve_all(root, writable, None)? {
        let mut bind = writable::WritableMount {
            rel: resolved.rel,
            identity: resolved.identity,
            tree: None,
        };
        writable::bind(&mut bind, root, Some(root))?;
    }
    mount(
        None::<&str>,
        WORKSPACE_MOUNT,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | base,
        None::<&str>,
    )
    .map_err(|e| JailError::mount("remount the workspace read-only", WORKSPACE_MOUNT, e.into()))
}

const GUEST_CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// A cgroup v2 `sandbox` group inside the VM with `pids.max`, holding the
/// guest (PID 1) and so everything it starts.
fn guest_pids_cgroup(pids: u64) -> Result<(), JailError> {
    mount(
        Some("cgroup2"),
        GUEST_CGROUP_ROOT,
        Some("cgroup2"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(|e| JailError::mount("mount cgroup2 in the VM", GUEST_CGROUP_ROOT, e.into()))?;
    let root = Path::new(GUEST_CGROUP_ROOT);
    let group = root.join("sandbox");
    let write = |path: &Path, value: &str| {
        std::fs::write(path, value).map_err(|e| JailError::mount("write a VM cgroup file", path, e))
    };
    write(&root.join("cgroup.subtree_control"), "+pids")?;
    std::fs::create_dir_all(&group)
        .map_err(|e| JailError::mount("create the VM's sandbox cgroup", &group, e))?;
    write(&group.join("pids.max"), &pids.to_string())?;
    write(&group.join("cgroup.procs"), "0")
}

/// Pseudo-terminals for interactive processes: the initramfs's devtmpfs
/// has no devpts. As in the other sandboxes /dev/ptmx becomes a link to the
/// devpts instance's own ptmx, so the landlock rule for /dev/pts covers it
/// (devtmpfs's own ptmx node is outside every rule).
fn mount_devpts() -> Result<(), JailError> {
    let path = "/dev/pts";
    match std::fs::create_dir(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(JailError::mount("create /dev/pts", path, e)),
    }
    mount(
        Some("devpts"),
        path,
        Some("devpts"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=0620"),
    )
    .map_err(|e| JailError::mount("mount devpts", path, e.into()))?;
    let ptmx = "/dev/ptmx";
    match std::fs::remove_file(ptmx) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(JailError::mount("remove devtmpfs's ptmx", ptmx, e)),
    }
    std::os::unix::fs::symlink("pts/ptmx", ptmx)
        .map_err(|e| JailError::mount("link /dev/ptmx to pts/ptmx", ptmx, e))
}

fn mount_tmp(tmp_bytes: u64) -> Result<(), JailError> {
    mount(
        Some("tmpfs"),
        "/tmp",
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(format!("size={tmp_bytes},mode=1777").as_str()),
    )
    .map_err(|e| JailError::mount("mount the /tmp tmpfs", "/tmp", e.into()))
}
