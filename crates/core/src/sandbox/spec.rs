//! What a caller asks of a sandbox, and what it got.

use std::path::PathBuf;

use paddock_proto::{InvalidSandboxSpec, NetworkPolicy, SandboxLimits, SandboxPolicy};
use serde::{Deserialize, Serialize};

use super::SandboxId;

/// A request for one sandbox: where its workspace is, its policy, and the
/// secrets its egress swaps in. The policy's fields sit at the top level of
/// the JSON (flattened), as they always have.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSpec {
    /// Host directory mounted at /workspace. None: the backend makes a fresh
    /// empty directory and removes it when the sandbox is destroyed.
    #[serde(default)]
    pub workspace: Option<PathBuf>,
    /// What the sandbox may do and hold (the one declaration of it, shared
    /// with every backend's guest).
    #[serde(flatten)]
    pub policy: SandboxPolicy,
    /// Secrets injected at egress (only placeholders inside). Never
    /// serialized: the spec is stored, the values must not be.
    #[serde(skip)]
    pub secrets: Vec<paddock_proto::SecretSpec>,
    /// The host directory of each of the policy's volumes
    /// ([`SandboxPolicy::volumes`]), resolved and leased by the service.
    /// Never serialized, like the secrets: a host path is not stored.
    #[serde(skip)]
    pub volume_dirs: Vec<(String, PathBuf)>,
    /// The quota the host holds `workspace` to (the server's workspace in
    /// its volume pool: a btrfs qgroup), handed to the guest, which reports
    /// it enforced if it is as tight as `limits.workspace_bytes`. Set by the
    /// server each time from the pool, never read from a request or the
    /// stored spec: a quota claimed but not held would be a false report.
    #[serde(skip)]
    pub workspace_quota: Option<paddock_proto::WorkspaceQuotaEnforcement>,
}

/// A named volume's host directory bound at `path` inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostVolumeMount {
    /// The volume's name (for reports and errors).
    pub name: String,
    /// Its directory on the host (the volume host's subvolume).
    pub host: PathBuf,
    /// Where inside the sandbox.
    pub path: String,
    pub read_only: bool,
}

impl SandboxSpec {
    /// A spec with `policy` and nothing else: a fresh temporary workspace,
    /// no secrets.
    pub fn with_policy(policy: SandboxPolicy) -> Self {
        Self {
            policy,
            ..Self::default()
        }
    }

    /// This spec with its policy changed by `change` (a request made from
    /// a template).
    pub fn map_policy(mut self, change: impl FnOnce(&mut SandboxPolicy)) -> Self {
        change(&mut self.policy);
        self
    }

    /// Checks what can be checked without the workspace
    /// ([`SandboxPolicy::validate`]). Whether the paths are safe on disk is
    /// the backend's check when it starts the sandbox.
    pub fn validate(&self) -> Result<(), InvalidSandboxSpec> {
        self.policy.validate()
    }

    /// The backend named `backend` cannot bind volumes: a spec with any is
    /// refused rather than started without them.
    pub fn refuse_volumes(&self, backend: &'static str) -> Result<(), super::SandboxError> {
        match self.policy.volumes.first() {
            None => Ok(()),
            Some(volume) => Err(super::SandboxError::Unsupported {
                backend,
                what: format!("mounting volume {:?} at {}", volume.name, volume.path),
            }),
        }
    }

    /// Each of the policy's volumes with its host directory; a volume
    /// without one is a [`SandboxError::Unsupported`](super::SandboxError)
    /// (the caller did not resolve it), never a sandbox without it.
    pub fn volume_binds(
        &self,
        backend: &'static str,
    ) -> Result<Vec<HostVolumeMount>, super::SandboxError> {
        self.policy
            .volumes
            .iter()
            .map(|mount| {
                let host = self
                    .volume_dirs
                    .iter()
                    .find(|(name, _)| *name == mount.name)
                    .map(|(_, dir)| dir.clone())
                    .ok_or_else(|| super::SandboxError::Unsupported {
                        backend,
                        what: format!("volume {:?} without a host directory", mount.name),
                    })?;
                Ok(HostVolumeMount {
                    name: mount.name.clone(),
                    host,
                    path: mount.path.clone(),
                    read_only: mount.read_only,
                })
            })
            .collect()
    }
}

/// A running sandbox, as its backend created it. What the jail really
/// enforces is asked of the guest ([`super::GuestOps::info`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxInfo {
    pub id: SandboxId,
    /// Name of the backend that runs it ("native", ...).
    pub backend: String,
    /// Host directory behind /workspace.
    pub workspace: PathBuf,
    /// The workspace was made for this sandbox and goes away with it.
    pub workspace_is_temporary: bool,
    pub read_only: bool,
    pub network: NetworkPolicy,
    pub limits: SandboxLimits,
    /// Version string the guest agent reported in the handshake.
    pub agent_version: String,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
}

#[cfg(test)]
mod tests {
    use paddock_proto::{MAX_WRITABLE_PATH_LEN, MAX_WRITABLE_PATHS};

    use super::*;

    fn scoped(read_only: bool, paths: &[&str]) -> SandboxSpec {
        SandboxSpec::with_policy(SandboxPolicy {
            read_only,
            writable_paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            ..SandboxPolicy::default()
        })
    }

    #[test]
    fn normalized_relative_writable_paths_are_valid() {
        assert_eq!(scoped(false, &[]).validate(), Ok(()));
        assert_eq!(scoped(true, &[]).validate(), Ok(()));
        let ok = scoped(
            false,
            &[
                "src", "a/b.txt", ".cache", "x..y", "src/deep", "build/", "a/b/",
            ],
        );
        assert_eq!(ok.validate(), Ok(()));
    }

    #[test]
    fn each_malformed_writable_path_is_named_with_its_problem() {
        for (bad, problem) in [
            ("", "is empty"),
            (
                "/etc",
                "is absolute; give it relative to the workspace root",
            ),
            ("src//", "has an empty component (a doubled '/')"),
            ("a//b", "has an empty component (a doubled '/')"),
            ("a//", "has an empty component (a doubled '/')"),
            (".", "has a '.' component; give it normalized"),
            ("./src", "has a '.' component; give it normalized"),
            (
                "..",
                "has a '..' component; writable paths stay inside the workspace",
            ),
            (
                "a/../../x",
                "has a '..' component; writable paths stay inside the workspace",
            ),
            ("a\0b", "contains a NUL byte"),
        ] {
            assert_eq!(
                scoped(false, &["ok", bad]).validate(),
                Err(InvalidSandboxSpec::WritablePath {
                    path: bad.to_owned(),
                    problem
                }),
                "{bad:?}"
            );
        }
        let longest = "a/".repeat(MAX_WRITABLE_PATH_LEN / 2 - 1) + "bc";
        assert_eq!(longest.len(), MAX_WRITABLE_PATH_LEN);
        assert_eq!(scoped(false, &[&longest]).validate(), Ok(()));
        let long = longest + "d";
        assert_eq!(
            scoped(false, &[&long]).validate(),
            Err(InvalidSandboxSpec::WritablePath {
                path: long.clone(),
                problem: "is longer than the 1024 bytes allowed"
            })
        );
    }

    #[test]
    fn read_only_with_writable_paths_and_too_many_paths_are_refused() {
        assert_eq!(
            scoped(true, &["src"]).validate(),
            Err(InvalidSandboxSpec::ReadOnlyWithWritablePaths)
        );
        let names: Vec<String> = (0..=MAX_WRITABLE_PATHS).map(|i| format!("d{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(
            scoped(false, &refs).validate(),
            Err(InvalidSandboxSpec::TooManyWritablePaths { count: 65 })
        );
        assert_eq!(
            scoped(false, &refs[..MAX_WRITABLE_PATHS]).validate(),
            Ok(())
        );
    }

    #[test]
    fn writable_paths_default_to_empty_in_json() {
        let spec: SandboxSpec = serde_json::from_str(r#"{"read_only": true}"#).unwrap();
        assert!(spec.policy.writable_paths.is_empty());
        assert!(spec.policy.read_only);
        let spec: SandboxSpec = serde_json::from_str(r#"{"writable_paths": ["src"]}"#).unwrap();
        assert_eq!(spec.policy.writable_paths, ["src"]);
    }

    #[test]
    fn the_policy_stays_at_the_top_level_of_the_stored_json() {
        let spec = SandboxSpec {
            workspace: Some(PathBuf::from("/ws")),
            ..scoped(false, &["src"])
        };
        let json = serde_json::to_value(&spec).unwrap();
        let mut keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "allow_downgrade",
                "limits",
                "network",
                "read_only",
                "workspace",
                "writable_paths"
            ]
        );
        assert_eq!(json["writable_paths"], serde_json::json!(["src"]));
        let back: SandboxSpec = serde_json::from_value(json).unwrap();
        assert_eq!(back, spec);
    }
}
