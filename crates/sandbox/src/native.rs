//! The native backend: a sandbox is `paddock-guest jail` (the jail monitor)
//! and the guest it starts inside fresh namespaces.

mod backend;
mod guest_bin;
mod jail_spec;
mod orphans;
mod sandbox;

pub use backend::{NativeBackend, NativeConfig};
pub use guest_bin::{GUEST_BIN_ENV, LocateGuestError, locate_guest_bin};
pub use sandbox::NativeSandbox;
