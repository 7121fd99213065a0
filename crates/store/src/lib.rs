//! The control plane's [`Store`](paddock_core::store::Store) on sqlx: SQLite (one
//! file in WAL mode, the embedded default) and Postgres (shared by several
//! orchestrator nodes), chosen by the database URL.
//!
//! Both engines run the same runtime-checked SQL through sqlx's `Any` driver;
//! where they differ (transaction start, row locks) [`Engine`] says how. Migrations
//! under `migrations/{sqlite,postgres}` are compiled in and applied by
//! [`SqlStore::open`].

mod checkpoints;
mod compactions;
mod deletion;
mod engine;
mod error;
mod events;
mod fence;
mod goals;
mod leases;
mod memories;
mod messages;
mod migrations;
mod network_changes;
mod open;
mod plans;
mod port;
mod probe;
mod quarantine;
mod records;
mod rows;
mod runs;
mod sessions;
mod snapshots;
mod steering;
mod tools;
mod usage;
mod volume_snapshots;
mod volumes;

pub use engine::Engine;
pub use open::{SqlStore, StoreOptions};
