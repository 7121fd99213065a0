//! Request body bytes held in memory, charged as they arrive (never by the
//! length a request declares), over all requests and per tenant: a tenant's
//! requests together hold at most its share, so one tenant cannot take the
//! whole budget from the others. Requests without a valid token share one
//! share between them. A body is charged up to the largest body a handler
//! collects (`max_body_bytes`): past that it can only be a streamed upload
//! (an archive import), whose pieces are passed on, not kept.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use paddock_core::ids::TenantId;

/// Who a body is charged to: a tenant, or None for requests without a valid token.
pub(super) type Payer = Option<TenantId>;

/// Why a piece of a body did not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refused {
    /// Every request together holds `limit` bytes (`http.max_body_memory_bytes`).
    Server { limit: usize },
    /// This payer's requests hold `limit` bytes (`http.max_body_memory_per_tenant_bytes`).
    Tenant { limit: usize },
}

#[derive(Debug)]
pub(super) struct BodyBudget {
    total: usize,
    per_tenant: usize,
    /// The most one body is charged.
    per_body: usize,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    total: usize,
    by_payer: HashMap<Payer, usize>,
}

impl BodyBudget {
    /// A share below one largest body would refuse such a body always: it
    /// is raised to that (the config refuses it at start).
    pub fn new(total: usize, per_tenant: usize, per_body: usize) -> Self {
        let total = total.max(1);
        let per_body = per_body.max(1);
        Self {
            total,
            per_tenant: per_tenant.max(per_body.min(total)).clamp(1, total),
            per_body,
            held: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes `bytes` for `payer`, or nothing when they do not fit.
    fn charge(&self, payer: &Payer, bytes: usize) -> Result<(), Refused> {
        let mut held = self.lock();
        let mine = held.by_payer.get(payer).copied().unwrap_or(0);
        if mine.saturating_add(bytes) > self.per_tenant {
            return Err(Refused::Tenant {
                limit: self.per_tenant,
            });
        }
        if held.total.saturating_add(bytes) > self.total {
            return Err(Refused::Server { limit: self.total });
        }
        held.total += bytes;
        *held.by_payer.entry(payer.clone()).or_insert(0) += bytes;
        Ok(())
    }

    fn release(&self, payer: &Payer, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let mut held = self.lock();
        held.total = held.total.saturating_sub(bytes);
        if let Some(mine) = held.by_payer.get_mut(payer) {
            *mine = mine.saturating_sub(bytes);
            if *mine == 0 {
                held.by_payer.remove(payer);
            }
        }
    }

    /// Bytes held in all and by `payer`.
    #[cfg(test)]
    fn held(&self, payer: &Payer) -> (usize, usize) {
        let held = self.lock();
        (held.total, held.by_payer.get(payer).copied().unwrap_or(0))
    }
}

/// What one request's body holds of the budget; all of it is returned when
/// the charge drops (the transport keeps it until the request is answered,
/// since the handler holds the bytes until then).
#[derive(Debug)]
pub(super) struct Charge {
    budget: Arc<BodyBudget>,
    payer: Payer,
    held: AtomicUsize,
}

impl Charge {
    pub fn new(budget: Arc<BodyBudget>, payer: Payer) -> Self {
        Self {
            budget,
            payer,
            held: AtomicUsize::new(0),
        }
    }

    /// Charges `bytes` that just arrived (as far as the body's charge is
    /// below the most one body is charged).
    pub fn add(&self, bytes: usize) -> Result<(), Refused> {
        let held = self.held.load(Ordering::Relaxed);
        let bytes = bytes.min(self.budget.per_body.saturating_sub(held));
        if bytes == 0 {
            return Ok(());
        }
        self.budget.charge(&self.payer, bytes)?;
        self.held.fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Whose budget this is.
    pub fn payer(&self) -> &Payer {
        &self.payer
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget
            .release(&self.payer, self.held.load(Ordering::Relaxed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(name: &str) -> Payer {
        Some(TenantId::parse(name).unwrap())
    }

    #[test]
    fn bytes_are_charged_as_they_arrive_and_returned_on_drop() {
        let budget = Arc::new(BodyBudget::new(100, 60, 50));
        let acme = tenant("acme");
        let charge = Charge::new(budget.clone(), acme.clone());
        // A declared length costs nothing: only what arrived is held.
        assert_eq!(budget.held(&acme), (0, 0));
        charge.add(10).unwrap();
        charge.add(15).unwrap();
        assert_eq!(budget.held(&acme), (25, 25));
        // Past the largest collected body (50) a streamed upload's pieces
        // are passed on, not held: no more is charged.
        charge.add(40).unwrap();
        charge.add(40).unwrap();
        assert_eq!(budget.held(&acme), (50, 50));
        drop(charge);
        assert_eq!(budget.held(&acme), (0, 0));
    }

    #[test]
    fn one_tenant_holds_at_most_its_share() {
        let budget = Arc::new(BodyBudget::new(100, 40, 40));
        let (abuse, victim) = (tenant("abuse"), tenant("victim"));
        let first = Charge::new(budget.clone(), abuse.clone());
        let second = Charge::new(budget.clone(), abuse.clone());
        first.add(30).unwrap();
        assert_eq!(second.add(11), Err(Refused::Tenant { limit: 40 }));
        second.add(10).unwrap();
        // A refused piece is not held.
        assert_eq!(budget.held(&abuse), (40, 40));
        // Another tenant still has room; so do requests without a token.
        let theirs = Charge::new(budget.clone(), victim.clone());
        theirs.add(40).unwrap();
        let anonymous = Charge::new(budget.clone(), None);
        anonymous.add(20).unwrap();
        // ...until the whole budget is held.
        assert_eq!(anonymous.add(1), Err(Refused::Server { limit: 100 }));
        drop(first);
        assert_eq!(budget.held(&abuse), (70, 10));
        anonymous.add(20).unwrap();
        assert_eq!(anonymous.payer(), &None);
    }

    #[test]
    fn the_share_is_never_above_the_total() {
        let budget = Arc::new(BodyBudget::new(50, 500, 500));
        let charge = Charge::new(budget.clone(), tenant("acme"));
        charge.add(50).unwrap();
        assert_eq!(charge.add(1), Err(Refused::Tenant { limit: 50 }));
    }
}
