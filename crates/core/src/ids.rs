//! Typed identifiers of the control plane.
//!
//! Each id is `<prefix>_<UUIDv7 in lowercase hex>`: the prefix says what it names (a
//! session id can never be passed where a run id is expected, and a leaked id is
//! self-describing), and UUIDv7 makes ids sort by creation time, so listings can page
//! by id. Sandbox ids live in [`crate::sandbox::SandboxId`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Longest tenant id accepted.
const TENANT_MAX_LEN: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("invalid {kind} id {value:?}: expected {prefix}_ followed by 32 lowercase hex digits")]
    Prefixed {
        kind: &'static str,
        prefix: &'static str,
        value: String,
    },
    #[error(
        "invalid tenant id {value:?}: expected 1 to 64 lowercase ASCII letters, digits, '-' or '_'"
    )]
    Tenant { value: String },
}

macro_rules! prefixed_id {
    ($(#[$meta:meta])* $name:ident, $prefix:literal, $kind:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            pub const PREFIX: &'static str = $prefix;
            /// What [`Self::parse`] accepts, as a regular expression (the API
            /// document's pattern for this id).
            pub const PATTERN: &'static str = concat!("^", $prefix, "_[0-9a-f]{32}$");

            /// A fresh, unique, time-ordered id.
            pub fn generate() -> Self {
                Self(format!("{}_{}", $prefix, uuid::Uuid::now_v7().simple()))
            }

            pub fn parse(s: &str) -> Result<Self, IdError> {
                if is_prefixed_uuid(s, $prefix) {
                    Ok(Self(s.to_owned()))
                } else {
                    Err(IdError::Prefixed { kind: $kind, prefix: $prefix, value: s.to_owned() })
                }
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl FromStr for $name {
            type Err = IdError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;

            fn try_from(s: String) -> Result<Self, Self::Error> {
                Self::parse(&s)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                id_schema(
                    Self::PATTERN,
                    concat!("A ", $kind, " id: ", $prefix, "_ and 32 lowercase hex digits."),
                    concat!($prefix, "_0192f5e0c1a47d2e9b3c4d5e6f708192"),
                )
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::ToSchema for $name {}
    };
}

/// The OpenAPI schema of an id: a string that matches `pattern`.
#[cfg(feature = "openapi")]
pub(crate) fn id_schema(
    pattern: &str,
    description: &str,
    example: &str,
) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(pattern))
        .description(Some(description))
        .examples([example])
        .into()
}

fn is_prefixed_uuid(s: &str, prefix: &str) -> bool {
    let Some(hex) = s
        .strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('_'))
    else {
        return false;
    };
    hex.len() == 32
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

prefixed_id!(
    /// Names one workspace: the files an agent works on, owned by one tenant.
    WorkspaceId,
    "ws",
    "workspace"
);
prefixed_id!(
    /// Names one agent session.
    SessionId,
    "ses",
    "session"
);
prefixed_id!(
    /// Names one run of a session (a resume is a new run).
    RunId,
    "run",
    "run"
);
prefixed_id!(
    /// Names one workspace snapshot.
    SnapshotId,
    "snap",
    "snapshot"
);
prefixed_id!(
    /// Names one checkpoint of a session's workspace and history.
    CheckpointId,
    "ckpt",
    "checkpoint"
);
prefixed_id!(
    /// Names one goal of a session: what a run set out to achieve.
    GoalId,
    "goal",
    "goal"
);

prefixed_id!(
    /// Names one logged tool call.
    ToolInvocationId,
    "tool",
    "tool invocation"
);

prefixed_id!(
    /// Names one project memory record.
    MemoryId,
    "mem",
    "memory"
);

/// Names a tenant. Tenants come from configuration (each API token is scoped to
/// one), so the id is a short slug chosen by the operator, not a generated UUID.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TenantId(String);

impl TenantId {
    pub fn parse(s: &str) -> Result<Self, IdError> {
        let valid = !s.is_empty()
            && s.len() <= TENANT_MAX_LEN
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if valid {
            Ok(Self(s.to_owned()))
        } else {
            Err(IdError::Tenant {
                value: s.to_owned(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for TenantId {
    type Err = IdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl TryFrom<String> for TenantId {
    type Error = IdError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(&s)
    }
}

impl From<TenantId> for String {
    fn from(id: TenantId) -> Self {
        id.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_carry_their_prefix_and_round_trip() {
        let id = SessionId::generate();
        assert!(id.as_str().starts_with("ses_"), "{id}");
        assert_eq!(SessionId::parse(id.as_str()), Ok(id.clone()));
        assert_eq!(id.as_str().parse::<SessionId>(), Ok(id.clone()));
        assert_ne!(SessionId::generate(), id);
    }

    #[test]
    fn ids_sort_by_creation_time() {
        let a = RunId::generate();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = RunId::generate();
        assert!(a < b, "{a} should sort before {b}");
    }

    #[test]
    fn an_id_of_one_kind_is_refused_as_another() {
        let ws = WorkspaceId::generate();
        assert_eq!(
            SessionId::parse(ws.as_str()),
            Err(IdError::Prefixed {
                kind: "session",
                prefix: "ses",
                value: ws.to_string()
            })
        );
    }

    #[test]
    fn malformed_ids_are_refused() {
        let good = SnapshotId::generate().to_string();
        let upper = good.to_uppercase().replacen("SNAP", "snap", 1);
        for bad in [
            "",
            "snap_",
            "snap",
            &good[..good.len() - 1],
            &format!("{good}0"),
            &upper,
            &good.replace('_', "-"),
            "snap_../../etc/passwd0000000000000000",
        ] {
            assert!(SnapshotId::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn serde_validates_ids() -> Result<(), serde_json::Error> {
        let id = ToolInvocationId::generate();
        let json = serde_json::to_string(&id)?;
        assert_eq!(json, format!("\"{id}\""));
        assert_eq!(serde_json::from_str::<ToolInvocationId>(&json)?, id);
        assert!(serde_json::from_str::<ToolInvocationId>("\"tool_x\"").is_err());
        assert!(serde_json::from_str::<TenantId>("\"Acme Corp\"").is_err());
        Ok(())
    }

    /// PATTERN says what parse accepts (without a regex engine here: the
    /// pattern is checked against its one spelling, and parse against the
    /// cases that spelling admits and refuses).
    #[test]
    fn the_pattern_spells_what_parse_accepts() {
        assert_eq!(SessionId::PATTERN, "^ses_[0-9a-f]{32}$");
        assert_eq!(SnapshotId::PATTERN, "^snap_[0-9a-f]{32}$");
        assert!(SessionId::parse(&format!("ses_{}", "0a".repeat(16))).is_ok());
        assert!(SessionId::parse(&format!("ses_{}", "0A".repeat(16))).is_err());
        assert!(RunId::parse(&format!("run_{}", "9".repeat(31))).is_err());
    }

    #[test]
    fn tenant_ids_are_slugs() {
        assert_eq!(
            TenantId::parse("acme-1_x").map(String::from),
            Ok("acme-1_x".to_owned())
        );
        for bad in ["", "Acme", "a/b", "a b", &"a".repeat(65)] {
            assert!(TenantId::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
