//! `[secrets.NAME]`: the operator's secrets and the tenants they are
//! granted to.

use anyhow::{Context, bail};
use paddock_api::service::{OperatorSecret, SecretGrant};
use paddock_core::ids::TenantId;
use serde::Deserialize;

/// `[secrets.NAME]`: `hosts` it may go to, an optional `header`, the one
/// header the value goes in (`X-Api-Key`, or a template such as
/// `Authorization: Bearer {{secret}}`; default `Authorization`), the
/// `tenants` that may name it
/// (tenant ids, or `["*"]` for all), and its value: `env = "VAR"`, read
/// from the server's environment at start (a missing one stops the
/// start), or, discouraged since a config file gets copied and committed,
/// `value = "..."`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretSection {
    pub hosts: Vec<String>,
    pub header: Option<String>,
    pub env: Option<String>,
    pub value: Option<String>,
    pub tenants: Vec<String>,
}

impl std::fmt::Debug for SecretSection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretSection")
            .field("hosts", &self.hosts)
            .field("header", &self.header)
            .field("env", &self.env)
            .field("value", &self.value.as_ref().map(|_| "<redacted>"))
            .field("tenants", &self.tenants)
            .finish()
    }
}

impl SecretSection {
    /// The secret NAME defines, its value from `env` (through `lookup`:
    /// the server's environment) or `value`. An error names the secret and
    /// the variable, never a value.
    pub(super) fn operator_secret(
        &self,
        name: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> anyhow::Result<OperatorSecret> {
        let value = match (&self.env, &self.value) {
            (Some(var), None) => lookup(var).with_context(|| {
                format!("secrets.{name}: ${var} is not set in the server's environment")
            })?,
            (None, Some(value)) => {
                tracing::warn!(
                    secret = name,
                    "secrets.{name} has its value in the config file; prefer env = \"VAR\""
                );
                value.clone()
            }
            _ => bail!(
                "secrets.{name}: give env = \"VAR\" (the value from the server's environment) \
                 or value = \"...\", one of them"
            ),
        };
        let grant = match self.tenants.as_slice() {
            [] => bail!(
                "secrets.{name}: tenants is empty; list the tenants that may name it, \
                 or [\"*\"] for all"
            ),
            [all] if all == "*" => SecretGrant::AllTenants,
            listed => SecretGrant::Tenants(
                listed
                    .iter()
                    .map(|t| {
                        TenantId::parse(t).with_context(|| {
                            format!("secrets.{name}: tenants: {t:?} (\"*\" stands alone)")
                        })
                    })
                    .collect::<anyhow::Result<_>>()?,
            ),
        };
        let hosts: Vec<&str> = self.hosts.iter().map(String::as_str).collect();
        let spec = paddock_proto::SecretSpec::new(
            name,
            paddock_proto::SecretValue::new(value),
            &hosts,
            self.header.as_deref(),
        )
        .with_context(|| format!("secrets.{name}"))?;
        Ok(OperatorSecret { spec, grant })
    }
}
