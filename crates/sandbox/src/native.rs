//! The native backend: a sandbox is `paddock-guest jail` (the jail monitor)
//! and the guest it starts inside fresh namespaces.

mod backend;
mod guest_bin;
mod jail_spec;
pub(crate) mod orphans;
mod sandbox;
mod stderr;

pub use backend::{NativeBackend, NativeConfig};
pub use guest_bin::{GUEST_BIN_ENV, LocateGuestError, locate_guest_bin};
pub use orphans::owner_tag;
pub use sandbox::NativeSandbox;
pub(crate) use stderr::{StderrTail, forward as forward_stderr};
