//! What the proxy decided for each connection: reported to the backend
//! (which turns them into events and rows) over a bounded channel.

use serde::{Deserialize, Serialize};

/// One egress decision. Carries no payload and no header, so no secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressDecision {
    pub allowed: bool,
    /// The name or IP literal the sandbox asked for.
    pub host: String,
    pub port: u16,
    /// How the sandbox reached the proxy: `connect`, `http`, `transparent`
    /// or `dns`.
    pub via: String,
    /// Why it was denied (None when allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Bytes from the sandbox to the destination and back.
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub duration_ms: u64,
}

/// How many decisions wait for the backend before new ones are dropped
/// (counted in the log, never blocking a connection).
pub const DECISION_QUEUE: usize = 1024;
