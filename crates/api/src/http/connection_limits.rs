//! The listener's bounds, as the operator writes them in `[http]`:
//! [`ConnectionLimits`] deserialises the section and checks itself
//! ([`ConnectionLimits::validate`]); three of its caps default from others
//! (`None` until [`ConnectionLimits::resolved`]).

use std::time::Duration;

use serde::Deserialize;

use super::gate::GateLimits;
use super::metered::BodyPace;

/// Bounds on the connections one server holds (`[http]` of the config, a
/// key left out keeping its default; docs/api.md has each key).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConnectionLimits {
    /// Open connections at once; past it the oldest connection without a
    /// proven token is closed, or the new one when there is none.
    pub max_connections: usize,
    /// Open connections from one peer address at once.
    pub max_connections_per_peer: usize,
    /// Places of `max_connections` that only connections which carried a
    /// valid token may hold (the gate closes the oldest other one instead).
    /// None: an eighth of `max_connections`.
    pub reserved_connections: Option<usize>,
    /// Connections one tenant's token keeps its place on; past it the
    /// tenant's further connections are treated as without a token.
    /// None: a sixteenth of `max_connections`, at least 1.
    pub max_connections_per_tenant: Option<usize>,
    /// Time a client has to send a request's headers.
    #[serde(
        rename = "header_timeout_secs",
        deserialize_with = "paddock_core::settings::secs"
    )]
    pub header_read_timeout: Duration,
    /// Longest wait for the next piece of a request body, and the grace
    /// before `body_min_bytes_per_sec` counts.
    #[serde(
        rename = "body_timeout_secs",
        deserialize_with = "paddock_core::settings::secs"
    )]
    pub body_read_timeout: Duration,
    /// After the grace a body must have averaged this many bytes a second
    /// (its deadline: the grace plus 1 s per this many bytes received).
    pub body_min_bytes_per_sec: u64,
    /// A connection on which no byte moved either way for this long is closed
    /// (an event stream's keep-alives count; a reader that stopped does not).
    #[serde(
        rename = "idle_timeout_secs",
        deserialize_with = "paddock_core::settings::secs"
    )]
    pub idle_timeout: Duration,
    /// Request body bytes held by the requests in progress, summed, charged
    /// as they arrive; a piece that does not fit gets 503 `busy`.
    pub max_body_memory_bytes: usize,
    /// The same for one tenant's requests (and for all requests without a
    /// valid token together); past it 429 `body_budget_exceeded`.
    /// None: a quarter of `max_body_memory_bytes`, at least the largest
    /// request body (`max_body_bytes`), at most `max_body_memory_bytes`.
    pub max_body_memory_per_tenant_bytes: Option<usize>,
    /// Streams open at once per tenant (`streams`).
    pub max_streams_per_tenant: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_connections: 4096,
            max_connections_per_peer: 256,
            reserved_connections: None,
            max_connections_per_tenant: None,
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(30),
            body_min_bytes_per_sec: 16 << 10,
            idle_timeout: Duration::from_secs(120),
            max_body_memory_bytes: 256 << 20,
            max_body_memory_per_tenant_bytes: None,
            max_streams_per_tenant: 256,
        }
    }
}

/// A `[http]` setting out of bounds, named as the file spells it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionLimitsError {
    #[error("{setting} must be more than 0")]
    Zero { setting: &'static str },
    #[error("reserved_connections ({reserved}) must be below max_connections ({max})")]
    ReservedNotBelowMax { reserved: usize, max: usize },
    #[error("max_body_memory_per_tenant_bytes ({share}) is above max_body_memory_bytes ({total})")]
    ShareAboveTotal { share: usize, total: usize },
    #[error(
        "max_body_memory_per_tenant_bytes ({share}) is below max_body_bytes ({largest}): \
         a body of the largest size allowed could never be held"
    )]
    ShareBelowLargestBody { share: usize, largest: usize },
}

impl ConnectionLimits {
    /// `reserved_connections`, or its default.
    pub fn reserved(&self) -> usize {
        self.reserved_connections
            .unwrap_or(self.max_connections / 8)
    }

    /// `max_connections_per_tenant`, or its default.
    pub fn per_tenant(&self) -> usize {
        self.max_connections_per_tenant
            .unwrap_or((self.max_connections / 16).max(1))
    }

    /// `max_body_memory_per_tenant_bytes`, or its default for a server
    /// whose largest request body is `max_body_bytes`.
    pub fn body_share(&self, max_body_bytes: usize) -> usize {
        let total = self.max_body_memory_bytes;
        self.max_body_memory_per_tenant_bytes
            .unwrap_or((total / 4).max(max_body_bytes).min(total))
    }

    /// These limits with every defaulted cap filled in.
    pub fn resolved(&self, max_body_bytes: usize) -> Self {
        Self {
            reserved_connections: Some(self.reserved()),
            max_connections_per_tenant: Some(self.per_tenant()),
            max_body_memory_per_tenant_bytes: Some(self.body_share(max_body_bytes)),
            ..self.clone()
        }
    }

    /// Every cap and timeout above 0, and the caps consistent with each
    /// other and with `max_body_bytes` (the largest request body, which a
    /// tenant's share must hold).
    pub fn validate(&self, max_body_bytes: usize) -> Result<(), ConnectionLimitsError> {
        for (setting, value) in [
            ("max_connections", self.max_connections as u64),
            (
                "max_connections_per_peer",
                self.max_connections_per_peer as u64,
            ),
            (
                "max_connections_per_tenant",
                self.max_connections_per_tenant.map_or(1, |n| n as u64),
            ),
            ("header_timeout_secs", self.header_read_timeout.as_secs()),
            ("body_timeout_secs", self.body_read_timeout.as_secs()),
            ("idle_timeout_secs", self.idle_timeout.as_secs()),
            ("body_min_bytes_per_sec", self.body_min_bytes_per_sec),
            ("max_body_memory_bytes", self.max_body_memory_bytes as u64),
            (
                "max_body_memory_per_tenant_bytes",
                self.max_body_memory_per_tenant_bytes
                    .map_or(1, |n| n as u64),
            ),
            ("max_streams_per_tenant", self.max_streams_per_tenant as u64),
        ] {
            if value == 0 {
                return Err(ConnectionLimitsError::Zero { setting });
            }
        }
        let (reserved, max) = (self.reserved(), self.max_connections);
        if reserved >= max {
            return Err(ConnectionLimitsError::ReservedNotBelowMax { reserved, max });
        }
        let (share, total) = (self.body_share(max_body_bytes), self.max_body_memory_bytes);
        if share > total {
            return Err(ConnectionLimitsError::ShareAboveTotal { share, total });
        }
        let largest = max_body_bytes;
        if share < largest.min(total) {
            return Err(ConnectionLimitsError::ShareBelowLargestBody { share, largest });
        }
        Ok(())
    }

    pub(super) fn gate(&self) -> GateLimits {
        GateLimits {
            max_connections: self.max_connections,
            per_peer: self.max_connections_per_peer,
            reserved: self.reserved(),
            per_tenant: self.per_tenant(),
        }
    }

    pub(super) fn pace(&self) -> BodyPace {
        BodyPace {
            stall: self.body_read_timeout,
            min_rate: self.body_min_bytes_per_sec,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    fn parse(text: &str) -> ConnectionLimits {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn the_defaulted_caps_follow_the_caps_they_derive_from() {
        let built_in = ConnectionLimits::default().resolved(16 * MIB);
        assert_eq!(
            (
                built_in.reserved_connections,
                built_in.max_connections_per_tenant,
                built_in.max_body_memory_per_tenant_bytes
            ),
            (Some(512), Some(256), Some(64 * MIB))
        );
        let small = parse(r#"{"max_connections": 100, "header_timeout_secs": 3}"#);
        assert_eq!(small.header_read_timeout, Duration::from_secs(3));
        assert_eq!((small.reserved(), small.per_tenant()), (12, 6));
        assert_eq!(parse(r#"{"max_connections": 8}"#).per_tenant(), 1);
        // A quarter of the budget, at least one largest body, at most the budget.
        let budget = parse(r#"{"max_body_memory_bytes": 8388608}"#);
        assert_eq!(budget.body_share(MIB), 2 * MIB);
        assert_eq!(budget.body_share(4 * MIB), 4 * MIB);
        assert_eq!(budget.body_share(16 * MIB), 8 * MIB);
        assert_eq!(budget.validate(16 * MIB), Ok(()));
        assert_eq!(ConnectionLimits::default().validate(16 * MIB), Ok(()));
    }

    #[test]
    fn a_bad_setting_is_refused_by_name() {
        let refused = |text: &str| parse(text).validate(MIB).unwrap_err();
        for setting in [
            "max_connections",
            "max_connections_per_peer",
            "max_connections_per_tenant",
            "header_timeout_secs",
            "body_timeout_secs",
            "idle_timeout_secs",
            "body_min_bytes_per_sec",
            "max_body_memory_bytes",
            "max_body_memory_per_tenant_bytes",
            "max_streams_per_tenant",
        ] {
            let err = refused(&format!(r#"{{"{setting}": 0}}"#));
            assert_eq!(err, ConnectionLimitsError::Zero { setting });
            assert_eq!(err.to_string(), format!("{setting} must be more than 0"));
        }
        assert_eq!(
            refused(r#"{"max_connections": 10, "reserved_connections": 10}"#).to_string(),
            "reserved_connections (10) must be below max_connections (10)"
        );
        assert_eq!(
            refused(
                r#"{"max_body_memory_bytes": 1048576, "max_body_memory_per_tenant_bytes": 2097152}"#
            ),
            ConnectionLimitsError::ShareAboveTotal {
                share: 2 * MIB,
                total: MIB
            }
        );
        assert_eq!(
            parse(r#"{"max_body_memory_per_tenant_bytes": 1048576}"#).validate(16 * MIB),
            Err(ConnectionLimitsError::ShareBelowLargestBody {
                share: MIB,
                largest: 16 * MIB
            })
        );
        assert!(serde_json::from_str::<ConnectionLimits>(r#"{"header_read_timeout": 3}"#).is_err());
    }
}
