//! The proxy every sandbox with network has, running in the host's
//! namespace on sockets bound inside the sandbox's: HTTP CONNECT and plain
//! HTTP ([`http`]), transparent TCP ([`transparent`]), DNS ([`dns`]), each
//! connection checked against the policy and the address guard
//! ([`connect`]) before it is opened and relayed ([`opening`], [`relay`]);
//! secrets' hosts have their TLS terminated and their headers filled in
//! ([`tls`], [`secrets`]); names are resolved by the proxy itself
//! ([`resolve`]).

pub(crate) mod connect;
pub(crate) mod dns;
pub(crate) mod http;
pub(crate) mod live;
pub(crate) mod opening;
pub(crate) mod relay;
pub(crate) mod resolve;
pub(crate) mod secrets;
pub(crate) mod tls;
pub(crate) mod transparent;
