//! What a sandbox's row keeps of its spec: the one shape of the `spec`
//! column, whoever started the sandbox (the sandbox API or an agent run).

use paddock_proto::{NetworkPolicy, SandboxLimits};
use serde::{Deserialize, Serialize};

use crate::ids::SnapshotId;
use crate::sandbox::SandboxSpec;

/// The part of a sandbox's spec kept in its record (never a host path,
/// never a secret). The store writes it as JSON and reads it back typed: a
/// row whose spec does not read is corrupt (and quarantined), never shown
/// with defaults.
///
/// It reads the two shapes rows were written in before it existed: the
/// sandbox API's (these fields) and the runtime's (a whole [`SandboxSpec`]
/// without its workspace, whose other fields are ignored).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedSpec {
    /// The workspace is read-only inside the sandbox.
    pub read_only: bool,
    /// The write scope of a build subagent's sandbox (empty: `read_only`
    /// alone decides).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable_paths: Vec<String>,
    pub network: NetworkPolicy,
    pub limits: SandboxLimits,
    /// The snapshot the sandbox's workspace was restored from: the parent
    /// of the snapshots taken in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_from: Option<SnapshotId>,
    /// The container image (docker and gvisor sandboxes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// A console sandbox (kept alive by its page).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub console: bool,
}

impl RecordedSpec {
    /// What `spec` says of the sandbox started from it; the sandbox API
    /// adds `restored_from`, `image` and `console`.
    pub fn of(spec: &SandboxSpec) -> Self {
        Self {
            read_only: spec.policy.read_only,
            writable_paths: spec.policy.writable_paths.clone(),
            network: spec.policy.network.clone(),
            limits: spec.policy.limits.clone(),
            restored_from: None,
            image: None,
            console: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_keeps_what_the_record_shows_and_no_host_path() {
        let spec = SandboxSpec {
            workspace: Some("/srv/ws".into()),
            ..SandboxSpec::default()
        }
        .map_policy(|policy| {
            policy.read_only = false;
            policy.writable_paths = vec!["src".into()];
            policy.network = NetworkPolicy::Full;
        });
        let recorded = RecordedSpec::of(&spec);
        assert_eq!(
            recorded,
            RecordedSpec {
                read_only: false,
                writable_paths: vec!["src".into()],
                network: NetworkPolicy::Full,
                limits: SandboxLimits::default(),
                restored_from: None,
                image: None,
                console: false,
            }
        );
        let json = serde_json::to_string(&recorded).unwrap();
        assert!(!json.contains("/srv/ws"), "{json}");
        assert_eq!(
            serde_json::from_str::<RecordedSpec>(&json).unwrap(),
            recorded
        );
    }

    #[test]
    fn a_spec_without_its_required_fields_does_not_read() {
        for bad in [
            "{}",
            "[1, 2]",
            r#"{"read_only": true, "network": "none"}"#,
            "not json",
        ] {
            assert!(serde_json::from_str::<RecordedSpec>(bad).is_err(), "{bad}");
        }
    }
}
