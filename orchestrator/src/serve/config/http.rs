//! `[http]`: the listener's connection caps and timeouts.

use anyhow::bail;
use paddock_api::http::ConnectionLimits;
use serde::Deserialize;

use super::{positive, positive_secs};

/// `[http]`: every field optional, defaults in [`ConnectionLimits::default`].
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSection {
    /// Open connections at once (default 4096).
    pub max_connections: Option<usize>,
    /// Open connections from one peer address (default 256).
    pub max_connections_per_peer: Option<usize>,
    /// Places only connections that carried a valid token may hold
    /// (default an eighth of `max_connections`).
    pub reserved_connections: Option<usize>,
    /// Connections one tenant's token keeps its place on (default a
    /// sixteenth of `max_connections`, at least 1).
    pub max_connections_per_tenant: Option<usize>,
    /// Seconds a client has to send a request's headers (default 10).
    pub header_timeout_secs: Option<u64>,
    /// Seconds to wait for the next piece of a request body, and the grace
    /// before the minimum rate counts (default 30).
    pub body_timeout_secs: Option<u64>,
    /// Bytes a second a body must average after the grace (default 16384).
    pub body_min_bytes_per_sec: Option<u64>,
    /// Seconds without a byte either way before a connection closes (default 120).
    pub idle_timeout_secs: Option<u64>,
    /// Request body bytes held at once over all requests (default 256 MiB).
    pub max_body_memory_bytes: Option<usize>,
    /// The same for one tenant's requests (default a quarter of
    /// `max_body_memory_bytes`, at least `max_body_bytes`).
    pub max_body_memory_per_tenant_bytes: Option<usize>,
    /// Event, process output and streamed exec streams open at once per
    /// tenant (default 256).
    pub max_streams_per_tenant: Option<usize>,
    /// Host-based port routing: `{P}-{sandbox id}.{ports_domain}` reaches
    /// port P of the sandbox (default: off).
    pub ports_domain: Option<String>,
}

impl HttpSection {
    /// `ports_domain`, checked.
    pub fn ports_domain(&self) -> anyhow::Result<Option<paddock_api::http::PortsDomain>> {
        self.ports_domain
            .as_deref()
            .map(|d| {
                paddock_api::http::PortsDomain::parse(d).map_err(|e| anyhow::anyhow!("http.{e}"))
            })
            .transpose()
    }
}

impl HttpSection {
    /// The listener's limits: this section over [`ConnectionLimits::default`],
    /// checked against each other and against `max_body_bytes` (the
    /// largest request body, which a tenant's share must hold).
    pub fn limits(&self, max_body_bytes: usize) -> anyhow::Result<ConnectionLimits> {
        let http = self;
        let mut limits = ConnectionLimits::default();
        if let Some(max) = http.max_connections {
            limits.max_connections = positive("http.max_connections", max)?;
        }
        if let Some(max) = http.max_connections_per_peer {
            limits.max_connections_per_peer = positive("http.max_connections_per_peer", max)?;
        }
        let total = limits.max_connections;
        limits.reserved_connections = http.reserved_connections.unwrap_or(total / 8);
        if limits.reserved_connections >= total {
            bail!(
                "http.reserved_connections ({}) must be below http.max_connections ({total})",
                limits.reserved_connections
            );
        }
        limits.max_connections_per_tenant = match http.max_connections_per_tenant {
            Some(max) => positive("http.max_connections_per_tenant", max)?,
            None => (total / 16).max(1),
        };
        if let Some(secs) = http.header_timeout_secs {
            limits.header_read_timeout = positive_secs("http.header_timeout_secs", secs)?;
        }
        if let Some(secs) = http.body_timeout_secs {
            limits.body_read_timeout = positive_secs("http.body_timeout_secs", secs)?;
        }
        if let Some(secs) = http.idle_timeout_secs {
            limits.idle_timeout = positive_secs("http.idle_timeout_secs", secs)?;
        }
        if let Some(rate) = http.body_min_bytes_per_sec {
            if rate == 0 {
                bail!("http.body_min_bytes_per_sec must be above 0");
            }
            limits.body_min_bytes_per_sec = rate;
        }
        if let Some(bytes) = http.max_body_memory_bytes {
            limits.max_body_memory_bytes = positive("http.max_body_memory_bytes", bytes)?;
        }
        let total = limits.max_body_memory_bytes;
        let largest = max_body_bytes;
        limits.max_body_memory_per_tenant_bytes = match http.max_body_memory_per_tenant_bytes {
            Some(share) => positive("http.max_body_memory_per_tenant_bytes", share)?,
            None => (total / 4).max(largest).min(total),
        };
        let share = limits.max_body_memory_per_tenant_bytes;
        if share > total {
            bail!(
                "http.max_body_memory_per_tenant_bytes ({share}) is above \
                 http.max_body_memory_bytes ({total})"
            );
        }
        if share < largest.min(total) {
            bail!(
                "http.max_body_memory_per_tenant_bytes ({share}) is below max_body_bytes \
                 ({largest}): a body of the largest size allowed could never be held"
            );
        }
        if let Some(max) = http.max_streams_per_tenant {
            limits.max_streams_per_tenant = positive("http.max_streams_per_tenant", max)?;
        }
        Ok(limits)
    }
}
