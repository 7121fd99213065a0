//! Everything the monitor decides and builds before the clone: validated
//! names, the id mapping, the idmapped workspace tree, the mount plan, the
//! compiled seccomp program and the cgroups (created and joined last).

/// The system's CA bundle, relative to the system root (Debian's path).
const SYSTEM_CA_BUNDLE: &str = "etc/ssl/certs/ca-certificates.crt";

use std::fs;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use paddock_proto::{CgroupEnforcement, DowngradeLayer, LayerState, error_chain};
use seccompiler::BpfProgram;

use crate::host::cgroup::{CgroupMounts, Hierarchies, SandboxCgroups};
use crate::host::id_pool::{self, IdBlock};
use crate::host::ids::{self, Caller, IdPlan, Owner};
use crate::host::layout::{self, LayoutInput, MountOp, RealHost, VolumeBind};
use crate::host::workspace_quota::{self, QuotaPlan};
use crate::host::writable::{self, WritableMount};
use crate::process::threads::{SingleThreaded, ensure_single_threaded};
use crate::{JailError, JailSpec, host::idmap_mount, seccomp::bpf as seccomp_bpf, sys, validate};

#[derive(Debug)]
pub(crate) struct Prepared {
    pub single: SingleThreaded,
    pub ids: IdPlan,
    /// The sandbox's own block of host ids, held until the monitor exits.
    pub id_block: Option<IdBlock>,
    /// The idmapped workspace tree; the init inherits the descriptor.
    pub workspace_tree: Option<OwnedFd>,
    /// A detached tree of each volume's host directory (host root makes
    /// them; None otherwise), in the policy's order.
    pub volume_trees: Vec<Option<OwnedFd>>,
    /// The write scope's paths, resolved on the host (with their idmapped
    /// trees when the workspace is idmapped), in `writable_paths` order.
    pub writable: Vec<WritableMount>,
    /// The validated write scope (sorted, nested paths folded into their
    /// parent); empty without one.
    pub writable_paths: Vec<String>,
    pub layout: Vec<MountOp>,
    pub hostname: String,
    pub seccomp: BpfProgram,
    pub landlock_abi: Option<u32>,
    pub cgroups: Option<SandboxCgroups>,
    pub cgroup_state: LayerState,
    pub cgroup_report: Option<CgroupEnforcement>,
    pub workspace_quota: QuotaPlan,
}

pub(crate) fn prepare(spec: &JailSpec) -> Result<Prepared, JailError> {
    let single = ensure_single_threaded()?;
    let scope = validate::spec(spec)?;
    validate::cgroup_parent(&spec.tier.cgroup_parent)?;
    validate::network(&spec.policy.network, spec.tier.netns.as_ref())?;
    let writable_paths = validate::scope_rels(&scope);
    let workspace = canonical_dir(&spec.tier.workspace)?;
    let rootfs = spec.tier.rootfs.as_deref().map(canonical_dir).transpose()?;
    let meta = fs::metadata(&workspace).map_err(|source| JailError::ResolvePath {
        path: workspace.clone(),
        source,
    })?;
    let owner = Owner {
        uid: meta.uid(),
        gid: meta.gid(),
    };
    let caller = Caller {
        euid: nix::unistd::geteuid().as_raw(),
        egid: nix::unistd::getegid().as_raw(),
    };
    // Host root gives each sandbox its own block unless the operator fixed
    // the mapping.
    let id_block = match (caller.euid, spec.tier.id_mapping) {
        (0, None) => Some(id_pool::allocate_block(spec.tier.id_pool)?),
        _ => None,
    };
    let mapping = spec
        .tier
        .id_mapping
        .or(id_block.as_ref().map(|block| block.mapping));
    let mut ids = ids::plan(caller, mapping, owner)?;
    // Host root creates missing writable paths: they must belong to
    // the workspace owner. Anyone else creates them as itself.
    let chown_to = (caller.euid == 0).then_some(owner);
    let resolved = writable::resolve_all(&workspace, &scope, chown_to)?;
    let workspace_read_only = spec.policy.read_only || !writable_paths.is_empty();
    let mut workspace_tree = None;
    let mut writable_trees: Vec<Option<OwnedFd>> = resolved.iter().map(|_| None).collect();
    if let Some(map) = ids.workspace_idmap {
        let sources: Vec<BorrowedFd<'_>> = resolved.iter().map(|r| r.fd.as_fd()).collect();
        match idmap_mount::idmapped_trees(&workspace, &sources, &map, workspace_read_only, &single)
        {
            Ok(trees) => {
                workspace_tree = Some(trees.workspace);
                writable_trees = trees.writable.into_iter().map(Some).collect();
            }
            Err(_) if spec.allowed(DowngradeLayer::IdmappedWorkspace) => {
                ids = ids::without_idmap(owner).ok_or_else(|| JailError::WorkspaceOwnedByRoot {
                    path: workspace.clone(),
                })?;
            }
            Err(source) => {
                return Err(JailError::IdmapWorkspace {
                    path: workspace,
                    source,
                });
            }
        }
    }
    let writable: Vec<WritableMount> = resolved
        .into_iter()
        .zip(writable_trees)
        .map(|(r, tree)| WritableMount {
            rel: r.rel,
            identity: r.identity,
            tree,
        })
        .collect();
    let workspace_quota = workspace_quota::plan(
        &spec.policy.limits,
        spec.tier.temporary_workspace,
        spec.policy.read_only,
        !writable_paths.is_empty(),
        spec.workspace_quota.as_ref(),
        |layer| spec.allowed(layer),
    )?;
    let volumes = volume_binds(spec, caller)?;
    let volume_trees = volume_trees(&volumes, &ids, caller, &single)?;
    let hostname = validate::hostname(&spec.sandbox_id);
    let system_root = rootfs.as_deref().unwrap_or(Path::new("/"));
    // the system's roots (of the image, when there is one) and the sandbox's CA
    let ca_bundle = spec.tier.egress_ca.as_ref().map(|ca| {
        let system =
            std::fs::read_to_string(system_root.join(SYSTEM_CA_BUNDLE)).unwrap_or_default();
        format!("{system}\n{ca}")
    });
    let layout = layout::plan(
        &LayoutInput {
            system_root,
            workspace: &workspace,
            workspace_idmapped: workspace_tree.is_some(),
            read_only: spec.policy.read_only,
            writable_paths: &writable_paths,
            egress_dns: spec.policy.network.has_egress(),
            ca_bundle: ca_bundle.as_deref(),
            tmp_bytes: spec.policy.limits.tmp_bytes,
            hostname: &hostname,
            workspace_tmpfs: workspace_quota.tmpfs.as_ref().map(|t| (t.bytes, t.inodes)),
            volumes: &volumes,
        },
        &RealHost,
    );
    let seccomp = seccomp_bpf::compile_table()?;
    let (cgroups, cgroup_state) = setup_cgroups(spec)?;
    let cgroup_report = cgroups.as_ref().map(|c| c.report(&spec.policy.limits));
    Ok(Prepared {
        single,
        ids,
        id_block,
        workspace_tree,
        volume_trees,
        writable,
        writable_paths,
        layout,
        hostname,
        seccomp,
        landlock_abi: sys::landlock_abi(),
        cgroups,
        cgroup_state,
        cgroup_report,
        workspace_quota,
    })
}

/// Each of the policy's volumes with its canonical host directory (from the
/// tier; one missing is an invalid spec, never a sandbox without it). Host
/// root gives a read-write one's top directory to the volume owner (the
/// volume host makes it root's), whom the idmapped mount shows as sandbox
/// root; a read-only one is left as it is.
fn volume_binds(spec: &JailSpec, caller: Caller) -> Result<Vec<VolumeBind>, JailError> {
    spec.policy
        .volumes
        .iter()
        .enumerate()
        .map(|(index, volume)| {
            let (_, dir) = spec
                .tier
                .volume_dirs
                .iter()
                .find(|(name, _)| *name == volume.name)
                .ok_or_else(|| JailError::InvalidSpec {
                    field: "volume_dirs",
                    reason: format!("volume {:?} has no host directory", volume.name),
                })?;
            let host = canonical_dir(dir)?;
            if !volume.read_only && caller.euid == 0 {
                let owner = paddock_proto::VOLUME_OWNER_ID;
                std::os::unix::fs::chown(&host, Some(owner), Some(owner)).map_err(|source| {
                    JailError::ResolvePath {
                        path: host.clone(),
                        source,
                    }
                })?;
            }
            Ok(VolumeBind {
                index,
                host,
                path: PathBuf::from(&volume.path),
                read_only: volume.read_only,
            })
        })
        .collect()
}

/// Host root clones each volume's directory into a detached mount (the
/// init, unprivileged on the host, may not be able to reach the path),
/// idmapped so the volume owner's files ([`paddock_proto::VOLUME_OWNER_ID`])
/// are sandbox root's and what sandbox root makes lands on disk as the
/// volume owner's, with nosuid, nodev and read-only as asked already set.
fn volume_trees(
    volumes: &[VolumeBind],
    plan: &IdPlan,
    caller: Caller,
    single: &SingleThreaded,
) -> Result<Vec<Option<OwnedFd>>, JailError> {
    if caller.euid != 0 || volumes.is_empty() {
        return Ok(volumes.iter().map(|_| None).collect());
    }
    let owner = paddock_proto::VOLUME_OWNER_ID;
    let map = |outside| ids::IdMap {
        inside: owner,
        outside,
        count: 1,
    };
    let idmap = ids::WorkspaceIdmap {
        uid: map(plan.uid.root_outside()),
        gid: map(plan.gid.root_outside()),
    };
    let userns = idmap_mount::user_namespace_with(&idmap, single)
        .map_err(|e| JailError::mount("volume-idmap", "/proc/<helper>/uid_map", e))?;
    volumes
        .iter()
        .map(|volume| {
            let attrs = layout::Attrs {
                rdonly: volume.read_only,
                ..layout::Attrs::DATA
            };
            let tree = sys::open_tree_clone(&volume.host)
                .and_then(|tree| {
                    let bits = attrs.mount_attr_bits();
                    sys::set_tree_attrs(tree.as_fd(), bits, Some(userns.as_fd()), false)?;
                    Ok(tree)
                })
                .map_err(|e| JailError::mount("volume-tree", &volume.host, e))?;
            Ok(Some(tree))
        })
        .collect()
}

fn canonical_dir(path: &Path) -> Result<PathBuf, JailError> {
    let canonical = fs::canonicalize(path).map_err(|source| JailError::ResolvePath {
        path: path.to_path_buf(),
        source,
    })?;
    if !canonical.is_dir() {
        return Err(JailError::NotADirectory { path: canonical });
    }
    Ok(canonical)
}

/// Creates and joins the sandbox cgroups; nothing when no limit is asked.
fn setup_cgroups(spec: &JailSpec) -> Result<(Option<SandboxCgroups>, LayerState), JailError> {
    let limits = &spec.policy.limits;
    if limits.memory_bytes.is_none() && limits.pids.is_none() && limits.cpu_millis.is_none() {
        return Ok((None, LayerState::NotRequested));
    }
    let attempt = || -> Result<SandboxCgroups, JailError> {
        let mounts = CgroupMounts::read()?;
        let hierarchies = Hierarchies::choose(&mounts, &mounts.v2_controllers());
        let cgroups = SandboxCgroups::create(
            &hierarchies,
            &spec.tier.cgroup_parent,
            &spec.sandbox_id,
            limits,
        )?;
        if let Err(e) = cgroups.join_self() {
            let _ = cgroups.leave_and_remove();
            return Err(e);
        }
        Ok(cgroups)
    };
    match attempt() {
        Ok(cgroups) => Ok((Some(cgroups), LayerState::Enforced)),
        Err(e)
            if spec
                .policy
                .allow_downgrade
                .contains(&DowngradeLayer::Cgroups) =>
        {
            Ok((
                None,
                LayerState::Downgraded {
                    reason: error_chain(&e),
                },
            ))
        }
        Err(e) => Err(e),
    }
}
