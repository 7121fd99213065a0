//! Quotas on what sandboxes are granted: per tenant and for the whole node.
//!
//! Every sandbox's limits (memory, pids, cpu) are a grant. Before the backend
//! starts a sandbox its grant is reserved against the tenant's quota and the
//! node's; it is released when the sandbox is retired or fails to start. The
//! node totals default from the host (pid_max less a margin, MemTotal, the
//! CPUs), so the sum of granted limits can never promise more than the host
//! has. A limit left unset (`None`) is an unbounded grant: it fits no finite
//! quota.
//!
//! The ledger holds this service's sandboxes and, through the runtime's
//! admission port (`service::admission`), every agent run's and subagent's
//! sandbox: one check for all. A root run's grant also counts one
//! concurrent run (`runs`). Sandboxes recorded running on this node that
//! the ledger does not hold (another process's) are read from the store at
//! every reservation and counted too.

use std::collections::HashMap;
use std::sync::Mutex;

use paddock_core::ids::TenantId;
use paddock_core::sandbox::{SandboxId, SandboxLimits};
use serde::{Deserialize, Serialize};

use super::ServiceError;

/// Ceilings on the sum of granted limits; `None`: no ceiling of that kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quota {
    /// Sandboxes running at once (API sandboxes, runs' and subagents').
    pub sandboxes: Option<u64>,
    /// Agent runs (root runs; a subagent counts as a sandbox) running at once.
    #[serde(default)]
    pub runs: Option<u64>,
    pub memory_bytes: Option<u64>,
    pub pids: Option<u64>,
    /// Millicpus (1000 = one core).
    pub cpu_millis: Option<u64>,
}

/// The quota every tenant gets, and the node's totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quotas {
    pub tenant: Quota,
    pub node: Quota,
}

/// Sandboxes one tenant may run at once by default: a quarter of what the
/// default node quota fits on a 2-core host (32 sandboxes of the default
/// one core each), so one tenant cannot take the node.
pub const DEFAULT_TENANT_SANDBOXES: u64 = 8;
/// Agent runs one tenant may run at once by default (each may have
/// subagents, which count against the tenant's sandboxes).
pub const DEFAULT_TENANT_RUNS: u64 = 4;

impl Quota {
    /// The tenant quota of a config that names none:
    /// [`DEFAULT_TENANT_SANDBOXES`] and [`DEFAULT_TENANT_RUNS`], no ceiling
    /// on the sum of limits (the node's bounds it).
    pub fn tenant_default() -> Self {
        Self {
            sandboxes: Some(DEFAULT_TENANT_SANDBOXES),
            runs: Some(DEFAULT_TENANT_RUNS),
            ..Self::default()
        }
    }
}

impl Default for Quotas {
    /// The default tenant caps ([`Quota::tenant_default`]); node totals
    /// from this host.
    fn default() -> Self {
        Self {
            tenant: Quota::tenant_default(),
            node: HostTotals::read().quota(),
        }
    }
}

/// What the host has, read once at startup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostTotals {
    pub pid_max: Option<u64>,
    pub memory_bytes: Option<u64>,
    pub cpus: u64,
}

/// CPU is compressible (a sandbox over its share is slowed, not killed), so
/// the node may grant this many times its CPUs; memory and pids are not.
pub const CPU_OVERCOMMIT: u64 = 16;

impl HostTotals {
    pub fn read() -> Self {
        let pid_max = std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|s| s.trim().parse().ok());
        let memory_bytes = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| mem_total(&text));
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
        Self {
            pid_max,
            memory_bytes,
            cpus,
        }
    }

    /// pid_max less a quarter (at least 1024) left to the host itself, all
    /// of MemTotal, and [`CPU_OVERCOMMIT`] times the CPUs.
    pub fn quota(&self) -> Quota {
        Quota {
            sandboxes: None,
            runs: None,
            memory_bytes: self.memory_bytes,
            pids: self
                .pid_max
                .map(|max| max.saturating_sub((max / 4).max(1024))),
            cpu_millis: Some(self.cpus.saturating_mul(1000 * CPU_OVERCOMMIT)),
        }
    }
}

fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Which quota refused a sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QuotaScope {
    Tenant,
    Node,
}

impl std::fmt::Display for QuotaScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            QuotaScope::Tenant => "tenant",
            QuotaScope::Node => "node",
        })
    }
}

/// What a caller refused by a quota is told: a tenant quota with its
/// figures (what the tenant itself holds), the node's without them (its use
/// sums every tenant's sandboxes, and its limit tells how much room they
/// leave); the node's figures go to the log ([`QuotaLedger::reserve`]).
pub(crate) fn refusal(scope: QuotaScope, quota: &str, limit: u64, used: u64, asked: u64) -> String {
    match scope {
        QuotaScope::Tenant => {
            format!("tenant quota {quota} exceeded: {used} in use of {limit}, {asked} asked")
        }
        QuotaScope::Node => format!(
            "this node has no room now for the {quota} asked ({asked}); try again later or ask for less"
        ),
    }
}

/// What one sandbox is granted; an unset limit counts as `u64::MAX`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Grant {
    pub sandboxes: u64,
    /// 1 for a root run's sandbox: one concurrent run.
    pub runs: u64,
    pub memory_bytes: u64,
    pub pids: u64,
    pub cpu_millis: u64,
}

impl Grant {
    pub(crate) fn of(limits: &SandboxLimits) -> Self {
        Self {
            sandboxes: 1,
            runs: 0,
            memory_bytes: limits.memory_bytes.unwrap_or(u64::MAX),
            pids: limits.pids.unwrap_or(u64::MAX),
            cpu_millis: limits.cpu_millis.unwrap_or(u64::MAX),
        }
    }

    /// The grant of a sandbox started outside the service (an agent run's):
    /// it was never checked against a quota, so an unset limit counts as
    /// nothing rather than refusing every later sandbox.
    pub(crate) fn recorded(limits: &SandboxLimits) -> Self {
        Self {
            sandboxes: 1,
            runs: 0,
            memory_bytes: limits.memory_bytes.unwrap_or(0),
            pids: limits.pids.unwrap_or(0),
            cpu_millis: limits.cpu_millis.unwrap_or(0),
        }
    }

    fn add(&mut self, other: &Grant) {
        self.sandboxes = self.sandboxes.saturating_add(other.sandboxes);
        self.runs = self.runs.saturating_add(other.runs);
        self.memory_bytes = self.memory_bytes.saturating_add(other.memory_bytes);
        self.pids = self.pids.saturating_add(other.pids);
        self.cpu_millis = self.cpu_millis.saturating_add(other.cpu_millis);
    }

    fn fields(&self) -> [(&'static str, u64); 5] {
        [
            ("sandboxes", self.sandboxes),
            ("runs", self.runs),
            ("memory_bytes", self.memory_bytes),
            ("pids", self.pids),
            ("cpu_millis", self.cpu_millis),
        ]
    }
}

impl Quota {
    fn fields(&self) -> [Option<u64>; 5] {
        [
            self.sandboxes,
            self.runs,
            self.memory_bytes,
            self.pids,
            self.cpu_millis,
        ]
    }

    /// The first kind `asked` on top of `used` goes over.
    fn check(&self, scope: QuotaScope, used: &Grant, asked: &Grant) -> Result<(), ServiceError> {
        for ((name, used), ((_, asked), limit)) in used
            .fields()
            .into_iter()
            .zip(asked.fields().into_iter().zip(self.fields()))
        {
            if let Some(limit) = limit
                && used.saturating_add(asked) > limit
            {
                return Err(ServiceError::QuotaExceeded {
                    scope,
                    quota: name,
                    limit,
                    used,
                    asked,
                });
            }
        }
        Ok(())
    }
}

/// Where the ledger holds a grant: a starting sandbox's reservation, then
/// its sandbox's id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    Starting(u64),
    Running(SandboxId),
}

#[derive(Debug, Default)]
struct Book {
    next: u64,
    grants: HashMap<Key, (TenantId, Grant)>,
}

/// The grants of this service's sandboxes, starting or running.
#[derive(Debug)]
pub(crate) struct QuotaLedger {
    quotas: Quotas,
    book: Mutex<Book>,
}

/// Sandboxes recorded running on this node that the ledger does not hold
/// (the agent runtime's), with their grants.
pub(crate) type OtherGrants = Vec<(SandboxId, TenantId, Grant)>;

impl QuotaLedger {
    pub(crate) fn new(quotas: Quotas) -> Self {
        Self {
            quotas,
            book: Mutex::new(Book::default()),
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reserves `limits` for a sandbox of `tenant` that is about to start,
    /// or names the quota it would exceed. `others` are grants held outside
    /// this ledger.
    #[cfg(test)]
    pub(crate) fn reserve(
        &self,
        tenant: &TenantId,
        limits: &SandboxLimits,
        others: &OtherGrants,
    ) -> Result<Reservation<'_>, ServiceError> {
        self.reserve_grant(tenant, Grant::of(limits), others)
    }

    /// [`Self::reserve`] of a grant as asked (a root run's counts a run).
    pub(crate) fn reserve_grant(
        &self,
        tenant: &TenantId,
        asked: Grant,
        others: &OtherGrants,
    ) -> Result<Reservation<'_>, ServiceError> {
        let mut book = self.book();
        let mut node = Grant::default();
        let mut mine = Grant::default();
        let held = book.grants.iter().map(|(_, (t, g))| (t, g));
        let outside = others
            .iter()
            .filter(|(id, _, _)| !book.grants.contains_key(&Key::Running(id.clone())))
            .map(|(_, t, g)| (t, g));
        for (owner, grant) in held.chain(outside) {
            node.add(grant);
            if owner == tenant {
                mine.add(grant);
            }
        }
        self.quotas
            .tenant
            .check(QuotaScope::Tenant, &mine, &asked)?;
        if let Err(refused) = self.quotas.node.check(QuotaScope::Node, &node, &asked) {
            if let ServiceError::QuotaExceeded {
                quota, limit, used, ..
            } = &refused
            {
                tracing::warn!(tenant = %tenant, quota, limit, used, "node quota refused a sandbox");
            }
            return Err(refused);
        }
        book.next += 1;
        let key = Key::Starting(book.next);
        book.grants.insert(key.clone(), (tenant.clone(), asked));
        Ok(Reservation {
            ledger: self,
            key: Some(key),
        })
    }

    /// Releases the grant of a retired sandbox.
    pub(crate) fn release(&self, id: &SandboxId) {
        self.release_key(&Key::Running(id.clone()));
    }

    /// Releases the grant held under `key`.
    pub(crate) fn release_key(&self, key: &Key) {
        self.book().grants.remove(key);
    }

    /// Moves the grant held under `key` to the sandbox `id` (its store row
    /// then no longer counts a second time); answers the new key.
    pub(crate) fn commit_key(&self, key: &Key, id: &SandboxId) -> Key {
        let mut book = self.book();
        let running = Key::Running(id.clone());
        if let Some(grant) = book.grants.remove(key) {
            book.grants.insert(running.clone(), grant);
        }
        running
    }

    /// What `tenant` (None: everyone) holds now.
    #[cfg(test)]
    fn used(&self, tenant: Option<&TenantId>) -> Grant {
        let mut sum = Grant::default();
        for (owner, grant) in self.book().grants.values() {
            if tenant.is_none_or(|t| t == owner) {
                sum.add(grant);
            }
        }
        sum
    }
}

/// A grant held for a starting sandbox: released when dropped, unless the
/// sandbox started and [`Reservation::commit`] moved it to its id.
#[derive(Debug)]
pub(crate) struct Reservation<'a> {
    ledger: &'a QuotaLedger,
    key: Option<Key>,
}

impl Reservation<'_> {
    pub(crate) fn commit(mut self, id: &SandboxId) {
        if let Some(key) = self.key.take() {
            self.ledger.commit_key(&key, id);
        }
    }

    /// The grant's key, kept by a holder that outlives this borrow (a
    /// run's admission), which then commits and releases it itself.
    pub(crate) fn detach(mut self) -> Option<Key> {
        self.key.take()
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.ledger.book().grants.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(memory: u64, pids: u64) -> SandboxLimits {
        SandboxLimits {
            memory_bytes: Some(memory),
            pids: Some(pids),
            cpu_millis: Some(1000),
            ..SandboxLimits::default()
        }
    }

    fn tenant(name: &str) -> TenantId {
        TenantId::parse(name).unwrap()
    }

    #[test]
    fn a_tenant_is_held_to_its_quota_and_others_are_not_blocked() {
        let ledger = QuotaLedger::new(Quotas {
            tenant: Quota {
                sandboxes: Some(2),
                ..Quota::default()
            },
            node: Quota::default(),
        });
        let (a, b) = (tenant("a"), tenant("b"));
        let id1 = SandboxId::generate();
        ledger
            .reserve(&a, &limits(1, 1), &Vec::new())
            .unwrap()
            .commit(&id1);
        let _second = ledger.reserve(&a, &limits(1, 1), &Vec::new()).unwrap();
        let refused = ledger.reserve(&a, &limits(1, 1), &Vec::new());
        assert!(
            matches!(
                refused,
                Err(ServiceError::QuotaExceeded {
                    scope: QuotaScope::Tenant,
                    quota: "sandboxes",
                    limit: 2,
                    used: 2,
                    asked: 1
                })
            ),
            "{refused:?}"
        );
        assert!(ledger.reserve(&b, &limits(1, 1), &Vec::new()).is_ok());
        ledger.release(&id1);
        assert!(ledger.reserve(&a, &limits(1, 1), &Vec::new()).is_ok());
    }

    #[test]
    fn node_totals_bound_the_sum_and_failed_starts_give_back() {
        let ledger = QuotaLedger::new(Quotas {
            tenant: Quota::default(),
            node: Quota {
                memory_bytes: Some(3 << 30),
                pids: Some(1000),
                ..Quota::default()
            },
        });
        let a = tenant("a");
        let first = ledger.reserve(&a, &limits(2 << 30, 100), &Vec::new());
        assert!(first.is_ok());
        let refused = ledger.reserve(&tenant("b"), &limits(2 << 30, 100), &Vec::new());
        assert!(
            matches!(
                refused,
                Err(ServiceError::QuotaExceeded {
                    scope: QuotaScope::Node,
                    quota: "memory_bytes",
                    ..
                })
            ),
            "{refused:?}"
        );
        drop(first);
        assert_eq!(ledger.used(None), Grant::default());
        // An unset limit fits no finite quota.
        let unbounded = SandboxLimits {
            pids: None,
            ..limits(1, 1)
        };
        assert!(matches!(
            ledger.reserve(&a, &unbounded, &Vec::new()),
            Err(ServiceError::QuotaExceeded { quota: "pids", .. })
        ));
    }

    /// Issue 26: a node quota's refusal tells the caller nothing of what
    /// other tenants hold (neither the node's use nor its limit); a tenant
    /// quota's shows the tenant's own figures.
    #[test]
    fn a_node_refusal_shows_no_node_figures() {
        let ledger = QuotaLedger::new(Quotas {
            tenant: Quota {
                pids: Some(5000),
                ..Quota::default()
            },
            node: Quota {
                pids: Some(1000),
                ..Quota::default()
            },
        });
        let held = ledger.reserve(&tenant("a"), &limits(1, 777), &Vec::new());
        assert!(held.is_ok());
        let refused = ledger
            .reserve(&tenant("b"), &limits(1, 300), &Vec::new())
            .map(|_| ())
            .unwrap_err();
        let text = refused.to_string();
        assert!(matches!(
            refused,
            ServiceError::QuotaExceeded {
                scope: QuotaScope::Node,
                ..
            }
        ));
        for figure in ["777", "1000"] {
            assert!(!text.contains(figure), "{text}");
        }
        assert!(text.contains("pids") && text.contains("300"), "{text}");
        let own = ledger
            .reserve(&tenant("a"), &limits(1, 4300), &Vec::new())
            .map(|_| ())
            .unwrap_err();
        assert_eq!(
            own.to_string(),
            "tenant quota pids exceeded: 777 in use of 5000, 4300 asked"
        );
    }

    #[test]
    fn grants_held_outside_the_ledger_count_too() {
        let ledger = QuotaLedger::new(Quotas {
            tenant: Quota {
                pids: Some(300),
                ..Quota::default()
            },
            node: Quota::default(),
        });
        let a = tenant("a");
        let run = SandboxId::generate();
        let others = vec![(run.clone(), a.clone(), Grant::of(&limits(1, 200)))];
        assert!(ledger.reserve(&a, &limits(1, 100), &others).is_ok());
        assert!(matches!(
            ledger.reserve(&a, &limits(1, 101), &others),
            Err(ServiceError::QuotaExceeded { used: 200, .. })
        ));
        assert_eq!(ledger.used(Some(&a)).pids, 0);
    }

    /// Issue 27: a root run's grant counts one run against `runs`; a
    /// subagent's (runs 0) only its sandbox; the default tenant quota caps
    /// both.
    #[test]
    fn a_root_run_counts_against_runs_and_a_subagent_does_not() {
        let ledger = QuotaLedger::new(Quotas {
            tenant: Quota {
                runs: Some(1),
                ..Quota::default()
            },
            node: Quota::default(),
        });
        let a = tenant("a");
        let run = Grant {
            runs: 1,
            ..Grant::of(&limits(1, 1))
        };
        let first = ledger.reserve_grant(&a, run, &Vec::new()).unwrap();
        assert!(
            ledger
                .reserve_grant(&a, Grant::of(&limits(1, 1)), &Vec::new())
                .is_ok()
        );
        let refused = ledger.reserve_grant(&a, run, &Vec::new()).map(|_| ());
        assert!(
            matches!(
                refused,
                Err(ServiceError::QuotaExceeded {
                    scope: QuotaScope::Tenant,
                    quota: "runs",
                    limit: 1,
                    used: 1,
                    asked: 1
                })
            ),
            "{refused:?}"
        );
        // held by its sandbox, then given back
        let key = first.detach().unwrap();
        let id = SandboxId::generate();
        let key = ledger.commit_key(&key, &id);
        assert_eq!(ledger.used(Some(&a)).runs, 1);
        ledger.release_key(&key);
        assert!(ledger.reserve_grant(&a, run, &Vec::new()).is_ok());
        let default = Quota::tenant_default();
        assert_eq!(
            (default.sandboxes, default.runs),
            (Some(DEFAULT_TENANT_SANDBOXES), Some(DEFAULT_TENANT_RUNS))
        );
    }

    #[test]
    fn node_totals_come_from_the_host_with_a_margin() {
        let host = HostTotals {
            pid_max: Some(32_768),
            memory_bytes: Some(24 << 30),
            cpus: 2,
        };
        let quota = host.quota();
        assert_eq!(quota.pids, Some(24_576));
        assert_eq!(quota.memory_bytes, Some(24 << 30));
        assert_eq!(quota.cpu_millis, Some(2 * 1000 * CPU_OVERCOMMIT));
        assert_eq!(
            mem_total("MemTotal:       24683652 kB\nMemFree: 1 kB\n"),
            Some(24_683_652 * 1024)
        );
        let read = HostTotals::read();
        assert!(read.pid_max.is_some_and(|p| p >= 300), "{read:?}");
        assert!(read.memory_bytes.is_some_and(|m| m > 0), "{read:?}");
    }
}
