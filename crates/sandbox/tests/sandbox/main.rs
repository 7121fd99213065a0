//! The sandbox backends and the guest client, one module per area, in one
//! test binary.

mod client;
mod native;
mod ports;
mod snapshot;
