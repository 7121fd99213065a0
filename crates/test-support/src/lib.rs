//! What the scenario tests and benchmarks of several crates set up the same
//! way: a store (a SQLite file, or any database URL), a tenant in it, the
//! native sandbox backend with its temporary workspaces and cgroup parent,
//! and a local blob store. The runtime's tests and benches and the API's
//! tests build their `Runtime` / services over one [`Stack`].
//!
//! [`require`] is the one rule for a test whose prerequisite (Postgres, a
//! backend, the browser, loop devices) is missing: skip, or fail where the
//! run requires it.
//!
//! [`model_server`] is a local model endpoint that speaks OpenAI's streaming
//! wire format from a script and records what it was asked.
//!
//! Sandboxes need `paddock-guest` built first and root (or
//! `PADDOCK_UNCONFINED=1` against the unconfined guest, where a caller opts
//! in with [`StackConfig::unconfined`]).

pub mod disk_use;
pub mod loop_fs;
pub mod model_server;
pub mod require;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use paddock_core::blob::BlobStore;
use paddock_core::ids::TenantId;
use paddock_core::sandbox::SandboxBackend;
use paddock_core::store::{Store, Tenant};
use paddock_sandbox::{NativeBackend, NativeConfig, locate_guest_bin};
use paddock_snapshot::LocalBlobStore;
use paddock_store::SqlStore;

/// Where a [`Stack`] keeps its parts.
#[derive(Debug, Clone)]
pub struct StackConfig {
    /// `sqlite://FILE` or a Postgres URL.
    pub database_url: String,
    /// The native backend's temporary workspaces (created if missing).
    pub sandboxes_dir: PathBuf,
    /// The local blob store's directory.
    pub blobs_dir: PathBuf,
    /// The cgroup parent of the sandboxes, so concurrent test runs never
    /// reap each other's.
    pub cgroup_parent: String,
    /// Run sandboxes without the jail (PADDOCK_UNCONFINED=1 only).
    pub unconfined: bool,
}

impl StackConfig {
    /// Everything under `dir`: SQLite in `dir/paddock.db`, temporary
    /// workspaces in `dir/sandboxes`, blobs in `dir/blobs`; unconfined when
    /// `PADDOCK_UNCONFINED=1`.
    pub fn in_dir(dir: &Path, cgroup_parent: &str) -> Self {
        Self {
            database_url: format!("sqlite://{}", dir.join("paddock.db").display()),
            sandboxes_dir: dir.join("sandboxes"),
            blobs_dir: dir.join("blobs"),
            cgroup_parent: cgroup_parent.to_owned(),
            unconfined: unconfined_from_env(),
        }
    }
}

/// `PADDOCK_UNCONFINED=1`: sandboxes without the jail, for hosts without root.
pub fn unconfined_from_env() -> bool {
    std::env::var("PADDOCK_UNCONFINED").is_ok_and(|v| v == "1")
}

/// A store, the native backend and a blob store, opened from a [`StackConfig`].
#[derive(Debug, Clone)]
pub struct Stack {
    pub store: Arc<dyn Store>,
    pub backend: Arc<dyn SandboxBackend>,
    pub blobs: Arc<dyn BlobStore>,
}

impl Stack {
    pub async fn open(config: &StackConfig) -> Result<Self> {
        let backend = native_backend(config)?;
        let store: Arc<dyn Store> = Arc::new(
            SqlStore::open(&config.database_url)
                .await
                .context("opening the store")?,
        );
        let blobs = LocalBlobStore::open(&config.blobs_dir)
            .with_context(|| format!("opening the blob store {}", config.blobs_dir.display()))?;
        Ok(Self {
            store,
            backend: Arc::new(backend),
            blobs: Arc::new(blobs),
        })
    }

    /// Records the tenant `id` (named `name`) if it is not there yet.
    pub async fn tenant(&self, id: &str, name: &str) -> Result<TenantId> {
        let id = TenantId::parse(id).with_context(|| format!("tenant id {id:?}"))?;
        self.store
            .ensure_tenant(&Tenant {
                id: id.clone(),
                name: name.to_owned(),
                created_at: self.store.now(),
            })
            .await
            .with_context(|| format!("recording tenant {id}"))?;
        Ok(id)
    }
}

/// The native backend of `config` alone (its sandboxes directory created),
/// for tests that drive sandboxes without a store.
pub fn native_backend(config: &StackConfig) -> Result<NativeBackend> {
    let guest_bin = locate_guest_bin(None)
        .context("paddock-guest must be built first: cargo build -p paddock-guest")?;
    std::fs::create_dir_all(&config.sandboxes_dir)
        .with_context(|| format!("creating {}", config.sandboxes_dir.display()))?;
    let mut native = NativeConfig::new(guest_bin);
    native.temp_root = Some(config.sandboxes_dir.clone());
    native.cgroup_parent = config.cgroup_parent.clone();
    native.unconfined = config.unconfined;
    Ok(NativeBackend::new(native))
}
