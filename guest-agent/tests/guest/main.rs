//! The guest agent's tests over a socketpair, one module per area, in one
//! test binary.

mod common;

mod exec;
mod files;
mod processes;
mod protocol;
mod pty;
mod snapshot;
