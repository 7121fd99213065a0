//! Linux hardening primitives for the native sandbox.
//!
//! Sync code only, and the one crate of the workspace allowed `unsafe`
//! (every block carries a `// SAFETY:` comment). [`enter`] is called by
//! `paddock-guest` in a fresh, single-threaded process and turns it into a
//! sandbox: namespaces -> mounts -> pivot_root -> cgroup -> rlimits -> caps ->
//! no_new_privs -> landlock -> seccomp.
#![allow(unsafe_code)]

mod spec;

pub use spec::{IdMapping, JailSpec, Layer, Limits};

use paddock_proto::Enforcement;

#[derive(Debug, thiserror::Error)]
pub enum JailError {
    #[error("jail setup is not implemented yet")]
    NotImplemented,
}

/// Turns the calling process into a sandbox.
///
/// Must be called from a fresh single-threaded process (the guest's `main`,
/// before any thread exists). The calling process becomes the *monitor*: it
/// clones the sandbox init into new namespaces, writes its id maps, waits for it
/// and exits with its status; it never returns from this call. The cloned
/// sandbox init returns `Ok` with what is really enforced, hardened and ready to
/// serve. An `Err` means a layer could not be applied and the caller did not
/// allow that downgrade: the caller must report it and exit.
pub fn enter(spec: &JailSpec) -> Result<Enforcement, JailError> {
    let _ = spec;
    Err(JailError::NotImplemented)
}
