//! The embedded defaults `paddock run` and `paddock session` work on: the
//! SQLite store in the data dir (the same one `paddock serve` uses by
//! default), native sandboxes, the local blob store, and one tenant.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use paddock_core::ids::TenantId;
use paddock_core::model::Prices;
use paddock_core::sandbox::SandboxBackend;
use paddock_core::store::{Store, Tenant};
use paddock_runtime::{Runtime, RuntimeConfig, RuntimeDeps};
use paddock_sandbox::{NativeBackend, NativeConfig, locate_guest_bin};
use paddock_store::SqlStore;

use super::owner;
use crate::backend::Placement;
use crate::cli::{BackendArgs, DataDirArgs, EgressArgs, Layer};
use crate::owners::Role;

/// The tenant everything made on this machine without a server belongs to.
pub const LOCAL_TENANT: &str = "local";
/// Cgroup parent of the sandboxes of `paddock run`; apart from the server's
/// (`paddock/<node>`), so a server's crash reconciliation never touches them.
const CGROUP_PARENT: &str = "paddock-run";

#[derive(Debug)]
pub struct Local {
    pub store: Arc<dyn Store>,
    pub runtime: Arc<Runtime>,
    pub tenant: TenantId,
    /// This host's name, as lease owners of its `paddock run` processes carry it.
    pub host: String,
    /// The state directory it opened.
    pub data_dir: std::path::PathBuf,
}

/// Whether the command will start sandboxes (then the guest binary must exist).
/// Whether the command makes sandboxes here, and then how.
#[derive(Debug, Clone, Copy)]
pub enum Sandboxes<'a> {
    /// The backend, egress and the hardening layers allowed missing.
    Needed(&'a BackendArgs, &'a EgressArgs, &'a [Layer]),
    /// Reading sessions, runs or memory: a native backend never started.
    NotNeeded,
}

impl Local {
    pub async fn open(
        data: &DataDirArgs,
        sandboxes: Sandboxes<'_>,
        prices: Prices,
    ) -> anyhow::Result<Self> {
        let dir = &data.data_dir;
        for sub in ["", "workspaces", "tmp", "blobs"] {
            create_private_dir(&dir.join(sub))?;
        }
        let url = format!("sqlite://{}", dir.join("paddock.db").display());
        let store: Arc<dyn Store> = Arc::new(
            SqlStore::open(&url)
                .await
                .with_context(|| format!("opening the store in {}", dir.display()))?,
        );
        let tenant = TenantId::parse(LOCAL_TENANT)?;
        store
            .ensure_tenant(&Tenant {
                id: tenant.clone(),
                name: LOCAL_TENANT.to_owned(),
                created_at: store.now(),
            })
            .await?;

        let explicit = match sandboxes {
            Sandboxes::Needed(backend_args, _, _) => backend_args.guest_bin.as_deref(),
            Sandboxes::NotNeeded => None,
        };
        let guest_bin = match (locate_guest_bin(explicit), sandboxes) {
            (Ok(path), _) => path,
            (Err(err), Sandboxes::Needed(..)) => {
                return Err(err).context("locating the paddock-guest binary");
            }
            // Listing sessions makes no sandbox: a missing guest does not matter.
            (Err(_), Sandboxes::NotNeeded) => PathBuf::from("paddock-guest"),
        };
        let host = crate::serve::node_name(
            &std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default(),
        );
        let backend: Arc<dyn SandboxBackend> = match sandboxes {
            Sandboxes::Needed(backend_args, egress, _) => {
                // This process's own cgroup parent, node label and directory,
                // recorded so that the next command reaps them after a crash.
                let placement = Placement {
                    owns_workspaces: true,
                    ..crate::owners::claim(Role::Run, "run", backend_args, &dir.join("tmp"))?
                };
                crate::backend::connect(backend_args, egress.config(), None, None, &placement)
                    .await?
            }
            Sandboxes::NotNeeded => {
                let mut native = NativeConfig::new(guest_bin);
                native.cgroup_parent = CGROUP_PARENT.to_owned();
                native.temp_root = Some(dir.join("tmp"));
                Arc::new(NativeBackend::new(native))
            }
        };
        let blobs = paddock_snapshot::LocalBlobStore::open(dir.join("blobs"))
            .with_context(|| format!("opening the blob store under {}", dir.display()))?;
        let mut config = RuntimeConfig::new(owner::this_process(&host), dir.join("workspaces"));
        config.owner_probe = Some(Arc::new(owner::LocalProcesses { host: host.clone() }));
        config.prices = prices;
        if let Sandboxes::Needed(_, _, layers) = sandboxes {
            config.sandbox.policy.allow_downgrade = layers.iter().map(|l| (*l).into()).collect();
        }
        let runtime = Runtime::new(RuntimeDeps {
            store: store.clone(),
            backend,
            blobs: Arc::new(blobs),
            config,
        });
        Ok(Self {
            store,
            runtime,
            tenant,
            host,
            data_dir: dir.clone(),
        })
    }

    /// ` --data-dir DIR` for a command printed for the user to run, empty
    /// for the default directory.
    pub fn data_dir_flag(&self) -> String {
        if self.data_dir == std::path::Path::new(crate::cli::DEFAULT_DATA_DIR) {
            String::new()
        } else {
            format!(" --data-dir {}", self.data_dir.display())
        }
    }

    /// Records runs left unfinished by `paddock run` processes that died
    /// (their session lease expired, or their process is gone) as
    /// interrupted.
    pub async fn recover(&self) {
        match self.runtime.recover().await {
            Ok(report) if !report.interrupted.is_empty() => tracing::info!(
                runs = ?report.interrupted,
                "runs of an earlier paddock process recorded interrupted"
            ),
            Ok(_) => {}
            Err(err) => tracing::warn!(error = %err, "recovering unfinished runs"),
        }
    }

    pub async fn close(self) {
        self.store.close().await;
    }
}

fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))
}
