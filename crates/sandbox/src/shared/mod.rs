//! What the backends share: one way a start ends (committed, or torn down
//! in one place) and the sandbox's info it makes, the guest's stderr tail,
//! the workspace of a sandbox whose guest runs as an unprivileged uid
//! (containers and microVMs), what a sandbox with network gets from the
//! host's egress proxy, and the host state every reaper reads, and the state file of a sandbox saved whole. No
//! backend borrows another's module.

pub(crate) mod egress;
pub(crate) mod host;
pub(crate) mod network;
pub(crate) mod saved_state;
pub(crate) mod start;
pub(crate) mod stderr;
pub(crate) mod volume_mounts;
pub(crate) mod workspace;
