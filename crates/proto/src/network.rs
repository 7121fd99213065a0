//! The network policy of a sandbox, shared by every backend.
//!
//! - `none` (the default): an own network namespace with loopback only.
//! - `allowlist`: egress only to the listed destinations, through the
//!   host-side egress proxy. A destination without a port allows HTTP and
//!   HTTPS (ports 80 and 443); one with a port allows any TCP to exactly that
//!   port.
//! - `full`: any destination through the same proxy and address guard
//!   (never the host's own network namespace).
//!
//! A backend that cannot enforce a policy refuses it.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Ports a destination without an explicit port allows: HTTP and HTTPS.
pub const WEB_PORTS: [u16; 2] = [80, 443];

/// The explicit egress proxy as a sandbox with network sees it.
pub const PROXY_URL: &str = "http://127.0.0.1:3128";

/// The proxy variables every command in a sandbox with egress gets (both
/// spellings, since tools read one or the other; a program that ignores
/// them is redirected to the proxy all the same).
pub const PROXY_ENV: &[(&str, &str)] = &[
    ("HTTP_PROXY", PROXY_URL),
    ("HTTPS_PROXY", PROXY_URL),
    ("http_proxy", PROXY_URL),
    ("https_proxy", PROXY_URL),
    ("NO_PROXY", "localhost,127.0.0.1,::1"),
    ("no_proxy", "localhost,127.0.0.1,::1"),
];

/// At most this many destinations in one allowlist.
pub const MAX_DESTINATIONS: usize = 256;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum NetworkPolicy {
    /// Own network namespace with loopback only.
    #[default]
    None,
    /// Egress only to these destinations, through the egress proxy.
    Allowlist(Vec<Destination>),
    /// Any destination through the egress proxy and its address guard.
    Full,
}

/// Which hosts a destination names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum HostPattern {
    /// Exactly this name (lower case, no trailing dot).
    Exact(String),
    /// `*.suffix`: any name strictly below `suffix` (not `suffix` itself).
    Suffix(String),
    /// An IP literal: only connections to this address.
    Ip(IpAddr),
}

/// One allowed destination: `host`, `*.suffix`, an IP literal, each with an
/// optional `:port` (`[v6]:port` for IPv6).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Destination {
    pub host: HostPattern,
    pub port: Option<u16>,
}

/// Where a connection wants to go: a name or an IP literal, and a port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    Name(String),
    Ip(IpAddr),
}

impl Target {
    /// Parses what a client names: an IP literal, else a host name (lower-cased).
    pub fn parse(host: &str) -> Result<Self, InvalidNetworkPolicy> {
        let trimmed = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = trimmed.parse::<IpAddr>() {
            return Ok(Target::Ip(ip));
        }
        Ok(Target::Name(normalize_name(host)?))
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Name(n) => f.write_str(n),
            Target::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Target::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidNetworkPolicy {
    #[error("network destination {0:?}: empty host")]
    EmptyHost(String),
    #[error("network destination {0:?}: not a valid host name")]
    BadHost(String),
    #[error("network destination {0:?}: not a valid port")]
    BadPort(String),
    #[error("network destination {0:?}: a wildcard is only allowed as a leading `*.`")]
    BadWildcard(String),
    #[error("network allowlist: {0} destinations, at most {MAX_DESTINATIONS}")]
    TooMany(usize),
    #[error("network allowlist: empty (use `none` for no network)")]
    EmptyAllowlist,
    #[error("network {0:?}: expected none, full or allow:HOST[:PORT],...")]
    BadPolicy(String),
}

fn normalize_name(raw: &str) -> Result<String, InvalidNetworkPolicy> {
    let name = raw.trim_end_matches('.').to_ascii_lowercase();
    if name.is_empty() {
        return Err(InvalidNetworkPolicy::EmptyHost(raw.to_owned()));
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if name.len() > 253 || !name.split('.').all(label_ok) {
        return Err(InvalidNetworkPolicy::BadHost(raw.to_owned()));
    }
    Ok(name)
}

impl HostPattern {
    fn matches(&self, target: &Target) -> bool {
        match (self, target) {
            (HostPattern::Exact(n), Target::Name(t)) => n == t,
            (HostPattern::Suffix(s), Target::Name(t)) => t
                .strip_suffix(s.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            (HostPattern::Ip(ip), Target::Ip(t)) => ip == t,
            _ => false,
        }
    }
}

impl Destination {
    pub fn allows(&self, target: &Target, port: u16) -> bool {
        let port_ok = match self.port {
            Some(p) => p == port,
            None => WEB_PORTS.contains(&port),
        };
        port_ok && self.host.matches(target)
    }
}

impl FromStr for Destination {
    type Err = InvalidNetworkPolicy;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        let s = raw.trim();
        let (host, port) = split_host_port(s)?;
        let port = port
            .map(|p| {
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| InvalidNetworkPolicy::BadPort(raw.to_owned()))
            })
            .transpose()?;
        let host = if let Ok(ip) = host.parse::<IpAddr>() {
            HostPattern::Ip(ip)
        } else if let Some(suffix) = host.strip_prefix("*.") {
            if suffix.contains('*') {
                return Err(InvalidNetworkPolicy::BadWildcard(raw.to_owned()));
            }
            HostPattern::Suffix(normalize_name(suffix)?)
        } else if host.contains('*') {
            return Err(InvalidNetworkPolicy::BadWildcard(raw.to_owned()));
        } else {
            HostPattern::Exact(normalize_name(host)?)
        };
        Ok(Destination { host, port })
    }
}

/// `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 literal.
fn split_host_port(s: &str) -> Result<(&str, Option<&str>), InvalidNetworkPolicy> {
    if s.is_empty() {
        return Err(InvalidNetworkPolicy::EmptyHost(s.to_owned()));
    }
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| InvalidNetworkPolicy::BadHost(s.to_owned()))?;
        return match after {
            "" => Ok((host, None)),
            _ => after
                .strip_prefix(':')
                .map(|p| (host, Some(p)))
                .ok_or_else(|| InvalidNetworkPolicy::BadPort(s.to_owned())),
        };
    }
    if s.matches(':').count() > 1 {
        return Ok((s, None));
    }
    Ok(match s.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    })
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            HostPattern::Exact(n) => f.write_str(n)?,
            HostPattern::Suffix(s) => write!(f, "*.{s}")?,
            HostPattern::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
            HostPattern::Ip(ip) => write!(f, "{ip}")?,
        }
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => Ok(()),
        }
    }
}

impl Serialize for Destination {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for Destination {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some(
                "`host`, `*.suffix` or an IP literal, with an optional `:port`",
            ))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for Destination {}

impl<'de> Deserialize<'de> for Destination {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        raw.parse().map_err(serde::de::Error::custom)
    }
}

impl NetworkPolicy {
    /// Whether a connection to `target:port` is allowed (before the address
    /// guard, which applies to every policy).
    pub fn allows(&self, target: &Target, port: u16) -> bool {
        match self {
            NetworkPolicy::None => false,
            NetworkPolicy::Full => true,
            NetworkPolicy::Allowlist(list) => list.iter().any(|d| d.allows(target, port)),
        }
    }

    /// Whether a name may be resolved inside the sandbox (on any port).
    pub fn allows_name(&self, name: &str) -> bool {
        let target = Target::Name(name.to_owned());
        match self {
            NetworkPolicy::None => false,
            NetworkPolicy::Full => true,
            NetworkPolicy::Allowlist(list) => list.iter().any(|d| d.host.matches(&target)),
        }
    }

    /// How a native sandbox's egress is carried, for its Enforcement (the
    /// other backends refuse any egress).
    pub fn egress_path(&self) -> Option<&'static str> {
        match self {
            NetworkPolicy::None => None,
            NetworkPolicy::Allowlist(_) => Some(
                "egress proxy (HTTP, CONNECT, transparent TCP; DNS for listed names), address guard at connect",
            ),
            NetworkPolicy::Full => Some(
                "NAT through the host (TCP, UDP, ICMP; IPv4 only), address guard as host packet filter rules",
            ),
        }
    }

    /// Whether the sandbox has any egress (and so needs the proxy).
    pub fn has_egress(&self) -> bool {
        !matches!(self, NetworkPolicy::None)
    }

    /// Checks the limits: a non-empty allowlist of at most [`MAX_DESTINATIONS`].
    pub fn validate(&self) -> Result<(), InvalidNetworkPolicy> {
        match self {
            NetworkPolicy::Allowlist(list) if list.is_empty() => {
                Err(InvalidNetworkPolicy::EmptyAllowlist)
            }
            NetworkPolicy::Allowlist(list) if list.len() > MAX_DESTINATIONS => {
                Err(InvalidNetworkPolicy::TooMany(list.len()))
            }
            _ => Ok(()),
        }
    }

    /// Whether every connection `self` allows, `bound` allows too (an
    /// allowlist is within another when each of its destinations is listed
    /// there as well).
    pub fn within(&self, bound: &NetworkPolicy) -> bool {
        match (self, bound) {
            (NetworkPolicy::None, _) | (_, NetworkPolicy::Full) => true,
            (NetworkPolicy::Full, _) | (NetworkPolicy::Allowlist(_), NetworkPolicy::None) => false,
            (NetworkPolicy::Allowlist(mine), NetworkPolicy::Allowlist(theirs)) => {
                mine.iter().all(|d| theirs.contains(d))
            }
        }
    }

    /// This policy with `more` allowed too (`full` stays `full`; `none`
    /// becomes an allowlist of `more`), each destination listed once.
    pub fn with_destinations(self, more: &[Destination]) -> NetworkPolicy {
        if more.is_empty() {
            return self;
        }
        match self {
            NetworkPolicy::Full => NetworkPolicy::Full,
            NetworkPolicy::None => NetworkPolicy::Allowlist(more.to_vec()),
            NetworkPolicy::Allowlist(mut list) => {
                for destination in more {
                    if !list.contains(destination) {
                        list.push(destination.clone());
                    }
                }
                NetworkPolicy::Allowlist(list)
            }
        }
    }

    /// A short label for people: `none`, `full` or `allow:a,b`.
    pub fn label(&self) -> String {
        match self {
            NetworkPolicy::None => "none".to_owned(),
            NetworkPolicy::Full => "full".to_owned(),
            NetworkPolicy::Allowlist(list) => {
                let names: Vec<String> = list.iter().map(ToString::to_string).collect();
                format!("allow:{}", names.join(","))
            }
        }
    }
}

impl FromStr for NetworkPolicy {
    type Err = InvalidNetworkPolicy;

    /// `none`, `full` or `allow:HOST[:PORT],...` (the CLI's form).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let policy = match s.trim() {
            "none" => NetworkPolicy::None,
            "full" => NetworkPolicy::Full,
            other => {
                let list = other
                    .strip_prefix("allow:")
                    .ok_or_else(|| InvalidNetworkPolicy::BadPolicy(s.to_owned()))?;
                NetworkPolicy::Allowlist(
                    list.split(',')
                        .filter(|d| !d.trim().is_empty())
                        .map(str::parse)
                        .collect::<Result<_, _>>()?,
                )
            }
        };
        policy.validate()?;
        Ok(policy)
    }
}

/// The operator's rule for the network tenants ask for: what a request
/// naming none gets, and the most one may ask for (`max = none` forbids
/// egress, an allowlist allows only its destinations, `full` anything).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkBounds {
    pub default: NetworkPolicy,
    pub max: NetworkPolicy,
}

impl Default for NetworkBounds {
    /// No network unless asked; a tenant may ask for anything.
    fn default() -> Self {
        Self {
            default: NetworkPolicy::None,
            max: NetworkPolicy::Full,
        }
    }
}

/// Why a tenant's network request is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkRefused {
    /// No backend could apply it (the caller's mistake).
    #[error("{0}")]
    Invalid(InvalidNetworkPolicy),
    /// It is valid but allows more than the operator allows tenants.
    #[error("network {asked}: beyond what this server allows tenants ({max})")]
    AboveMax { asked: String, max: String },
}

impl NetworkBounds {
    /// Bounds whose default is within their max.
    pub fn new(default: NetworkPolicy, max: NetworkPolicy) -> Result<Self, NetworkRefused> {
        let bounds = Self { default, max };
        bounds.check(&bounds.default)?;
        Ok(bounds)
    }

    /// Whether a tenant may have `asked`: valid, and within the max.
    pub fn check(&self, asked: &NetworkPolicy) -> Result<(), NetworkRefused> {
        asked.validate().map_err(NetworkRefused::Invalid)?;
        if asked.within(&self.max) {
            Ok(())
        } else {
            Err(NetworkRefused::AboveMax {
                asked: asked.label(),
                max: self.max.label(),
            })
        }
    }

    /// The policy of a request: what it asked for (checked), else the default.
    pub fn grant(&self, asked: Option<NetworkPolicy>) -> Result<NetworkPolicy, NetworkRefused> {
        match asked {
            Some(policy) => self.check(&policy).map(|()| policy),
            None => Ok(self.default.clone()),
        }
    }
}

/// One egress decision. Carries no payload and no header, so no secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EgressDecision {
    pub allowed: bool,
    /// The name or IP literal the sandbox asked for.
    pub host: String,
    pub port: u16,
    /// How the sandbox reached the proxy: `connect`, `http`, `transparent`
    /// or `dns`; `nat` for a `full` sandbox's routed connection or a
    /// packet the NAT's guard refused (`host` is then the address).
    pub via: String,
    /// Why it was denied (None when allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Bytes from the sandbox to the destination and back.
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub duration_ms: u64,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn name(n: &str) -> Target {
        Target::Name(n.to_owned())
    }

    #[test]
    fn destinations_added_to_a_policy_widen_it_once() {
        let model: Destination = "api.anthropic.com:443".parse().unwrap();
        let other: Destination = "pypi.org".parse().unwrap();
        assert_eq!(
            NetworkPolicy::None.with_destinations(std::slice::from_ref(&model)),
            NetworkPolicy::Allowlist(vec![model.clone()])
        );
        assert_eq!(
            NetworkPolicy::Allowlist(vec![other.clone(), model.clone()])
                .with_destinations(std::slice::from_ref(&model)),
            NetworkPolicy::Allowlist(vec![other, model.clone()])
        );
        assert_eq!(
            NetworkPolicy::Full.with_destinations(&[model]),
            NetworkPolicy::Full
        );
        assert_eq!(
            NetworkPolicy::None.with_destinations(&[]),
            NetworkPolicy::None
        );
    }

    #[test]
    fn exact_host_without_port_allows_http_and_https_only() {
        let d: Destination = "Example.COM".parse().unwrap();
        assert_eq!(d.host, HostPattern::Exact("example.com".into()));
        assert!(d.allows(&name("example.com"), 443));
        assert!(d.allows(&name("example.com"), 80));
        assert!(!d.allows(&name("example.com"), 22));
        assert!(!d.allows(&name("www.example.com"), 443));
    }

    #[test]
    fn suffix_matches_names_strictly_below_it() {
        let d: Destination = "*.example.com:8443".parse().unwrap();
        assert!(d.allows(&name("a.example.com"), 8443));
        assert!(d.allows(&name("a.b.example.com"), 8443));
        assert!(!d.allows(&name("example.com"), 8443));
        assert!(!d.allows(&name("badexample.com"), 8443));
        assert!(!d.allows(&name("a.example.com"), 443));
    }

    #[test]
    fn ip_literals_match_only_when_listed() {
        let d: Destination = "198.51.100.7:5432".parse().unwrap();
        assert!(d.allows(&Target::parse("198.51.100.7").unwrap(), 5432));
        assert!(!d.allows(&Target::parse("198.51.100.8").unwrap(), 5432));
        let host: Destination = "example.com".parse().unwrap();
        assert!(!host.allows(&Target::parse("93.184.216.34").unwrap(), 443));
        let v6: Destination = "[2001:db8::1]:443".parse().unwrap();
        assert_eq!(v6.to_string(), "[2001:db8::1]:443");
        assert!(v6.allows(&Target::parse("[2001:db8::1]").unwrap(), 443));
    }

    #[test]
    fn bad_destinations_are_refused() {
        for bad in [
            "", "a..b", "*.*.x", "a*.x", "x:0", "x:99999", "-a.x", "[::1",
        ] {
            assert!(bad.parse::<Destination>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn policy_parses_the_cli_form_and_round_trips_as_json() {
        let p: NetworkPolicy = "allow:example.com,*.pypi.org,198.51.100.7:22"
            .parse()
            .unwrap();
        assert_eq!(p.label(), "allow:example.com,*.pypi.org,198.51.100.7:22");
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(
            json,
            r#"{"allowlist":["example.com","*.pypi.org","198.51.100.7:22"]}"#
        );
        assert_eq!(serde_json::from_str::<NetworkPolicy>(&json).unwrap(), p);
        assert_eq!(
            serde_json::to_string(&NetworkPolicy::None).unwrap(),
            r#""none""#
        );
        assert!("allow:".parse::<NetworkPolicy>().is_err());
        assert!("host".parse::<NetworkPolicy>().is_err());
    }

    #[test]
    fn within_orders_policies() {
        let a: NetworkPolicy = "allow:a.com".parse().unwrap();
        let ab: NetworkPolicy = "allow:a.com,b.com".parse().unwrap();
        assert!(a.within(&ab));
        assert!(!ab.within(&a));
        assert!(NetworkPolicy::None.within(&a));
        assert!(a.within(&NetworkPolicy::Full));
        assert!(!NetworkPolicy::Full.within(&ab));
        assert!(!a.within(&NetworkPolicy::None));
    }

    #[test]
    fn bounds_grant_the_default_and_refuse_above_the_max() {
        let max: NetworkPolicy = "allow:a.com,b.com".parse().unwrap();
        let bounds = NetworkBounds::new(NetworkPolicy::None, max).unwrap();
        assert_eq!(bounds.grant(None).unwrap(), NetworkPolicy::None);
        let a: NetworkPolicy = "allow:a.com".parse().unwrap();
        assert_eq!(bounds.grant(Some(a.clone())).unwrap(), a);
        assert_eq!(
            bounds.grant(Some(NetworkPolicy::Full)).unwrap_err(),
            NetworkRefused::AboveMax {
                asked: "full".into(),
                max: "allow:a.com,b.com".into()
            }
        );
        assert!(matches!(
            bounds.grant(Some(NetworkPolicy::Allowlist(Vec::new()))),
            Err(NetworkRefused::Invalid(
                InvalidNetworkPolicy::EmptyAllowlist
            ))
        ));
        assert!(NetworkBounds::new(NetworkPolicy::Full, NetworkPolicy::None).is_err());
    }

    #[test]
    fn names_resolve_only_when_some_destination_names_them() {
        let p: NetworkPolicy = "allow:a.com:22,*.b.org".parse().unwrap();
        assert!(p.allows_name("a.com"));
        assert!(p.allows_name("x.b.org"));
        assert!(!p.allows_name("b.org"));
        assert!(!NetworkPolicy::None.allows_name("a.com"));
        assert!(NetworkPolicy::Full.allows_name("anything.example"));
    }
}
