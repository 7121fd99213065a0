//! Snapshots, checkpoints and the blob store, one module per area, in one
//! test binary.

// as when each test file included it under its own allow
#[allow(clippy::unwrap_used)]
mod common;

mod blob_store;
mod capture;
mod checkpoint;
mod fork;
mod hostile;
mod limits;
mod manifest;
mod memory;
mod roundtrip;
