//! What a sandbox's row keeps of its spec: the one shape of the `spec`
//! column, whoever started the sandbox (the sandbox API or an agent run).

use std::collections::BTreeMap;

use paddock_proto::SandboxPolicy;
use serde::{Deserialize, Serialize};

use crate::ids::SnapshotId;
use crate::sandbox::SandboxSpec;

/// The part of a sandbox's spec kept in its record (never a host path,
/// never a secret): its whole policy, and what the sandbox API adds. The
/// store writes it as JSON and reads it back typed: a row whose spec does
/// not read is corrupt (and quarantined), never shown with defaults.
///
/// The policy's fields sit at the top level of the row (flattened), as
/// they always have; a new policy field is recorded with no change here.
/// It reads the two shapes rows were written in before it existed: the
/// sandbox API's (these fields) and the runtime's (a whole [`SandboxSpec`],
/// whose workspace is ignored).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedSpec {
    /// What the sandbox was asked to be.
    #[serde(
        flatten,
        serialize_with = "row::write_policy",
        deserialize_with = "row::read_policy"
    )]
    pub policy: SandboxPolicy,
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
    /// What the expiry task does to it when idle, if the sandbox chose
    /// (None: the server's `on_idle`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_idle: Option<super::OnIdle>,
    /// The caller's labels (the sandbox API's `metadata`, E2B's too).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Environment every command in the sandbox starts with, beneath the
    /// command's own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

impl RecordedSpec {
    /// What `spec` says of the sandbox started from it; the sandbox API
    /// adds `restored_from`, `image` and `console`.
    pub fn of(spec: &SandboxSpec) -> Self {
        Self {
            policy: spec.policy.clone(),
            restored_from: None,
            image: None,
            console: false,
            on_idle: None,
            metadata: BTreeMap::new(),
            env: BTreeMap::new(),
        }
    }
}

/// How the policy sits in a row.
mod row {
    use paddock_proto::SandboxPolicy;
    use serde::de::Error as _;
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::{Map, Value};

    /// The policy fields every row has carried since the column existed:
    /// always written, and a row without one is corrupt (the readers before
    /// [`super::RecordedSpec`] showed defaults in its place). A field added
    /// to the policy later is missing from older rows and reads as its
    /// default, so this list never grows.
    const ALWAYS_WRITTEN: [&str; 3] = ["read_only", "network", "limits"];

    /// The policy's fields, leaving out those at their default that rows
    /// have never had to carry (as an empty write scope always was).
    pub(super) fn write_policy<S: Serializer>(
        policy: &SandboxPolicy,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let (Value::Object(mut fields), Value::Object(defaults)) = (
            serde_json::to_value(policy).map_err(S::Error::custom)?,
            serde_json::to_value(SandboxPolicy::default()).map_err(S::Error::custom)?,
        ) else {
            return Err(S::Error::custom("a sandbox policy is not a JSON object"));
        };
        fields.retain(|key, value| {
            ALWAYS_WRITTEN.contains(&key.as_str()) || defaults.get(key) != Some(value)
        });
        fields.serialize(serializer)
    }

    /// The policy from a row's fields (those the record itself does not
    /// name); every field of [`ALWAYS_WRITTEN`] must be there.
    pub(super) fn read_policy<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<SandboxPolicy, D::Error> {
        let fields = Map::<String, Value>::deserialize(deserializer)?;
        if let Some(missing) = ALWAYS_WRITTEN
            .iter()
            .find(|key| !fields.contains_key(**key))
        {
            return Err(D::Error::missing_field(missing));
        }
        SandboxPolicy::deserialize(Value::Object(fields)).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use paddock_proto::{DowngradeLayer, NetworkPolicy, SandboxLimits};

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
                policy: SandboxPolicy {
                    writable_paths: vec!["src".into()],
                    network: NetworkPolicy::Full,
                    ..SandboxPolicy::default()
                },
                restored_from: None,
                image: None,
                console: false,
                on_idle: None,
                metadata: Default::default(),
                env: Default::default(),
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

    const LIMITS: &str = r#"{"memory_bytes":268435456,"pids":64,"cpu_millis":500,"tmp_bytes":67108864,"open_files":1024,"workspace_bytes":null,"workspace_inodes":null}"#;

    fn limits() -> SandboxLimits {
        SandboxLimits {
            memory_bytes: Some(256 << 20),
            pids: Some(64),
            cpu_millis: Some(500),
            tmp_bytes: 64 << 20,
            open_files: 1024,
            workspace_bytes: None,
            workspace_inodes: None,
        }
    }

    /// Rows as the one writer wrote them before the record held the
    /// policy: they read as they were meant and are written back in the
    /// same shape.
    #[test]
    fn a_row_in_the_shape_written_so_far_reads_and_is_written_the_same() {
        let parent = SnapshotId::generate();
        let api = format!(
            r#"{{"read_only":true,"network":{{"allowlist":["example.com:443"]}},"limits":{LIMITS},"restored_from":"{parent}","image":"alpine:3","console":true}}"#
        );
        let scoped = format!(
            r#"{{"read_only":false,"writable_paths":["src"],"network":"none","limits":{LIMITS}}}"#
        );
        let cases = [
            (
                api,
                RecordedSpec {
                    policy: SandboxPolicy {
                        read_only: true,
                        network: serde_json::from_str(r#"{"allowlist":["example.com:443"]}"#)
                            .unwrap(),
                        limits: limits(),
                        ..SandboxPolicy::default()
                    },
                    restored_from: Some(parent.clone()),
                    image: Some("alpine:3".to_owned()),
                    console: true,
                    on_idle: None,
                    metadata: Default::default(),
                    env: Default::default(),
                },
            ),
            (
                scoped,
                RecordedSpec {
                    policy: SandboxPolicy {
                        writable_paths: vec!["src".to_owned()],
                        limits: limits(),
                        ..SandboxPolicy::default()
                    },
                    restored_from: None,
                    image: None,
                    console: false,
                    on_idle: None,
                    metadata: Default::default(),
                    env: Default::default(),
                },
            ),
        ];
        for (row, expected) in cases {
            let read: RecordedSpec = serde_json::from_str(&row).unwrap();
            assert_eq!(read, expected, "{row}");
            assert_eq!(
                serde_json::to_value(&read).unwrap(),
                serde_json::from_str::<serde_json::Value>(&row).unwrap(),
                "{row}"
            );
        }
    }

    #[test]
    fn a_policy_field_off_its_default_is_recorded_and_read_back() {
        let recorded = RecordedSpec::of(&SandboxSpec::default().map_policy(|policy| {
            policy.allow_downgrade = BTreeSet::from([DowngradeLayer::Landlock]);
        }));
        let json = serde_json::to_value(&recorded).unwrap();
        assert_eq!(json["allow_downgrade"], serde_json::json!(["landlock"]));
        assert_eq!(
            serde_json::from_value::<RecordedSpec>(json).unwrap(),
            recorded
        );
    }
}
