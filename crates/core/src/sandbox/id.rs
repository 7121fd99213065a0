//! Sandbox identifiers.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Longest id accepted; ids name cgroups and the sandbox hostname (at most 64 bytes).
const MAX_LEN: usize = 64;

/// Names one sandbox. Only ASCII letters, digits, `-` and `_`, so an id is
/// always safe as a path component (cgroup directories) and as a hostname.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SandboxId(String);

#[derive(Debug, thiserror::Error)]
#[error("invalid sandbox id {0:?}: expected 1 to 64 ASCII letters, digits, '-' or '_'")]
pub struct InvalidSandboxId(pub String);

impl SandboxId {
    /// What [`Self::parse`] accepts, as a regular expression (the API
    /// document's pattern for sandbox ids).
    pub const PATTERN: &'static str = "^[A-Za-z0-9_-]{1,64}$";

    /// A fresh, unique, time-ordered id (`sb-` + UUIDv7 in hex).
    pub fn generate() -> Self {
        Self(format!("sb-{}", uuid::Uuid::now_v7().simple()))
    }

    pub fn parse(s: &str) -> Result<Self, InvalidSandboxId> {
        let valid = !s.is_empty()
            && s.len() <= MAX_LEN
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if valid {
            Ok(Self(s.to_owned()))
        } else {
            Err(InvalidSandboxId(s.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SandboxId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for SandboxId {
    type Error = InvalidSandboxId;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        Self::parse(&s)
    }
}

impl From<SandboxId> for String {
    fn from(id: SandboxId) -> Self {
        id.0
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for SandboxId {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::ids::id_schema(
            Self::PATTERN,
            "A sandbox id: 1 to 64 ASCII letters, digits, '-' or '_' (generated ones are sb- and 32 hex digits).",
            "sb-0192f5e0c1a47d2e9b3c4d5e6f708192",
        )
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for SandboxId {}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_valid_and_unique() {
        let a = SandboxId::generate();
        let b = SandboxId::generate();
        assert_ne!(a, b);
        assert_eq!(SandboxId::parse(a.as_str()).unwrap(), a);
        assert!(a.as_str().len() <= MAX_LEN);
    }

    #[test]
    fn refuses_ids_that_are_not_safe_path_components() {
        for bad in ["", "..", "a/b", "a b", "x\0", &"a".repeat(65)] {
            assert!(SandboxId::parse(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(serde_json::from_str::<SandboxId>("\"../etc\"").is_err());
        assert_eq!(
            serde_json::from_str::<SandboxId>("\"sb-1_A\"").unwrap(),
            SandboxId::parse("sb-1_A").unwrap()
        );
    }
}
