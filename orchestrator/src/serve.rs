//! `paddock serve`: composes the store, the enabled sandbox backends, the sandbox
//! service and the agent runtime, reconciles after a crash (leftover
//! sandboxes removed, unfinished runs recorded interrupted), and serves the
//! HTTP API until SIGTERM or SIGINT, then cancels the runs in progress and
//! destroys every sandbox it runs.

mod config;

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use paddock_api::http::HttpOptions;
use paddock_api::service::{AgentService, BackendEntry, Backends, ModelPolicy};
use paddock_api::{SandboxService, Services, Tokens};
use paddock_core::blob::BlobStore;
use paddock_core::sandbox::{SandboxBackend, SandboxPolicy, SandboxSpec};
use paddock_core::store::Store;
use paddock_runtime::{Runtime, RuntimeConfig, RuntimeDeps};
use paddock_sandbox::WarmPool;
use paddock_store::SqlStore;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::agent::EXIT_USAGE;
use crate::backend::Placement;
use crate::cli::{BackendArgs, ServeArgs};
use crate::logging;
use config::{Checked, ServeConfig, TOKENS_ENV};
pub(crate) use config::{WarmPoolArg, node_name};

pub async fn serve(args: ServeArgs, backend_args: &BackendArgs) -> anyhow::Result<u8> {
    // A bad config file, token list or node name is a usage error (exit 2),
    // not a failure of paddock (125).
    let Configured {
        config,
        checked,
        tokens,
        node,
        mut service_config,
        sections,
    } = match configure(&args, backend_args) {
        Ok(configured) => configured,
        Err(err) => {
            logging::note(format_args!("paddock: {err:#}"));
            return Ok(EXIT_USAGE);
        }
    };

    let data = &args.data.data_dir;
    for dir in [
        data.clone(),
        data.join("workspaces"),
        data.join("tmp"),
        data.join("blobs"),
    ] {
        create_private_dir(&dir)?;
    }
    let database = args
        .database
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", data.join("paddock.db").display()));
    let store: Arc<dyn Store> = Arc::new(SqlStore::open(&database).await?);

    // Its own cgroup parent (native) or node label (containers) per node:
    // reconciliation then removes only what this node left, even with
    // other paddock processes on the host.
    let placement = Placement {
        node: node.clone(),
        cgroup_parent: format!("paddock/{node}"),
        temp_root: Some(data.join("tmp")),
        owns_workspaces: true,
        stream_limits: checked.streams.clone(),
        id_pool: config.id_pool,
        saves_sandboxes: true,
    };
    let root = CancellationToken::new();
    // A tenant may be given network full: its NAT pool must not shadow a
    // route of this host (fail at start, not at the first sandbox).
    if service_config.network.max == paddock_proto::NetworkPolicy::Full
        && backend_args.kind() == crate::backend::BackendKind::Native
        && !backend_args.unconfined
    {
        let pool = args.egress.config().nat_pool;
        if let Err(err) = pool.check_against_host().await {
            logging::note(format_args!(
                "paddock: {} (or forbid it with [network] max)",
                paddock_proto::error_chain(&err)
            ));
            return Ok(EXIT_USAGE);
        }
    }
    // Recorded before any sandbox is made, so that any later command reaps
    // what this server leaves if it is killed.
    let kinds: Vec<_> = sections.iter().map(|s| (s.kind, s.image.clone())).collect();
    crate::owners::claim_server(
        &placement,
        &kinds,
        backend_args,
        &service_config.saved_states_root,
    )
    .await;
    let (backends, backend, pools) = enable_backends(
        backend_args,
        args.egress.config(),
        &sections,
        config.backend,
        &placement,
        &service_config,
    )
    .await?;
    let blobs: Arc<dyn BlobStore> = Arc::new(
        paddock_snapshot::LocalBlobStore::open(data.join("blobs"))
            .with_context(|| format!("opening the blob store under {}", data.display()))?,
    );
    service_config.blobs = Some(blobs.clone());
    // Made (and mounted again after a restart) on first use: a host that
    // cannot hold it refuses volumes, never makes one without its quota.
    service_config.volumes = Some(Arc::new(paddock_sandbox::volumes::BtrfsVolumes::new(
        data.join("volumes"),
        config
            .volume_pool_bytes
            .unwrap_or(paddock_sandbox::volumes::DEFAULT_POOL_BYTES),
    )));
    // Runs get the sandboxes the operator configured for the API's.
    let mut runtime_config = RuntimeConfig::new(node.clone(), data.join("workspaces"));
    runtime_config.prices = checked.prices;
    runtime_config.storage = checked.storage;
    runtime_config.snapshot = checked.snapshot;
    runtime_config.budget_max = checked.budget_max;
    runtime_config.steering = checked.steering;
    runtime_config.queue = checked.queue;
    runtime_config.network = service_config.network.clone();
    runtime_config.volumes = service_config.volumes.clone();
    runtime_config.sandbox = SandboxSpec::with_policy(SandboxPolicy {
        limits: service_config.limits.default.clone(),
        allow_downgrade: service_config.allow_downgrade.clone(),
        ..SandboxPolicy::default()
    });
    // A run names its backend among the same ones as a sandbox request,
    // and its secrets among the same operator's secrets.
    let run_backends = backends.clone();
    let run_secrets = service_config.secrets.clone();
    let service = SandboxService::new(store.clone(), backends, service_config, root.child_token());
    let report = service.reconcile().await?;
    if !report.lost.is_empty() || !report.orphans.is_empty() {
        tracing::warn!(
            lost = report.lost.len(),
            processes_killed = report.orphans.processes_killed.len(),
            sandboxes_removed = report.orphans.sandboxes_removed.len(),
            "reconciled after an unclean stop"
        );
    }
    // Only now: what a pool is starting must not look like an orphan.
    for pool in &pools {
        pool.fill();
    }
    service.register_tenants(&tokens.tenants()).await?;
    let runtime = Runtime::new(RuntimeDeps {
        store: store.clone(),
        backend,
        blobs,
        config: runtime_config,
    });
    let recovered = runtime.recover().await?;
    if !recovered.interrupted.is_empty() || !recovered.skipped.is_empty() {
        tracing::warn!(
            interrupted = ?recovered.interrupted,
            skipped = ?recovered.skipped,
            "runs left unfinished by an unclean stop"
        );
    }
    let models = ModelPolicy {
        allowed_base_urls: config.model_base_urls.clone(),
        scratch_dir: Some(data.join("tmp")),
        context_window: config.model_context_window,
    };
    let agents = AgentService::new(
        runtime,
        models,
        run_backends,
        run_secrets,
        config.drivers.drivers(),
        service.clone(),
        root.child_token(),
    );
    // runs a stop left queued wait again (or fail, naming why they cannot)
    agents.take_up_queued().await?;

    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let address = listener.local_addr()?;
    // Scripts and tests read this line to find a port chosen by the kernel.
    println!("paddock: listening on http://{address} (node {node})");
    tracing::info!(%address, node, engine = store.engine(), "serving");
    tokio::spawn(stop_on_signal(root.clone()));

    let connections = checked.connections;
    raise_fd_limit(connections.max_connections);
    // Signed port URLs outlive a restart: their key stays in the data dir.
    let port_url_key = paddock_api::http::PortUrlKey::load_or_create(&data.join("port-url.key"))?;
    let options = HttpOptions {
        max_body_bytes: checked.max_body_bytes,
        connections,
        port_url_key: Some(port_url_key),
        ports_domain: checked.ports_domain,
    };
    let services = Services {
        sandboxes: service,
        agents: Some(agents),
    };
    paddock_api::run(listener, services, tokens, options, root).await?;
    store.close().await;
    tracing::info!("stopped");
    Ok(0)
}

/// Connects every backend of `sections` (a warm pool, not yet filling, in
/// front of those that ask for one); answers the set, the default backend
/// itself, which runs (and their subagents) start their sandboxes with, and
/// the pools.
async fn enable_backends(
    backend_args: &BackendArgs,
    egress: paddock_egress::EgressConfig,
    sections: &[config::BackendSection],
    default: Option<crate::backend::BackendKind>,
    placement: &Placement,
    service_config: &paddock_api::service::ServiceConfig,
) -> anyhow::Result<(Backends, Arc<dyn SandboxBackend>, Vec<Arc<WarmPool>>)> {
    let mut entries = Vec::new();
    let mut raw = Vec::new();
    let mut pools = Vec::new();
    for section in sections {
        let backend = crate::backend::connect(
            backend_args,
            egress.clone(),
            Some(section.kind),
            section.image.as_deref(),
            placement,
        )
        .await?;
        raw.push((section.kind, backend.clone()));
        let served: Arc<dyn SandboxBackend> = if section.warm_pool > 0 {
            let network = match &section.warm_pool_network {
                Some(raw) => {
                    let network: paddock_proto::NetworkPolicy = raw
                        .parse()
                        .with_context(|| format!("warm_pool_network of {}", section.kind.name()))?;
                    service_config.network.check(&network).with_context(|| {
                        format!(
                            "warm_pool_network of {}: beyond [network] max",
                            section.kind.name()
                        )
                    })?;
                    network
                }
                None => paddock_proto::NetworkPolicy::None,
            };
            let pool = Arc::new(WarmPool::new(
                backend,
                service_config.default_sandbox_spec_on(network),
                section.warm_pool,
            ));
            pools.push(pool.clone());
            pool
        } else {
            backend
        };
        tracing::info!(backend = section.kind.name(), image = ?section.image, warm_pool = section.warm_pool, "backend enabled");
        entries.push(BackendEntry::new(served, section.image.clone()));
    }
    let backends = Backends::new(entries, default.map(|k| k.name()))?;
    let default_kind = default
        .or(sections.first().map(|s| s.kind))
        .context("no backend is enabled")?;
    let backend = raw
        .into_iter()
        .find(|(kind, _)| *kind == default_kind)
        .map(|(_, backend)| backend)
        .context("the default backend is not enabled")?;
    Ok((backends, backend, pools))
}

/// The config file and what it sets, checked, with the tokens, the node
/// name and the backends to enable: every mistake in them is found here,
/// before anything is opened.
struct Configured {
    config: ServeConfig,
    checked: Checked,
    tokens: Tokens,
    node: String,
    service_config: paddock_api::service::ServiceConfig,
    sections: Vec<config::BackendSection>,
}

fn configure(args: &ServeArgs, backend_args: &BackendArgs) -> anyhow::Result<Configured> {
    let config = ServeConfig::load(args.config.as_deref())?;
    let checked = config.check()?;
    let tokens = config.tokens(std::env::var(TOKENS_ENV).ok().as_deref())?;
    let node = match args.node.as_ref().or(config.node.as_ref()) {
        Some(name) if node_name(name) == *name => name.clone(),
        Some(name) => bail!("node name {name:?}: use lowercase letters, digits, '-' and '_'"),
        None => {
            node_name(&std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default())
        }
    };
    let service_config =
        config.service_config(node.clone(), args.data.data_dir.join("workspaces"))?;
    let sections = config.backend_sections(
        backend_args.kind(),
        backend_args.image.as_deref(),
        &args.warm_pool,
    )?;
    Ok(Configured {
        config,
        checked,
        tokens,
        node,
        service_config,
        sections,
    })
}

async fn stop_on_signal(root: CancellationToken) {
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot listen for SIGTERM/SIGINT; stop the server with SIGKILL");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
        _ = int.recv() => tracing::info!("SIGINT: shutting down"),
    }
    root.cancel();
}

/// Lifts the soft descriptor limit to the hard one: past it accepts fail and
/// every client waits, where the connection cap refuses cheaply instead.
fn raise_fd_limit(max_connections: usize) {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok(limits) => limits,
        Err(err) => {
            tracing::warn!(error = %err, "reading RLIMIT_NOFILE");
            return;
        }
    };
    let mut limit = soft;
    if soft < hard {
        match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => limit = hard,
            Err(err) => tracing::warn!(error = %err, soft, hard, "raising RLIMIT_NOFILE"),
        }
    }
    // Sandboxes, the store and the guests' sockets need descriptors too.
    let needed = max_connections as u64 + 1024;
    if limit < needed {
        tracing::warn!(
            limit,
            max_connections,
            "the descriptor limit is below the connection cap plus headroom; lower http.max_connections"
        );
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
