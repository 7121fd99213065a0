//! Process tools the guest uses inside every sandbox: starting commands
//! ([`spawn`]), their terminals ([`pty`]), the agent's heap ([`heap`]) and
//! the single-thread proof every fork-like clone needs ([`threads`]).

pub mod heap;
pub mod pty;
pub mod spawn;
pub(crate) mod threads;
