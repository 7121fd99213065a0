//! The one path every proxied connection takes: policy first, then the
//! proxy's own resolution, the address guard on each answer, and a bounded
//! connect; then the bytes are spliced and the decision recorded.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use paddock_proto::{NetworkPolicy, Target};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use crate::guard::{self, HostNetworks};
use crate::proxy::dns::FakeNames;
use crate::proxy::live::{Live, Registration};
use crate::proxy::secrets::Secrets;
use crate::proxy::tls::Interceptor;
use crate::{EgressConfig, EgressDecision};

/// Why a connection was not made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The policy or the address guard refused it (a 403).
    Denied(String),
    /// Allowed, but the destination could not be reached (a 502).
    Unreachable(String),
}

impl Refusal {
    pub(crate) fn reason(&self) -> &str {
        match self {
            Refusal::Denied(r) | Refusal::Unreachable(r) => r,
        }
    }
}

/// What the proxy of one sandbox shares between its listeners.
#[derive(Debug)]
pub(crate) struct Ctx {
    pub(crate) sandbox_id: String,
    /// The policy (swapped by a change) and the open connections.
    pub(crate) live: Arc<Live>,
    pub(crate) config: EgressConfig,
    pub(crate) host_networks: HostNetworks,
    pub(crate) names: FakeNames,
    pub(crate) secrets: Secrets,
    /// Present when there are secrets: their hosts' connections are intercepted.
    pub(crate) interceptor: Option<Interceptor>,
    decisions: mpsc::Sender<EgressDecision>,
    dropped: AtomicU64,
}

impl Ctx {
    pub(crate) fn new(
        sandbox_id: String,
        policy: NetworkPolicy,
        config: EgressConfig,
        decisions: mpsc::Sender<EgressDecision>,
        secrets: Secrets,
        interceptor: Option<Interceptor>,
    ) -> Self {
        Self {
            sandbox_id,
            live: Arc::new(Live::new(policy)),
            config,
            host_networks: HostNetworks::default(),
            names: FakeNames::default(),
            secrets,
            interceptor,
            decisions,
            dropped: AtomicU64::new(0),
        }
    }

    /// The policy now (a change swaps it; see [`Live`]).
    pub(crate) fn policy(&self) -> Arc<NetworkPolicy> {
        self.live.policy()
    }

    /// Checks the policy, resolves, guards and connects. The connection
    /// is registered (before the check) until the returned registration
    /// is dropped: a change that refuses it cuts it.
    pub(crate) async fn open(
        &self,
        target: &Target,
        port: u16,
    ) -> Result<(TcpStream, Registration), Refusal> {
        let registration = self.live.register(target, port);
        let policy = self.policy();
        if !policy.allows(target, port) {
            return Err(Refusal::Denied(format!(
                "{target}:{port} is not allowed by the sandbox's network policy ({})",
                policy.label()
            )));
        }
        let stream = self.connect(target, port).await?;
        Ok((stream, registration))
    }

    async fn connect(&self, target: &Target, port: u16) -> Result<TcpStream, Refusal> {
        let addresses: Vec<IpAddr> = match target {
            Target::Ip(ip) => vec![*ip],
            Target::Name(name) => self
                .config
                .resolver
                .lookup(name)
                .await
                .map_err(|e| Refusal::Unreachable(format!("resolving {name}: {e}")))?,
        };
        let host = self.host_networks.current();
        let mut last = None;
        for ip in addresses {
            if let Some(why) = guard::refusal(ip, &host, &self.config.allowed_private) {
                // A name's real address is not told (the sandbox learns
                // no internal address from a refusal); the log has it.
                let reason = match target {
                    Target::Ip(_) => format!("{target} is {why}"),
                    Target::Name(_) => format!("{target} resolves to a refused address: {why}"),
                };
                tracing::debug!(sandbox_id = %self.sandbox_id, %target, %ip, why, "the address guard refused");
                last = Some(Refusal::Denied(reason));
                continue;
            }
            let timeout = self.config.connect_timeout;
            match tokio::time::timeout(timeout, TcpStream::connect((ip, port))).await {
                Ok(Ok(stream)) => {
                    let _ = stream.set_nodelay(true);
                    return Ok(stream);
                }
                Ok(Err(e)) => {
                    if !matches!(last, Some(Refusal::Denied(_))) {
                        last = Some(Refusal::Unreachable(format!(
                            "connecting to {ip}:{port}: {e}"
                        )));
                    }
                }
                Err(_) => {
                    if !matches!(last, Some(Refusal::Denied(_))) {
                        last = Some(Refusal::Unreachable(format!(
                            "connecting to {ip}:{port}: no answer within {timeout:?}"
                        )));
                    }
                }
            }
        }
        Err(last.unwrap_or_else(|| Refusal::Unreachable(format!("{target}: no address"))))
    }

    pub(crate) fn record(&self, decision: EgressDecision) {
        tracing::debug!(
            sandbox_id = %self.sandbox_id,
            allowed = decision.allowed,
            host = %decision.host,
            port = decision.port,
            via = %decision.via,
            reason = decision.reason.as_deref().unwrap_or(""),
            bytes_out = decision.bytes_out,
            bytes_in = decision.bytes_in,
            "egress"
        );
        if self.decisions.try_send(decision).is_err() {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::warn!(sandbox_id = %self.sandbox_id, dropped, "egress decisions dropped: the reader is behind");
            }
        }
    }
}

/// One connection's outcome, recorded when it ends.
pub(crate) struct Outcome<'a> {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) via: &'a str,
    pub(crate) started: Instant,
}

impl Outcome<'_> {
    pub(crate) fn denied(self, ctx: &Ctx, refusal: &Refusal) {
        ctx.record(self.decision(false, Some(refusal.reason().to_owned()), 0, 0));
    }

    /// A connection a policy change cut (its byte counts are lost with it).
    pub(crate) fn cut(self, ctx: &Ctx) {
        let reason = crate::proxy::live::Cut::reason(&self.host, self.port);
        ctx.record(self.decision(false, Some(reason), 0, 0));
    }

    /// An intercepted connection's end: its bytes, and why it stopped
    /// early (refused by the secrets' rule: denied; failed: allowed).
    pub(crate) fn served(self, ctx: &Ctx, served: crate::proxy::tls::Served) {
        use crate::proxy::tls::Stopped;
        let (allowed, reason) = match served.stopped {
            None => (true, None),
            Some(Stopped::Refused(why)) => (false, Some(why)),
            Some(Stopped::Failed(why)) => (true, Some(why)),
        };
        ctx.record(self.decision(allowed, reason, served.bytes_out, served.bytes_in));
    }

    pub(crate) fn done(self, ctx: &Ctx, bytes_out: u64, bytes_in: u64) {
        ctx.record(self.decision(true, None, bytes_out, bytes_in));
    }

    fn decision(self, allowed: bool, reason: Option<String>, out: u64, inn: u64) -> EgressDecision {
        EgressDecision {
            allowed,
            host: self.host,
            port: self.port,
            via: self.via.to_owned(),
            reason,
            bytes_out: out,
            bytes_in: inn,
            duration_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }
    }
}

pub(crate) type Shared = Arc<Ctx>;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn a_host_that_left_the_allowlist_is_refused_before_any_secret() {
        let secret = paddock_proto::SecretSpec::new(
            "API_KEY",
            paddock_proto::SecretValue::new("sk-1"),
            &["a.test"],
            None,
        )
        .unwrap();
        let (tx, mut rx) = mpsc::channel(4);
        let ctx = Ctx::new(
            "sb".to_owned(),
            "allow:a.test".parse().unwrap(),
            EgressConfig::default(),
            tx,
            Secrets::new(vec![secret]),
            None,
        );
        ctx.live.swap("allow:b.test".parse().unwrap());
        let target = Target::Name("a.test".to_owned());
        let refused = ctx.open(&target, 443).await.unwrap_err();
        assert_eq!(
            refused,
            Refusal::Denied(
                "a.test:443 is not allowed by the sandbox's network policy (allow:b.test)"
                    .to_owned()
            )
        );
        // refused before the interception is considered: nothing registered stays
        assert_eq!(ctx.live.open_count(), 0);
        assert!(rx.try_recv().is_err());
    }
}
