//! The HTTP API's scenarios against a real server, one module per area,
//! in one test binary.

#[macro_use]
mod common;

mod admission;
mod floor;
mod history;
mod leaks;
mod lifetime;
mod memory;
mod names;
mod network;
mod pause;
mod ports;
mod quarantine;
mod quotas;
mod requests;
mod run_queue;
mod scenarios;
mod sessions;
mod snapshots;
mod steering;
mod storage;
mod terminal;
mod volume_snapshots;
mod volumes;
mod workspace_quota;
