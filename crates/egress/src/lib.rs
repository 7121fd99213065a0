//! The host-side egress of a sandbox with network (`allowlist` or `full`).
//! Each sandbox gets its own network namespace, made and owned by the host
//! ([`netns`]). With `allowlist` its only way out is this proxy: its sockets
//! are bound inside that namespace while the proxy itself runs in the
//! host's, so every connection the sandbox makes arrives here and leaves
//! from here. With `full` the namespace is routed out through the host with
//! NAT ([`nat`]: TCP, UDP, ICMP), the address guard applied to its packets
//! by host filter rules; the DNS at 127.0.0.1 inside relays to the
//! operator's resolver, and the explicit proxy stays for secrets. Its
//! connections and the guard's refusals are decisions too, read from
//! netlink (`nat/log/`: NFLOG and conntrack events).
//!
//! Per connection: the policy is checked against the name or IP literal the
//! sandbox asked for, the proxy resolves the name itself, the address guard
//! ([`guard`]) refuses every special-purpose range (one table with the NAT's
//! rules), the host's own addresses and the networks it is directly
//! connected to (unless the operator listed the address), and only then it
//! connects. Every decision is reported ([`EgressDecision`]).

mod decision;
#[cfg(test)]
mod doc_check;
pub mod guard;
mod guarded;
pub mod nat;
pub mod netns;
mod proxy;
pub mod tap;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use paddock_proto::NetworkPolicy;
use serde::{Deserialize, Serialize};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::{JoinHandle, JoinSet};

pub use decision::{DECISION_QUEUE, EgressDecision};
pub use nat::{Nat, NatPool};
pub use netns::{Netns, Source as NetnsSource};
pub use paddock_proto::{PROXY_ENV, PROXY_URL};
pub use proxy::live::PolicyChange;
pub use proxy::resolve::Resolver;
pub use proxy::tls::{SYSTEM_BUNDLE, TlsSetupError};
pub use tap::VmLink;

use proxy::connect::{Ctx, Shared};
use proxy::{dns, http, secrets, tls, transparent};

/// The operator's egress settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EgressConfig {
    /// Where the proxy resolves names.
    #[serde(default)]
    pub resolver: Resolver,
    /// Private addresses the guard lets through (an internal registry);
    /// only these, and only when the policy allows the destination too.
    #[serde(default)]
    pub allowed_private: Vec<IpAddr>,
    /// How long one connect to a destination may take.
    #[serde(default = "default_connect_timeout", with = "millis")]
    pub connect_timeout: Duration,
    /// At most this many connections of one sandbox at once; more wait.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// PEM files of CAs trusted for the upstreams of intercepted
    /// connections (secrets' hosts), besides the system's.
    #[serde(default)]
    pub extra_roots: Vec<PathBuf>,
    /// The IPv4 range `full` sandboxes take their /30 from; it must not
    /// overlap a route of the host (checked at start).
    #[serde(default)]
    pub nat_pool: NatPool,
}

fn default_connect_timeout() -> Duration {
    Duration::from_secs(10)
}

fn default_max_connections() -> usize {
    256
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

impl Default for EgressConfig {
    fn default() -> Self {
        Self {
            resolver: Resolver::System,
            allowed_private: Vec::new(),
            connect_timeout: default_connect_timeout(),
            max_connections: default_max_connections(),
            extra_roots: Vec::new(),
            nat_pool: NatPool::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    #[error("egress for a sandbox with network none")]
    NoEgress,
    #[error("setting up the sandbox network namespace: `{command}` failed: {detail}")]
    Namespace { command: String, detail: String },
    #[error("setting up TLS interception for the sandbox's secrets")]
    Tls(#[source] tls::TlsSetupError),
    #[error(
        "the NAT pool {pool} of network full overlaps the host's route `{route}`: name another with --egress-nat-pool"
    )]
    NatPoolCollides { pool: String, route: String },
    #[error("the NAT pool {pool} of network full has no free /30 left")]
    NatPoolFull { pool: String },
    #[error("taking the host's NAT lock {path}")]
    NatLock {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("turning on IPv4 forwarding for network full")]
    Forwarding {
        #[source]
        source: std::io::Error,
    },
    #[error("reading the decisions of network full: {step}")]
    NatLog {
        step: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("changing the network of sandbox {sandbox_id}")]
    Change {
        sandbox_id: String,
        #[source]
        source: paddock_proto::NetworkChangeRefused,
    },
    #[error("changing the network of sandbox {sandbox_id}")]
    InvalidChange {
        sandbox_id: String,
        #[source]
        source: paddock_proto::InvalidNetworkPolicy,
    },
    #[error("binding the egress proxy's sockets inside {path}")]
    Bind {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The egress of one running sandbox: its namespace and proxy tasks. Stop
/// it with [`Egress::stop`] once the sandbox is gone.
#[derive(Debug)]
pub struct Egress {
    netns: Option<Netns>,
    /// `full`: the host side of its routed way out.
    nat: Option<Nat>,
    /// `full`: what reads its connections and refusals as decisions.
    nat_log: Option<nat::log::Watcher>,
    tasks: Vec<JoinHandle<()>>,
    /// The sandbox's CA certificate when it has secrets.
    ca_pem: Option<String>,
    sandbox_id: String,
    /// The proxy's policy and open connections ([`Egress::set_policy`]).
    live: Arc<proxy::live::Live>,
}

/// A sandbox's own CA, made before its namespace when the sandbox must be
/// given the bundle first (a container's bind mount): pass it to
/// [`Egress::start_in`].
#[derive(Debug)]
pub struct SandboxCa(tls::Interceptor);

impl SandboxCa {
    /// The CA of a sandbox with `secrets` (None without: nothing is
    /// intercepted).
    pub fn for_secrets(
        sandbox_id: &str,
        secrets: &[paddock_proto::SecretSpec],
        config: &EgressConfig,
    ) -> Result<Option<Self>, EgressError> {
        if secrets.is_empty() {
            return Ok(None);
        }
        tls::Interceptor::new(sandbox_id, &config.extra_roots)
            .map(|i| Some(Self(i)))
            .map_err(EgressError::Tls)
    }

    /// The certificate (PEM) the sandbox must trust.
    pub fn pem(&self) -> String {
        self.0.ca_pem()
    }
}

struct Sockets {
    proxy: std::net::TcpListener,
    transparent: std::net::TcpListener,
    dns: std::net::UdpSocket,
}

impl Egress {
    /// Makes the namespace and starts the proxy in it. Decisions go to the
    /// returned receiver (bounded: [`DECISION_QUEUE`]; when it is full new
    /// ones are dropped and counted, connections never wait for it).
    ///
    /// `owner` tags the host's NAT rules of a `full` sandbox so that only
    /// this owner's reconciliation ([`nat::reap`]) removes them.
    pub async fn start(
        sandbox_id: &str,
        owner: &str,
        policy: NetworkPolicy,
        secrets: Vec<paddock_proto::SecretSpec>,
        config: EgressConfig,
    ) -> Result<(Self, mpsc::Receiver<EgressDecision>), EgressError> {
        Self::start_in(
            sandbox_id,
            owner,
            policy,
            secrets,
            config,
            NetnsSource::Create,
            None,
        )
        .await
    }

    /// [`Egress::start`] in the namespace `source` names (a container's,
    /// see [`NetnsSource::Attach`]), with the CA made beforehand when the
    /// sandbox needed its bundle first (else made here for `secrets`).
    pub async fn start_in(
        sandbox_id: &str,
        owner: &str,
        policy: NetworkPolicy,
        secrets: Vec<paddock_proto::SecretSpec>,
        config: EgressConfig,
        source: NetnsSource,
        ca: Option<SandboxCa>,
    ) -> Result<(Self, mpsc::Receiver<EgressDecision>), EgressError> {
        if !policy.has_egress() {
            return Err(EgressError::NoEgress);
        }
        let interceptor = match ca {
            Some(SandboxCa(interceptor)) => Some(interceptor),
            None => SandboxCa::for_secrets(sandbox_id, &secrets, &config)?.map(|ca| ca.0),
        };
        let ca_pem = interceptor.as_ref().map(tls::Interceptor::ca_pem);
        let routed = policy == NetworkPolicy::Full;
        let (netns, nat, log) = if routed {
            // The socket first: the rules name the NFLOG group it bound.
            let log = nat::log::NatLog::open(nat::seed(sandbox_id)).await?;
            let netns = Netns::prepare(sandbox_id, true, source).await?;
            match Nat::attach(
                &netns,
                sandbox_id,
                owner,
                &config.nat_pool,
                &config.allowed_private,
                log.group(),
            )
            .await
            {
                Ok(nat) => (netns, Some(nat), Some(log)),
                Err(e) => {
                    netns.remove().await;
                    return Err(e);
                }
            }
        } else {
            (Netns::prepare(sandbox_id, false, source).await?, None, None)
        };
        let path = netns.path();
        let sockets = match bind_inside(path.clone()).await {
            Ok(sockets) => sockets,
            Err(e) => {
                if let Some(nat) = nat {
                    nat.detach().await;
                }
                netns.remove().await;
                return Err(e);
            }
        };
        let (tx, rx) = mpsc::channel(DECISION_QUEUE);
        let limit = Arc::new(Semaphore::new(config.max_connections.max(1)));
        let ctx: Shared = Arc::new(Ctx::new(
            sandbox_id.to_owned(),
            policy,
            config,
            tx,
            secrets::Secrets::new(secrets),
            interceptor,
        ));
        let bind_err = |source| EgressError::Bind {
            path: path.clone(),
            source,
        };
        let proxy = TcpListener::from_std(sockets.proxy).map_err(bind_err)?;
        let transparent = TcpListener::from_std(sockets.transparent).map_err(bind_err)?;
        let dns_socket = UdpSocket::from_std(sockets.dns).map_err(bind_err)?;
        let live = ctx.live.clone();
        let nat_log = match (log, nat.as_ref()) {
            (Some(log), Some(nat)) => Some(log.watch(ctx.clone(), nat.sandbox_address)),
            _ => None,
        };
        let tasks = vec![
            tokio::spawn(accept(proxy, ctx.clone(), limit.clone(), |c, s| {
                Box::pin(http::serve(c, s))
            })),
            tokio::spawn(accept(transparent, ctx.clone(), limit, |c, s| {
                Box::pin(transparent::serve(c, s))
            })),
            tokio::spawn(dns::serve(ctx, dns_socket)),
        ];
        Ok((
            Self {
                netns: Some(netns),
                nat,
                nat_log,
                tasks,
                ca_pem,
                sandbox_id: sandbox_id.to_owned(),
                live,
            },
            rx,
        ))
    }

    /// The CA certificate (PEM) the sandbox must trust: present when it has
    /// secrets, whose hosts' TLS the proxy terminates.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// `full`: the sandbox's own address on its routed veth.
    pub fn nat_address(&self) -> Option<Ipv4Addr> {
        self.nat.as_ref().map(|n| n.sandbox_address)
    }

    /// The policy the proxy applies now.
    pub fn policy(&self) -> NetworkPolicy {
        NetworkPolicy::clone(&self.live.policy())
    }

    /// Replaces the policy while the sandbox runs: connections from now on
    /// are checked against `policy` (DNS answers too), and every open one
    /// it refuses (a CONNECT tunnel, a transparent relay, an intercepted
    /// TLS connection) is cut at once. Only an allowlist becomes another
    /// ([`NetworkPolicy::change_to`] says why); a secret keeps its hosts,
    /// so one whose host left the list is no longer put in anywhere.
    pub fn set_policy(&self, policy: NetworkPolicy) -> Result<PolicyChange, EgressError> {
        policy
            .validate()
            .map_err(|source| EgressError::InvalidChange {
                sandbox_id: self.sandbox_id.clone(),
                source,
            })?;
        self.live
            .policy()
            .change_to(&policy)
            .map_err(|source| EgressError::Change {
                sandbox_id: self.sandbox_id.clone(),
                source,
            })?;
        let change = self.live.swap(policy);
        tracing::info!(
            sandbox_id = %self.sandbox_id,
            from = %change.old.label(),
            to = %self.live.policy().label(),
            cut = change.cut.len(),
            "egress policy changed"
        );
        Ok(change)
    }

    /// The namespace the sandbox joins.
    pub fn netns_path(&self) -> Option<PathBuf> {
        self.netns.as_ref().map(Netns::path)
    }

    /// Stops the proxy (closing every connection) and removes the namespace.
    pub async fn stop(mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
        // Before the rules go: the last refusals and connections.
        if let Some(log) = self.nat_log.take() {
            log.finish().await;
        }
        if let Some(nat) = self.nat.take() {
            nat.detach().await;
        }
        if let Some(netns) = self.netns.take() {
            netns.remove().await;
        }
    }
}

impl Drop for Egress {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

type Handler =
    fn(Shared, TcpStream) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

async fn accept(listener: TcpListener, ctx: Shared, limit: Arc<Semaphore>, handler: Handler) {
    // Dropping this task (Egress::stop) drops the set and aborts every
    // connection in it.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let Ok(permit) = limit.clone().acquire_owned().await else { return };
                let _ = stream.set_nodelay(true);
                let ctx = ctx.clone();
                connections.spawn(async move {
                    handler(ctx, stream).await;
                    drop(permit);
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Binds the proxy's sockets inside the sandbox's namespace, from a thread
/// of its own that joins it and then ends (a thread of the runtime's pool
/// must never change namespace).
async fn bind_inside(path: PathBuf) -> Result<Sockets, EgressError> {
    let for_thread = path.clone();
    let joined = tokio::task::spawn_blocking(move || {
        std::thread::spawn(move || -> std::io::Result<Sockets> {
            let ns = std::fs::File::open(&for_thread)?;
            nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET)?;
            let local = |port| SocketAddr::from(([127, 0, 0, 1], port));
            let proxy = std::net::TcpListener::bind(local(netns::PROXY_PORT))?;
            let transparent = std::net::TcpListener::bind(local(netns::TRANSPARENT_PORT))?;
            let dns = std::net::UdpSocket::bind(local(53))?;
            for s in [&proxy, &transparent] {
                s.set_nonblocking(true)?;
            }
            dns.set_nonblocking(true)?;
            Ok(Sockets {
                proxy,
                transparent,
                dns,
            })
        })
        .join()
    })
    .await;
    let bound = match joined {
        Ok(Ok(bound)) => bound,
        Ok(Err(_)) | Err(_) => Err(std::io::Error::other("the binding thread panicked")),
    };
    bound.map_err(|source| EgressError::Bind { path, source })
}
