//! `paddock serve` under abuse, as a real process on loopback: readers that
//! never read, half-sent headers, too many connections. Each test reads the
//! server's own VmRSS from /proc. Needs root and `paddock-guest` built next
//! to `paddock`.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

mod bodies;
#[path = "../common/mod.rs"]
mod common;
mod connections;
mod disk;
mod forks;
mod queue;
mod runs;
mod storage;
mod support;
