//! The native tier's guest spec: the request's policy as it is, with the
//! host paths and ids only the jail's monitor sees.

use std::path::PathBuf;

use paddock_core::sandbox::{SandboxId, SandboxSpec};
use paddock_jail::{GuestSpec, JailSpec, JailTier};

use super::NativeConfig;
use crate::shared;

/// `temporary_workspace`: the workspace was made for this sandbox (a quota
/// is a tmpfs, the monitor removes it).
pub(super) fn jail_spec(
    id: &SandboxId,
    workspace: PathBuf,
    temporary_workspace: bool,
    spec: &SandboxSpec,
    config: &NativeConfig,
    netns: Option<PathBuf>,
    egress_ca: Option<&str>,
) -> JailSpec {
    // placeholders and the bundle's paths only where the proxy intercepts
    let secrets = shared::egress::secret_notices(spec, egress_ca.is_some());
    let egress_env = shared::egress::egress_env(spec, egress_ca.is_some());
    GuestSpec {
        sandbox_id: id.to_string(),
        policy: spec.policy.clone(),
        workspace_quota: spec.workspace_quota.clone(),
        tier: JailTier {
            workspace,
            netns,
            egress_env,
            secrets,
            egress_ca: egress_ca.map(str::to_owned),
            id_mapping: config.id_mapping,
            id_pool: config.id_pool,
            temporary_workspace,
            rootfs: config.rootfs.clone(),
            volume_dirs: spec.volume_dirs.clone(),
            cgroup_parent: config.cgroup_parent.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use paddock_core::sandbox::{DowngradeLayer, SandboxLimits, SandboxPolicy};
    use paddock_proto::NetworkPolicy;

    use super::*;

    #[test]
    fn carries_every_field_of_the_request() {
        let id = SandboxId::parse("sb-test").unwrap();
        let spec = SandboxSpec {
            workspace: None,
            policy: SandboxPolicy {
                read_only: false,
                writable_paths: vec!["src".to_owned(), "docs/a.md".to_owned()],
                network: NetworkPolicy::Full,
                limits: SandboxLimits {
                    memory_bytes: Some(512 << 20),
                    pids: None,
                    cpu_millis: Some(1500),
                    tmp_bytes: 1 << 20,
                    open_files: 64,
                    workspace_bytes: Some(8 << 20),
                    workspace_inodes: Some(100),
                },
                allow_downgrade: BTreeSet::from([
                    DowngradeLayer::Landlock,
                    DowngradeLayer::Cgroups,
                ]),
                volumes: Vec::new(),
            },
            secrets: vec![
                paddock_proto::SecretSpec::new(
                    "API_KEY",
                    paddock_proto::SecretValue::new("sk-never-in-the-spec"),
                    &["api.test"],
                    None,
                )
                .unwrap(),
            ],
            volume_dirs: Vec::new(),
            workspace_quota: Some(paddock_proto::WorkspaceQuotaEnforcement {
                mechanism: "btrfs qgroup 0/257".to_owned(),
                bytes: 4 << 20,
                inodes: 0,
            }),
        };
        let mut config = NativeConfig::new(PathBuf::from("/bin/guest"));
        config.cgroup_parent = "paddock-test".to_owned();
        let netns = Some(PathBuf::from("/run/netns/paddock-sb-test"));
        let jail = jail_spec(
            &id,
            PathBuf::from("/ws"),
            true,
            &spec,
            &config,
            netns.clone(),
            Some("CA PEM"),
        );
        assert!(!format!("{jail:?}").contains("sk-never-in-the-spec"));
        let mut egress_env = vec![(
            "API_KEY".to_owned(),
            "paddock-secret-placeholder-API_KEY".to_owned(),
        )];
        egress_env.extend(
            paddock_jail::CA_BUNDLE_VARS
                .iter()
                .map(|v| ((*v).to_owned(), paddock_jail::CA_BUNDLE_PATH.to_owned())),
        );
        assert_eq!(
            jail,
            JailSpec {
                sandbox_id: "sb-test".to_owned(),
                policy: SandboxPolicy {
                    read_only: false,
                    writable_paths: vec!["src".to_owned(), "docs/a.md".to_owned()],
                    network: NetworkPolicy::Full,
                    limits: SandboxLimits {
                        memory_bytes: Some(512 << 20),
                        pids: None,
                        cpu_millis: Some(1500),
                        tmp_bytes: 1 << 20,
                        open_files: 64,
                        workspace_bytes: Some(8 << 20),
                        workspace_inodes: Some(100),
                    },
                    allow_downgrade: BTreeSet::from([
                        DowngradeLayer::Cgroups,
                        DowngradeLayer::Landlock
                    ]),
                    volumes: Vec::new(),
                },
                workspace_quota: spec.workspace_quota.clone(),
                tier: JailTier {
                    workspace: PathBuf::from("/ws"),
                    netns,
                    egress_env,
                    secrets: vec![paddock_proto::SecretNotice {
                        name: "API_KEY".to_owned(),
                        hosts: vec!["api.test".parse().unwrap()],
                    }],
                    egress_ca: Some("CA PEM".to_owned()),
                    id_mapping: None,
                    id_pool: None,
                    temporary_workspace: true,
                    rootfs: None,
                    volume_dirs: Vec::new(),
                    cgroup_parent: "paddock-test".to_owned(),
                },
            }
        );
    }
}
