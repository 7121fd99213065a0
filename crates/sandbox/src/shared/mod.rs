//! What the backends share: the guest's stderr tail, the workspace of a
//! sandbox whose guest runs as an unprivileged uid (containers and
//! microVMs), and the host state every reaper reads. No backend borrows
//! another's module.

pub(crate) mod host;
pub(crate) mod stderr;
pub(crate) mod workspace;
