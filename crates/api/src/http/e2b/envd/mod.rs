//! envd, the agent E2B's SDKs talk to inside a sandbox, served by
//! `paddock serve` on the sandbox's own operations: the request names the
//! sandbox in `E2b-Sandbox-Id` and carries its access token in
//! `X-Access-Token` (`super::auth`).

pub mod connect;
pub mod files;
pub mod filesystem;
pub mod filesystem_pb;
pub mod json;
pub mod paths;
pub mod process;
pub mod process_pb;
