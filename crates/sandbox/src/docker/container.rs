//! The container a sandbox spec becomes: every hardening layer the engine
//! applies, each with its reason.

use std::collections::HashMap;
use std::path::PathBuf;

use bollard::models::{ContainerCreateBody, HostConfig, HostConfigCgroupnsModeEnum};
use paddock_core::sandbox::{SandboxId, SandboxSpec};
use paddock_jail::{ContainerSpec, ContainerTier, GuestSpec};
use paddock_proto::{CgroupEnforcement, SandboxPolicy, WORKSPACE_MOUNT, WorkspaceQuotaEnforcement};

use super::config::{DockerConfig, Engine, LABEL_BACKEND, LABEL_NODE, LABEL_SANDBOX};
use super::guest_socket::GuestSocket;
use crate::shared::workspace::Workspace;

/// Where the host's guest binary appears inside (the image has the directory).
pub(super) const GUEST_PATH: &str = "/opt/paddock/paddock-guest";

/// Namespaces a container gets, as reported. Under runc they are the host
/// kernel's, all checked from the host (host_checks.rs). Under gVisor the
/// sentry holds the container in its own mount, ipc, uts, user and net
/// namespaces, checked from the host the same way; its
/// pid namespace is the sentry's own (the guest checks it is PID 1 there).
/// A container always has its own network namespace: loopback only with
/// network none; with egress the host names it and configures it from the
/// host before the guest's handshake (see [`super::network`]). gVisor with
/// host networking (`egress`) keeps its sentry in the host's user
/// namespace (runsc needs it to use the host's sockets in that network
/// namespace): no `user` then; the sentry holds only CAP_SYS_PTRACE there
/// (docs/security.md).
pub(super) fn namespaces(engine: Engine, egress: bool) -> Vec<String> {
    let names = match (engine, egress) {
        (Engine::Docker, _) => vec!["mount", "pid", "ipc", "uts", "cgroup", "net"],
        (Engine::Gvisor, false) => vec!["mount", "pid", "ipc", "uts", "user", "net"],
        (Engine::Gvisor, true) => vec!["mount", "pid", "ipc", "uts", "net"],
    };
    names.into_iter().map(str::to_owned).collect()
}

/// The namespaces of `reported` the host can see on the container's process.
pub(super) fn host_checked(engine: Engine, reported: &[String]) -> Vec<String> {
    reported
        .iter()
        .filter(|n| engine == Engine::Docker || n.as_str() != "pid")
        .cloned()
        .collect()
}

/// The cgroup limits asked of the engine (checked on the host after start).
pub(super) fn cgroup_asked(spec: &SandboxSpec, parent: &str) -> Option<CgroupEnforcement> {
    let limits = &spec.policy.limits;
    if limits.memory_bytes.is_none() && limits.pids.is_none() && limits.cpu_millis.is_none() {
        return None;
    }
    Some(CgroupEnforcement {
        version: super::host_checks::cgroup_version().to_owned(),
        memory_bytes: limits.memory_bytes,
        pids: limits.pids,
        cpu_millis: limits.cpu_millis,
        paths: vec![format!("{parent}/<container id>")],
    })
}

/// `intercepted`: the host's proxy holds a CA for the sandbox's secrets.
pub(super) fn guest_spec(
    id: &SandboxId,
    config: &DockerConfig,
    spec: &SandboxSpec,
    writable_paths: Vec<String>,
    temporary_workspace: bool,
    intercepted: bool,
) -> ContainerSpec {
    GuestSpec {
        sandbox_id: id.as_str().to_owned(),
        policy: SandboxPolicy {
            writable_paths,
            ..spec.policy.clone()
        },
        workspace_quota: spec.workspace_quota.clone(),
        tier: ContainerTier {
            engine: config.engine.backend_name().to_owned(),
            namespaces: namespaces(config.engine, spec.policy.network.has_egress()),
            cgroup: cgroup_asked(spec, &config.cgroup_parent),
            temporary_workspace,
            egress_env: crate::shared::egress::egress_env(spec, intercepted),
            secrets: crate::shared::egress::secret_notices(spec, intercepted),
        },
    }
}

pub(super) struct Request<'a> {
    pub id: &'a SandboxId,
    pub config: &'a DockerConfig,
    pub spec: &'a SandboxSpec,
    pub workspace: &'a Workspace,
    pub writable: &'a [(PathBuf, String)],
    /// The spec's named volumes with their host directories.
    pub volumes: &'a [paddock_core::sandbox::HostVolumeMount],
    /// The bind of the guest socket's directory, when the guest connects
    /// through one (else it speaks on the attached stdio).
    pub guest_socket: Option<String>,
    /// The tmpfs mounted at /workspace instead of the host directory
    /// ([`Workspace::tmpfs`]).
    pub workspace_tmpfs: Option<WorkspaceQuotaEnforcement>,
    /// The host file holding the sandbox's CA bundle, when its secrets are
    /// intercepted: bound read-only at [`paddock_jail::CA_BUNDLE_PATH`].
    pub ca_bundle: Option<PathBuf>,
    /// Whether the engine keeps the container once it exits: a sandbox
    /// that can be saved whole, whose checkpoint ends its container.
    pub keep_exited: bool,
}

pub(super) fn body(request: &Request<'_>) -> ContainerCreateBody {
    let Request {
        id,
        config,
        spec,
        workspace,
        writable,
        volumes,
        guest_socket,
        workspace_tmpfs,
        ca_bundle,
        keep_exited,
    } = request;
    let egress = spec.policy.network.has_egress();
    let workspace_mode = if spec.policy.read_only || !writable.is_empty() {
        "ro"
    } else {
        "rw"
    };
    // The one guest build of the host, never writable from inside.
    let mut binds = vec![format!("{}:{GUEST_PATH}:ro", config.guest_bin.display())];
    // Scratch space, bounded; nosuid/nodev as every writable mount.
    let mut tmpfs = HashMap::from([(
        "/tmp".to_owned(),
        format!(
            "rw,nosuid,nodev,size={},mode=1777",
            spec.policy.limits.tmp_bytes
        ),
    )]);
    match workspace_tmpfs {
        // A temporary workspace under a quota lives in the container's own
        // tmpfs, given to the sandbox's ids: writes past it fail with
        // ENOSPC inside, its pages are charged to the container's memory
        // cgroup, and it goes with the container. Programs built there run.
        Some(quota) => {
            tmpfs.insert(
                WORKSPACE_MOUNT.to_owned(),
                format!(
                    "rw,exec,nosuid,nodev,size={},nr_inodes={},uid={},gid={},mode=0755",
                    quota.bytes, quota.inodes, workspace.uid, workspace.gid
                ),
            );
        }
        None => binds.push(format!(
            "{}:{WORKSPACE_MOUNT}:{workspace_mode}",
            workspace.path.display()
        )),
    }
    binds.extend(guest_socket.iter().cloned());
    // The sandbox trusts its own CA for its secrets' hosts; never writable.
    binds.extend(
        ca_bundle
            .iter()
            .map(|file| format!("{}:{}:ro", file.display(), paddock_jail::CA_BUNDLE_PATH)),
    );
    // The tenant's named volumes, read-only where asked.
    binds.extend(crate::shared::volume_mounts::binds(volumes));
    // The write scope: each path its own read-write bind over the read-only workspace.
    binds.extend(
        writable
            .iter()
            .map(|(host, inside)| format!("{}:{inside}:rw", host.display())),
    );
    let labels = HashMap::from([
        (LABEL_SANDBOX.to_owned(), id.as_str().to_owned()),
        (LABEL_NODE.to_owned(), config.node.clone()),
        (
            LABEL_BACKEND.to_owned(),
            config.engine.backend_name().to_owned(),
        ),
    ]);
    let seccomp = paddock_jail::docker_seccomp_profile().to_string();
    let limits = &spec.policy.limits;
    let host_config = HostConfig {
        binds: Some(binds),
        // No capability at all, in any set: the guest checks it.
        cap_drop: Some(vec!["ALL".to_owned()]),
        security_opt: Some(vec![
            // setuid binaries of the image gain nothing.
            "no-new-privileges:true".to_owned(),
            // The native jail's rule table, as the engine's outer filter.
            format!("seccomp={seccomp}"),
        ]),
        // The image is shared by every sandbox: nothing may change it.
        readonly_rootfs: Some(true),
        tmpfs: Some(tmpfs),
        memory: limits.memory_bytes.and_then(|b| i64::try_from(b).ok()),
        // No swap beyond the memory limit.
        memory_swap: limits.memory_bytes.and_then(|b| i64::try_from(b).ok()),
        pids_limit: limits.pids.and_then(|p| i64::try_from(p).ok()),
        nano_cpus: limits
            .cpu_millis
            .and_then(|m| i64::try_from(m.saturating_mul(1_000_000)).ok()),
        cgroup_parent: Some(config.cgroup_parent.clone()),
        cgroupns_mode: Some(HostConfigCgroupnsModeEnum::PRIVATE),
        ipc_mode: Some("private".to_owned()),
        // Never the host's network: the container's own namespace, which
        // with egress the host configures from outside (super::network).
        network_mode: Some("none".to_owned()),
        // With egress, names resolve through the proxy's DNS inside the
        // namespace (it answers only what the policy allows).
        dns: egress.then(|| vec!["127.0.0.1".to_owned()]),
        runtime: config.engine.runtime_for(egress).map(str::to_owned),
        // The container goes with its guest: when the owner dies, the
        // attached stdin closes, the guest exits and the engine removes it.
        // One that can be saved stays once it exits (its checkpoint ends
        // it): the owner removes it, or orphan reaping at its next start.
        auto_remove: Some(!keep_exited),
        ..HostConfig::default()
    };
    ContainerCreateBody {
        image: Some(config.image.clone()),
        user: Some(format!("{}:{}", workspace.uid, workspace.gid)),
        hostname: Some(format!("sandbox-{}", short(id.as_str()))),
        entrypoint: Some(entrypoint(id, guest_socket.is_some())),
        cmd: Some(Vec::new()),
        env: Some(Vec::new()),
        working_dir: Some(WORKSPACE_MOUNT.to_owned()),
        attach_stdin: Some(true),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        open_stdin: Some(true),
        // stdin closes for good when the attached owner goes away.
        stdin_once: Some(true),
        tty: Some(false),
        network_disabled: Some(true),
        labels: Some(labels),
        host_config: Some(host_config),
        ..ContainerCreateBody::default()
    }
}

fn entrypoint(id: &SandboxId, through_socket: bool) -> Vec<String> {
    let mut argv = vec![
        GUEST_PATH.to_owned(),
        "--log".to_owned(),
        "warn".to_owned(),
        "container".to_owned(),
        "--sandbox".to_owned(),
        id.to_string(),
    ];
    if through_socket {
        argv.push("--connect".to_owned());
        argv.push(GuestSocket::inside_path().display().to_string());
    }
    argv
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request_body(
        engine: Engine,
        spec: &SandboxSpec,
        writable: &[(PathBuf, String)],
    ) -> ContainerCreateBody {
        request_body_keeping(engine, spec, writable, false)
    }

    fn request_body_keeping(
        engine: Engine,
        spec: &SandboxSpec,
        writable: &[(PathBuf, String)],
        keep_exited: bool,
    ) -> ContainerCreateBody {
        let id = SandboxId::generate();
        let config = DockerConfig::new(engine, PathBuf::from("/host/paddock-guest"));
        let workspace = Workspace {
            path: PathBuf::from("/srv/ws"),
            temporary: None,
            uid: 1234,
            gid: 5678,
        };
        body(&Request {
            id: &id,
            config: &config,
            spec,
            workspace: &workspace,
            writable,
            volumes: &[],
            guest_socket: None,
            workspace_tmpfs: None,
            ca_bundle: None,
            keep_exited,
        })
    }

    #[test]
    fn every_engine_layer_is_asked_for() {
        let spec = SandboxSpec::default();
        let body = request_body(Engine::Docker, &spec, &[]);
        let host = body.host_config.unwrap();
        assert_eq!(host.cap_drop.unwrap(), ["ALL"]);
        assert_eq!(host.readonly_rootfs, Some(true));
        let security = host.security_opt.unwrap();
        assert!(security.contains(&"no-new-privileges:true".to_owned()));
        let seccomp = security
            .iter()
            .find_map(|o| o.strip_prefix("seccomp="))
            .unwrap();
        let profile: serde_json::Value = serde_json::from_str(seccomp).unwrap();
        assert_eq!(profile, paddock_jail::docker_seccomp_profile());
        let tmp = &host.tmpfs.unwrap()["/tmp"];
        assert!(
            tmp.contains(&format!("size={}", spec.policy.limits.tmp_bytes))
                && tmp.contains("nosuid")
        );
        assert_eq!(host.network_mode.as_deref(), Some("none"));
        assert_eq!(host.memory, Some(1 << 30));
        assert_eq!(host.memory_swap, host.memory, "no swap beyond the limit");
        assert_eq!(host.pids_limit, Some(512));
        assert_eq!(host.runtime, None);
        assert_eq!(host.auto_remove, Some(true));
        let kept = request_body_keeping(Engine::Gvisor, &spec, &[], true);
        assert_eq!(
            kept.host_config.unwrap().auto_remove,
            Some(false),
            "a container that can be saved outlives its checkpoint"
        );
        assert!(
            host.binds
                .as_ref()
                .unwrap()
                .contains(&"/srv/ws:/workspace:rw".to_owned())
        );
        assert!(
            host.binds
                .unwrap()
                .contains(&"/host/paddock-guest:/opt/paddock/paddock-guest:ro".to_owned())
        );
        assert_eq!(body.user.as_deref(), Some("1234:5678"));
        assert_eq!(body.open_stdin, Some(true));
        assert_eq!(body.stdin_once, Some(true));
        assert_eq!(body.tty, Some(false));
        let labels = body.labels.unwrap();
        assert_eq!(labels[LABEL_BACKEND], "docker");
        assert_eq!(labels[LABEL_NODE], "paddock");
    }

    #[test]
    fn a_write_scope_binds_the_workspace_read_only_with_its_paths_writable() {
        let spec = SandboxSpec::with_policy(paddock_proto::SandboxPolicy {
            writable_paths: vec!["out".to_owned()],
            ..paddock_proto::SandboxPolicy::default()
        });
        let writable = [(PathBuf::from("/srv/ws/out"), "/workspace/out".to_owned())];
        let body = request_body(Engine::Gvisor, &spec, &writable);
        let host = body.host_config.unwrap();
        let binds = host.binds.unwrap();
        assert!(binds.contains(&"/srv/ws:/workspace:ro".to_owned()));
        assert_eq!(binds.last().unwrap(), "/srv/ws/out:/workspace/out:rw");
        assert_eq!(host.runtime.as_deref(), Some("runsc"));
        assert_eq!(body.labels.unwrap()[LABEL_BACKEND], "gvisor");
    }

    #[test]
    fn each_volume_is_a_bind_read_only_where_asked() {
        let id = SandboxId::generate();
        let config = DockerConfig::new(Engine::Docker, PathBuf::from("/host/paddock-guest"));
        let spec = SandboxSpec::default();
        let workspace = Workspace {
            path: PathBuf::from("/srv/ws"),
            temporary: None,
            uid: 1234,
            gid: 5678,
        };
        let volumes = [
            paddock_core::sandbox::HostVolumeMount {
                name: "cache".to_owned(),
                host: PathBuf::from("/pool/t/cache"),
                path: "/cache".to_owned(),
                read_only: false,
            },
            paddock_core::sandbox::HostVolumeMount {
                name: "seed".to_owned(),
                host: PathBuf::from("/pool/t/seed"),
                path: "/workspace/seed".to_owned(),
                read_only: true,
            },
        ];
        let body = body(&Request {
            id: &id,
            config: &config,
            spec: &spec,
            workspace: &workspace,
            writable: &[],
            volumes: &volumes,
            guest_socket: None,
            workspace_tmpfs: None,
            ca_bundle: None,
            keep_exited: false,
        });
        let binds = body.host_config.unwrap().binds.unwrap();
        assert!(
            binds.contains(&"/pool/t/cache:/cache:rw".to_owned()),
            "{binds:?}"
        );
        assert!(
            binds.contains(&"/pool/t/seed:/workspace/seed:ro".to_owned()),
            "{binds:?}"
        );
    }

    #[test]
    fn a_capped_temporary_workspace_is_the_engines_tmpfs_given_to_the_sandbox_ids() {
        let id = SandboxId::generate();
        let config = DockerConfig::new(Engine::Docker, PathBuf::from("/host/paddock-guest"));
        let spec = SandboxSpec::with_policy(paddock_proto::SandboxPolicy {
            limits: paddock_core::sandbox::SandboxLimits {
                workspace_bytes: Some(8 << 20),
                ..paddock_core::sandbox::SandboxLimits::default()
            },
            ..paddock_proto::SandboxPolicy::default()
        });
        let workspace = Workspace {
            path: PathBuf::from("/tmp/paddock-x"),
            temporary: Some(tempfile::tempdir().unwrap()),
            uid: 165_536,
            gid: 165_536,
        };
        let quota = workspace.tmpfs(&spec);
        assert_eq!(
            quota.as_ref().map(|q| (q.bytes, q.inodes)),
            Some((8 << 20, 2048))
        );
        let body = body(&Request {
            id: &id,
            config: &config,
            spec: &spec,
            workspace: &workspace,
            writable: &[],
            volumes: &[],
            guest_socket: None,
            workspace_tmpfs: quota,
            ca_bundle: None,
            keep_exited: false,
        });
        let host = body.host_config.unwrap();
        assert!(
            !host
                .binds
                .unwrap()
                .iter()
                .any(|b| b.contains(":/workspace")),
            "the host directory is not bound"
        );
        assert_eq!(
            host.tmpfs.unwrap()["/workspace"],
            "rw,exec,nosuid,nodev,size=8388608,nr_inodes=2048,uid=165536,gid=165536,mode=0755"
        );
        assert_eq!(body.user.as_deref(), Some("165536:165536"));
        // Read-only or write-scoped: the host's directory, as native.
        let read_only = spec.clone().map_policy(|p| p.read_only = true);
        assert_eq!(workspace.tmpfs(&read_only), None);
        let persistent = Workspace {
            temporary: None,
            ..workspace
        };
        assert_eq!(persistent.tmpfs(&spec), None);
    }

    #[test]
    fn with_egress_gvisor_takes_its_host_network_runtime_and_names_resolve_inside() {
        let spec = SandboxSpec::with_policy(paddock_proto::SandboxPolicy {
            network: paddock_proto::NetworkPolicy::Full,
            ..paddock_proto::SandboxPolicy::default()
        });
        let host = request_body(Engine::Gvisor, &spec, &[])
            .host_config
            .unwrap();
        assert_eq!(host.runtime.as_deref(), Some("runsc-net"));
        assert_eq!(host.network_mode.as_deref(), Some("none"));
        assert_eq!(host.dns.unwrap(), ["127.0.0.1"]);
        assert_eq!(host.cap_drop.unwrap(), ["ALL"], "never NET_ADMIN");
        let none = request_body(Engine::Gvisor, &SandboxSpec::default(), &[]);
        let host = none.host_config.unwrap();
        assert_eq!(host.runtime.as_deref(), Some("runsc"));
        assert_eq!(host.dns, None);
        let docker = request_body(Engine::Docker, &spec, &[])
            .host_config
            .unwrap();
        assert_eq!(docker.runtime, None);
    }

    #[test]
    fn gvisor_reports_the_sentry_namespaces_and_checks_all_but_pid_from_the_host() {
        let reported = namespaces(Engine::Gvisor, false);
        assert!(reported.contains(&"user".to_owned()) && reported.contains(&"pid".to_owned()));
        let checked = host_checked(Engine::Gvisor, &reported);
        assert!(!checked.contains(&"pid".to_owned()));
        let docker = namespaces(Engine::Docker, false);
        assert_eq!(namespaces(Engine::Docker, true), docker);
        let hostinet = namespaces(Engine::Gvisor, true);
        assert!(!hostinet.contains(&"user".to_owned()) && hostinet.contains(&"net".to_owned()));
        assert!(docker.contains(&"net".to_owned()));
        assert_eq!(host_checked(Engine::Docker, &docker), docker);
    }
}
