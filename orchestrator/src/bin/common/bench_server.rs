//! An in-process API server for the benches that time requests through it:
//! a native backend, a SQLite store in a temporary directory and the HTTP
//! API on a free port of 127.0.0.1, with one tenant and its token.
// Each bench binary includes this file (`#[path]`) and uses part of it.
#![allow(dead_code)]

use std::sync::Arc;

use anyhow::{Context, bail};
use paddock_api::http::HttpOptions;
use paddock_api::{SandboxService, ServiceConfig, Tokens};
use paddock_core::ids::TenantId;
use paddock_core::store::Store;
use paddock_sandbox::{NativeBackend, NativeConfig, locate_guest_bin};
use paddock_store::SqlStore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The running server; [`BenchServer::stop`] ends it and removes its cgroups.
pub struct BenchServer {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    pub token: String,
    /// The server's backend, for the benches' direct paths.
    pub backend: Arc<NativeBackend>,
    store: Arc<dyn Store>,
    shutdown: CancellationToken,
    server: JoinHandle<std::io::Result<()>>,
    cgroup_parent: String,
    _data: tempfile::TempDir,
}

impl BenchServer {
    pub async fn start() -> anyhow::Result<Self> {
        let data = tempfile::tempdir()?;
        let node = format!("bench-{}", std::process::id());
        let guest_bin = locate_guest_bin(None).context("build paddock-guest first")?;
        let mut native = NativeConfig::new(guest_bin);
        let cgroup_parent = format!("paddock/{node}");
        native.cgroup_parent = cgroup_parent.clone();
        native.temp_root = Some(data.path().to_path_buf());
        let backend = Arc::new(NativeBackend::new(native));
        let url = format!("sqlite://{}", data.path().join("paddock.db").display());
        let store: Arc<dyn Store> = Arc::new(SqlStore::open(&url).await?);
        let tenant = TenantId::parse("bench")?;
        let token = "bench-token-0123456789".to_owned();
        let tokens = Tokens::new(vec![(token.clone(), tenant.clone())])?;
        let shutdown = CancellationToken::new();
        let config = ServiceConfig::new(node, data.path().join("workspaces"));
        let service = SandboxService::new(
            store.clone(),
            backend.clone() as Arc<dyn paddock_core::sandbox::SandboxBackend>,
            config,
            shutdown.child_token(),
        );
        service.register_tenants(&[tenant]).await?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let server = tokio::spawn(paddock_api::run(
            listener,
            service,
            tokens,
            HttpOptions::default(),
            shutdown.clone(),
        ));
        Ok(Self {
            base,
            token,
            backend,
            store,
            shutdown,
            server,
            cgroup_parent,
            _data: data,
        })
    }

    pub async fn stop(self) -> anyhow::Result<()> {
        self.shutdown.cancel();
        self.server.await??;
        self.store.close().await;
        for hierarchy in std::fs::read_dir("/sys/fs/cgroup")
            .into_iter()
            .flatten()
            .flatten()
        {
            let _ = std::fs::remove_dir(hierarchy.path().join(&self.cgroup_parent));
        }
        Ok(())
    }
}

/// `--iterations N` or nothing (`default`); refuses anything else.
pub fn parse_iterations(default: usize, usage: &str) -> anyhow::Result<usize> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok(default),
        [flag, n] if flag == "--iterations" => {
            let n: usize = n.parse().context("--iterations takes a number")?;
            if n == 0 {
                bail!("--iterations must be more than 0");
            }
            Ok(n)
        }
        _ => bail!("unknown arguments {args:?}\n{usage}"),
    }
}
