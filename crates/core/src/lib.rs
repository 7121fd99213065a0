//! Domain types and the port traits every adapter implements.
//!
//! Adapters (sandbox backends, stores, model providers, blob stores) depend on
//! this crate, never on each other; only the `paddock` binary names concrete
//! implementations.

pub mod blob;
pub mod ids;
pub mod model;
pub mod sandbox;
pub mod settings;
pub mod store;
pub mod volume;
