//! `[quotas.tenant]` and `[quotas.node]`: ceilings on the sum of granted
//! sandbox limits.

use paddock_api::service::{HostTotals, Quota, Quotas};
use serde::Deserialize;

/// `[quotas.tenant]` and `[quotas.node]`: `sandboxes`, `runs`,
/// `memory_bytes`, `pids`, `cpu_millis`. A node field left out defaults from
/// the host (pid_max less a margin, MemTotal, the CPUs times the
/// overcommit; no node-wide `sandboxes` or `runs` beyond `max_sandboxes`);
/// a tenant's `sandboxes` and `runs` left out are the defaults
/// (`Quota::tenant_default`: 8 and 4), its other fields no ceiling.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotasConfig {
    #[serde(default)]
    pub tenant: Quota,
    #[serde(default)]
    pub node: Quota,
}

impl QuotasConfig {
    pub fn quotas(&self, host: &HostTotals) -> Quotas {
        let from_host = host.quota();
        let n = &self.node;
        let t = &self.tenant;
        let tenant_default = Quota::tenant_default();
        Quotas {
            tenant: Quota {
                sandboxes: t.sandboxes.or(tenant_default.sandboxes),
                runs: t.runs.or(tenant_default.runs),
                ..*t
            },
            node: Quota {
                sandboxes: n.sandboxes.or(from_host.sandboxes),
                runs: n.runs.or(from_host.runs),
                memory_bytes: n.memory_bytes.or(from_host.memory_bytes),
                pids: n.pids.or(from_host.pids),
                cpu_millis: n.cpu_millis.or(from_host.cpu_millis),
            },
        }
    }
}
