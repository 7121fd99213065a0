//! A real server for the API scenarios: the HTTP API on 127.0.0.1:0 over the
//! service, a SQLite file (or the Postgres of PADDOCK_TEST_POSTGRES_URL) and
//! the native backend with real jailed sandboxes. Needs root and
//! `paddock-guest` built (`cargo build -p paddock-guest`).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod events;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use paddock_api::http::HttpOptions;
use paddock_api::service::ServiceConfig;
use paddock_api::{SandboxService, Tokens};
use paddock_core::ids::TenantId;
use paddock_core::store::Store;
use paddock_test_support::{Stack, StackConfig};
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub const POSTGRES_ENV: &str = paddock_test_support::require::POSTGRES_URL;

/// Which database a scenario runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Db {
    Sqlite,
    Postgres,
}

impl Db {
    /// Whether this database is there to run `test` on: Postgres is when
    /// PADDOCK_TEST_POSTGRES_URL is set; without it the variant is SKIPPED
    /// with the reason, or fails where the run requires Postgres
    /// (`paddock_test_support::require`).
    pub fn available(self, test: &str) -> Result<bool> {
        match self {
            Db::Sqlite => Ok(true),
            Db::Postgres => Ok(paddock_test_support::require::postgres_url(&format!(
                "{test} [postgres]"
            ))?
            .is_some()),
        }
    }
}

/// Runs a scenario `async fn name(db: Db) -> Result<()>` on SQLite and on
/// Postgres (skipped, or failed where required, without PADDOCK_TEST_POSTGRES_URL).
#[macro_export]
macro_rules! on_both_databases {
    ($($name:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() -> anyhow::Result<()> {
                    super::$name($crate::common::Db::Sqlite).await
                }
            )+
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() -> anyhow::Result<()> {
                    if !$crate::common::Db::Postgres.available(stringify!($name))? {
                        return Ok(());
                    }
                    super::$name($crate::common::Db::Postgres).await
                }
            )+
        }
    };
}

/// A short unique slug for tenants and nodes, so tests sharing one Postgres
/// database (and one host) never see each other's rows or sandboxes.
pub fn unique(prefix: &str) -> String {
    let id = uuid_like();
    format!("{prefix}-{id}")
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    format!("{:x}{:x}{n}", std::process::id(), nanos % 0xffff_ffff)
}

/// Two tenants with one token each.
#[derive(Debug, Clone)]
pub struct Tenants {
    pub a: TenantId,
    pub a_token: String,
    pub b: TenantId,
    pub b_token: String,
}

impl Tenants {
    pub fn new() -> Self {
        Self {
            a: TenantId::parse(&unique("acme")).unwrap(),
            a_token: format!("tok-a-{}", unique("x")),
            b: TenantId::parse(&unique("globex")).unwrap(),
            b_token: format!("tok-b-{}", unique("x")),
        }
    }

    fn tokens(&self) -> Tokens {
        Tokens::new(vec![
            (self.a_token.clone(), self.a.clone()),
            (self.b_token.clone(), self.b.clone()),
        ])
        .unwrap()
    }
}

/// What a server is started with; the same setup restarts it on the same data.
#[derive(Debug, Clone)]
pub struct Setup {
    pub db: Db,
    pub data_dir: PathBuf,
    pub node: String,
    pub tenants: Tenants,
    pub idle_timeout: Duration,
    pub max_lifetime: Duration,
    pub max_body_bytes: usize,
    /// The tenants' disk quota; None: the server's default.
    pub disk_quota: Option<u64>,
    /// Checkpoints a session keeps; None: the runtime's default.
    pub max_checkpoints: Option<u32>,
    /// The service's quotas; None: the built-in ones (node totals from the host).
    pub quotas: Option<paddock_api::service::Quotas>,
    /// Model endpoints a run may name besides the providers' own (a local
    /// scripted model server).
    pub model_base_urls: Vec<String>,
    /// The node's sandbox limit; None: the server's default.
    pub max_sandboxes: Option<usize>,
    /// The runtime's subagent limits; None: its defaults.
    pub subagents: Option<paddock_runtime::SubagentSettings>,
    /// The caps on a run's steering; None: the defaults.
    pub steering: Option<paddock_runtime::SteeringSettings>,
    /// The bound on a run request's budgets; None: the default.
    pub budget_max: Option<paddock_core::store::Budgets>,
    /// What a run that finds no slot does; None: the default (refused).
    pub queue: Option<paddock_runtime::QueueSettings>,
    /// Host-based port routing's domain; None: off.
    pub ports_domain: Option<String>,
    /// Size of the volume pool (`<data>/volumes`); None: no volume host.
    pub volume_pool_bytes: Option<u64>,
    /// The network bounds of tenants' requests; None: the default.
    pub network: Option<paddock_proto::NetworkBounds>,
    /// What becomes of an idle sandbox.
    pub on_idle: paddock_api::service::OnIdle,
}

impl Setup {
    pub fn new(db: Db, data_dir: &Path) -> Self {
        Self {
            db,
            data_dir: data_dir.to_path_buf(),
            node: unique("node"),
            tenants: Tenants::new(),
            idle_timeout: Duration::from_secs(30 * 60),
            max_lifetime: Duration::from_secs(24 * 60 * 60),
            max_body_bytes: 1 << 20,
            disk_quota: None,
            max_checkpoints: None,
            quotas: None,
            model_base_urls: Vec::new(),
            max_sandboxes: None,
            subagents: None,
            steering: None,
            budget_max: None,
            queue: None,
            ports_domain: None,
            volume_pool_bytes: None,
            network: None,
            on_idle: paddock_api::service::OnIdle::Stop,
        }
    }

    pub fn database_url(&self) -> String {
        match self.db {
            Db::Sqlite => format!("sqlite://{}", self.data_dir.join("paddock.db").display()),
            Db::Postgres => std::env::var(POSTGRES_ENV).unwrap_or_default(),
        }
    }

    /// The cgroup parent this node's sandboxes live under.
    pub fn cgroup_parent(&self) -> String {
        format!("paddock-api-test/{}", self.node)
    }

    /// The store, sandboxes and blob store of this server's data directory.
    pub fn stack(&self) -> StackConfig {
        StackConfig {
            database_url: self.database_url(),
            sandboxes_dir: self.data_dir.join("tmp"),
            blobs_dir: self.data_dir.join("blobs"),
            cgroup_parent: self.cgroup_parent(),
            unconfined: false,
        }
    }
}

pub struct TestServer {
    pub url: String,
    pub setup: Setup,
    pub service: Arc<SandboxService>,
    pub agents: Arc<paddock_api::service::AgentService>,
    pub store: Arc<dyn Store>,
    pub reconciled: paddock_api::service::ReconcileReport,
    http: reqwest::Client,
    shutdown: CancellationToken,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    pub async fn start(setup: Setup) -> Result<Self> {
        let Stack {
            store,
            backend,
            blobs,
        } = Stack::open(&setup.stack()).await?;
        let mut config = ServiceConfig::new(setup.node.clone(), setup.data_dir.join("workspaces"));
        config.idle_timeout = setup.idle_timeout;
        config.on_idle = setup.on_idle;
        config.max_lifetime = setup.max_lifetime;
        if let Some(quota) = setup.disk_quota {
            config.tenant_disk_quota = quota;
        }
        config.blobs = Some(Arc::clone(&blobs));
        if let Some(bytes) = setup.volume_pool_bytes {
            config.volumes = Some(Arc::new(paddock_sandbox::volumes::BtrfsVolumes::new(
                setup.data_dir.join("volumes"),
                bytes,
            )));
        }
        if let Some(quotas) = setup.quotas {
            config.quotas = quotas;
        }
        if let Some(max) = setup.max_sandboxes {
            config.max_sandboxes = max;
        }
        if let Some(network) = setup.network.clone() {
            config.network = network;
        }
        let shutdown = CancellationToken::new();
        let service = SandboxService::new(
            store.clone(),
            backend.clone(),
            config,
            shutdown.child_token(),
        );
        let reconciled = service.reconcile().await?;
        let tokens = setup.tenants.tokens();
        service.register_tenants(&tokens.tenants()).await?;
        // Runs of the agent service: same store, backend and blob store.
        let run_backends = paddock_api::service::Backends::single(backend.clone());
        // Runs get the sandboxes the service gives (as `paddock serve` does),
        // admitted against the same quotas.
        let mut runtime_config = paddock_runtime::RuntimeConfig::new(
            setup.node.clone(),
            setup.data_dir.join("workspaces"),
        );
        runtime_config.volumes = service.config().volumes.clone();
        runtime_config.sandbox.policy.limits = service.config().limits.default.clone();
        if let Some(subagents) = setup.subagents {
            runtime_config.subagents = subagents;
        }
        if let Some(steering) = setup.steering {
            runtime_config.steering = steering;
        }
        if let Some(max) = setup.budget_max {
            runtime_config.budget_max = max;
        }
        if let Some(queue) = setup.queue {
            runtime_config.queue = queue;
        }
        if let Some(max) = setup.max_checkpoints {
            runtime_config.storage.max_checkpoints_per_session = max;
        }
        let runtime = paddock_runtime::Runtime::new(paddock_runtime::RuntimeDeps {
            store: store.clone(),
            backend,
            blobs,
            config: runtime_config,
        });
        runtime.recover().await?;
        let agents = paddock_api::service::AgentService::new(
            runtime,
            paddock_api::service::ModelPolicy {
                allowed_base_urls: setup.model_base_urls.clone(),
                scratch_dir: Some(setup.data_dir.join("tmp")),
                context_window: None,
            },
            run_backends,
            paddock_api::service::SecretCatalog::default(),
            paddock_runtime::Drivers::default(),
            service.clone(),
            shutdown.child_token(),
        );
        // as `paddock serve` does: the runs a stop left queued wait again
        agents.take_up_queued().await?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let ports_domain = setup
            .ports_domain
            .as_deref()
            .map(paddock_api::http::PortsDomain::parse)
            .transpose()?;
        let options = HttpOptions {
            max_body_bytes: setup.max_body_bytes,
            ports_domain,
            ..HttpOptions::default()
        };
        let services = paddock_api::Services {
            sandboxes: service.clone(),
            agents: Some(agents.clone()),
        };
        let task = tokio::spawn(paddock_api::run(
            listener,
            services,
            tokens,
            options,
            shutdown.clone(),
        ));
        Ok(Self {
            url,
            setup,
            service,
            agents,
            store,
            reconciled,
            http: reqwest::Client::new(),
            shutdown,
            task: Some(task),
        })
    }

    /// A request as tenant a.
    pub fn a(&self, method: Method, path: &str) -> RequestBuilder {
        self.request(method, path)
            .bearer_auth(&self.setup.tenants.a_token)
    }

    /// A request as tenant b.
    pub fn b(&self, method: Method, path: &str) -> RequestBuilder {
        self.request(method, path)
            .bearer_auth(&self.setup.tenants.b_token)
    }

    /// A request with no token.
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.http.request(method, format!("{}{path}", self.url))
    }

    /// Creates a sandbox as tenant a; answers its id.
    pub async fn create_sandbox(&self, body: Value) -> Result<String> {
        let (status, json) = send(self.a(Method::POST, "/v1/sandboxes").json(&body)).await?;
        if status != StatusCode::CREATED {
            bail!("creating a sandbox: {status} {json}");
        }
        Ok(json["id"].as_str().context("no id")?.to_owned())
    }

    /// Graceful stop: every sandbox destroyed and recorded stopped.
    pub async fn stop(mut self) -> Result<Setup> {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            task.await??;
        }
        self.store.close().await;
        remove_node_cgroup_dirs(&self.setup.cgroup_parent());
        Ok(self.setup.clone())
    }

    /// A crash as far as this process can fake one: the server task is
    /// aborted and the service dropped without its shutdown, so records stay
    /// `running` (dropping the sandbox handles still kills their processes).
    pub async fn crash(mut self) -> Setup {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
        // Ends the expiry task (which holds the service) without running the
        // service's shutdown: the service and its sandbox handles just drop.
        self.shutdown.cancel();
        self.store.close().await;
        self.setup.clone()
    }
}

/// Removes this node's (empty) cgroup parent directories, so test runs leave
/// nothing in the hierarchies; a directory still in use is left alone.
pub fn remove_node_cgroup_dirs(parent: &str) {
    for hierarchy in std::fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
    {
        let _ = std::fs::remove_dir(hierarchy.path().join(parent));
    }
}

/// Sends and decodes a JSON answer (Value::Null for an empty body).
pub async fn send(request: RequestBuilder) -> Result<(StatusCode, Value)> {
    let response: Response = request.send().await?;
    let status = response.status();
    let bytes = response.bytes().await?;
    let json = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .with_context(|| format!("{status}: not JSON: {}", String::from_utf8_lossy(&bytes)))?
    };
    Ok((status, json))
}

/// Polls `GET /v1/runs/{id}` until the run ended (or waits for the user);
/// fails past `within`.
pub async fn wait_run_ended(server: &TestServer, id: &str, within: Duration) -> Result<Value> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let (status, run) = send(server.a(reqwest::Method::GET, &format!("/v1/runs/{id}"))).await?;
        anyhow::ensure!(status == StatusCode::OK, "{status} {run}");
        if matches!(
            run["state"].as_str(),
            Some("completed" | "cancelled" | "failed" | "interrupted" | "awaiting_user")
        ) {
            return Ok(run);
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "run {id} did not end within {within:?}: {run}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Asserts an error answer: status and code.
pub async fn expect_error(
    request: RequestBuilder,
    status: StatusCode,
    code: &str,
) -> Result<Value> {
    let (got, json) = send(request).await?;
    assert_eq!(got, status, "{json}");
    assert_eq!(json["error"]["code"], code, "{json}");
    assert!(
        json["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{json}"
    );
    Ok(json)
}

/// Host pids of the `paddock-guest` processes (monitors and inits) of the
/// sandboxes under `cgroup_parent`, zombies excluded. Their command line
/// names the parent only by its owner tag (no host path or cgroup in argv).
pub fn guest_processes(cgroup_parent: &str) -> Vec<u32> {
    let needle = format!("--owner\0{}", paddock_sandbox::owner_tag(cgroup_parent));
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let text = String::from_utf8_lossy(&cmdline);
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            text.contains("paddock-guest") && text.contains(needle.as_str()) && !zombie
        })
        .collect()
}

/// Sandbox cgroup directories left under `parent` in any hierarchy.
pub fn cgroups_under(parent: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(hierarchies) = std::fs::read_dir("/sys/fs/cgroup") else {
        return found;
    };
    for hierarchy in hierarchies.filter_map(Result::ok) {
        let dir = hierarchy.path().join(parent);
        if let Ok(entries) = std::fs::read_dir(&dir) {
            found.extend(
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
    }
    found
}

/// Waits up to `timeout` for `check` to hold.
pub async fn eventually(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
