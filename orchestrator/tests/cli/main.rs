//! The `paddock` binary's scenarios, one module per area, in one test
//! binary (linking one statically linked binary per file cost CI more than
//! running them). `reap` and `abuse` keep binaries of their own: a reap test
//! must be the only one running paddock commands while it looks at a killed
//! owner's leftovers, and the abuse tests raise the process's RLIMIT_NOFILE.

#[path = "../common/mod.rs"]
mod common;

mod backends;
mod client;
mod console;
mod crash;
mod port_forward;
mod remote;
mod resume_faults;
mod run;
mod shell;
mod steer;
