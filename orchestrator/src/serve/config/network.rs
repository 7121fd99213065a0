//! `[network]`: what a run naming no network gets and the most a request
//! may ask for.

use anyhow::Context;
use paddock_proto::{NetworkBounds, NetworkPolicy};
use serde::Deserialize;

/// `[network]`: `default` and `max`, each `none`, `full` or `allow:HOST,...`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSection {
    pub default: Option<String>,
    pub max: Option<String>,
}

impl NetworkSection {
    pub fn bounds(&self) -> anyhow::Result<NetworkBounds> {
        let defaults = NetworkBounds::default();
        let parse = |field: &str, value: &Option<String>, default: NetworkPolicy| match value {
            Some(raw) => raw
                .parse::<NetworkPolicy>()
                .with_context(|| format!("network.{field}")),
            None => Ok(default),
        };
        let default = parse("default", &self.default, defaults.default)?;
        let max = parse("max", &self.max, defaults.max)?;
        NetworkBounds::new(default, max).context("network.default must be within network.max")
    }
}
