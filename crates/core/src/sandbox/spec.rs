//! What a caller asks of a sandbox, and what it got.

use std::collections::BTreeSet;
use std::path::PathBuf;

use paddock_proto::{
    DowngradeLayer, InvalidSandboxSpec, NetworkPolicy, SandboxLimits, check_writable_paths,
};
use serde::{Deserialize, Serialize};

use super::SandboxId;

/// A request for one sandbox.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSpec {
    /// Host directory mounted at /workspace. None: the backend makes a fresh
    /// empty directory and removes it when the sandbox is destroyed.
    #[serde(default)]
    pub workspace: Option<PathBuf>,
    /// The workspace is read-only inside the sandbox (mounts and landlock).
    #[serde(default)]
    pub read_only: bool,
    /// A write scope. Empty: `read_only` alone decides. Otherwise the
    /// workspace is read-only except these paths (directories or files,
    /// relative to the workspace root, normalized: see
    /// [`SandboxSpec::validate`]), which stay writable, enforced by mounts
    /// and landlock. Each must be a real directory or regular file reached
    /// without any symlink, or missing: then a path ending in `/` or whose
    /// last name has no extension is created as a directory, one with an
    /// extension as an empty file (owned by the
    /// workspace owner; [`paddock_proto::MissingScopePath`]). Otherwise the
    /// sandbox does not start. Contradicts `read_only`.
    #[serde(default)]
    pub writable_paths: Vec<String>,
    #[serde(default)]
    pub network: NetworkPolicy,
    #[serde(default)]
    pub limits: SandboxLimits,
    /// Hardening layers the operator allows to be missing; any other layer
    /// that cannot be applied fails the sandbox.
    #[serde(default)]
    pub allow_downgrade: BTreeSet<DowngradeLayer>,
    /// Secrets injected at egress (only placeholders inside). Never
    /// serialized: the spec is stored, the values must not be.
    #[serde(skip)]
    pub secrets: Vec<paddock_proto::SecretSpec>,
}

impl SandboxSpec {
    /// Checks what can be checked without the workspace
    /// ([`paddock_proto::check_writable_paths`]: each writable path is
    /// relative to the workspace root and normalized, there are at most
    /// [`super::MAX_WRITABLE_PATHS`], and `read_only` is not asked together with
    /// them). Whether the paths are safe on disk is the backend's check when
    /// it starts the sandbox.
    pub fn validate(&self) -> Result<(), InvalidSandboxSpec> {
        check_writable_paths(&self.writable_paths, self.read_only)?;
        self.network.validate().map_err(InvalidSandboxSpec::Network)
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
        SandboxSpec {
            read_only,
            writable_paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            ..SandboxSpec::default()
        }
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
        assert!(spec.writable_paths.is_empty());
        let spec: SandboxSpec = serde_json::from_str(r#"{"writable_paths": ["src"]}"#).unwrap();
        assert_eq!(spec.writable_paths, ["src"]);
    }
}
