//! Long-lived sandboxes behind one service, and the HTTP API that fronts it.
//!
//! [`service::SandboxService`] owns running sandboxes (their handles here,
//! their records in the [`Store`](paddock_core::store::Store)), expires idle
//! and too-old ones, destroys them on request and at shutdown, and reconciles
//! after a crash. [`service::AgentService`] fronts the agent runtime for
//! tenants: sessions, runs, and their event streams. [`http`] is the axum
//! front end under `/v1`; the `paddock` binary composes them with a concrete
//! store and backend (`paddock serve`).
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod http;
pub mod service;
pub mod text;

pub use http::{ApiError, HttpOptions, Services, Tokens, router, run};
pub use service::{SandboxService, ServiceConfig, ServiceError};
