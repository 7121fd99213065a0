//! The connection caps, and the share of them kept for authenticated
//! requests.
//!
//! A connection is admitted at accept when its peer address holds fewer than
//! `max_connections_per_peer`. Its token is known only once a request's
//! headers were read, so every connection starts *unproven*. A request whose
//! headers carry a valid token *proves* its connection for that tenant, as
//! long as the tenant holds fewer than `max_connections_per_tenant` proven
//! ones (past that share its connections stay unproven). Unproven
//! connections may hold at most `max_connections - reserved_connections`
//! places; when a new connection finds them at that mark (or the server at
//! `max_connections`), the oldest unproven connection is closed to make room.
//! Only when every place is held by proven connections is a new one refused.
//!
//! So peers without a token (or past their tenant's share) only ever take
//! places from each other: however many addresses they come from, a client
//! with a valid token gets a place (its new connection is the youngest
//! unproven one, the last to be closed) and keeps it once its headers are
//! read. A slow-header attacker cannot park in the reserve either: its
//! connections are the oldest and go first.

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use paddock_core::ids::TenantId;
use tokio_util::sync::CancellationToken;

/// The caps a [`Gate`] enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct GateLimits {
    pub max_connections: usize,
    pub per_peer: usize,
    /// Places unproven connections never hold.
    pub reserved: usize,
    /// Proven connections one tenant may hold.
    pub per_tenant: usize,
}

/// One ticket per open connection; see the module doc.
#[derive(Debug)]
pub(super) struct Gate {
    limits: GateLimits,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    next_id: u64,
    open: HashMap<u64, Open>,
    /// Unproven connections, oldest (lowest id) first.
    unproven: BTreeSet<u64>,
    peers: HashMap<IpAddr, usize>,
    proven: HashMap<TenantId, usize>,
}

#[derive(Debug)]
struct Open {
    peer: IpAddr,
    tenant: Option<TenantId>,
    evict: CancellationToken,
}

/// A connection's place; dropping it frees the place.
#[derive(Debug)]
pub(super) struct Ticket {
    gate: Arc<Gate>,
    id: u64,
    /// Cancelled when the gate closes this connection to make room.
    pub evicted: CancellationToken,
}

impl Gate {
    pub fn new(limits: GateLimits) -> Self {
        let max_connections = limits.max_connections.max(1);
        Self {
            limits: GateLimits {
                max_connections,
                per_peer: limits.per_peer.max(1),
                reserved: limits.reserved.min(max_connections - 1),
                per_tenant: limits.per_tenant.max(1),
            },
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for a new connection from `peer`, closing the oldest unproven
    /// connection when needed; None when refused.
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<Ticket> {
        let mut state = self.lock();
        if state.peers.get(&peer).copied().unwrap_or(0) >= self.limits.per_peer {
            return None;
        }
        let unproven_cap = self.limits.max_connections - self.limits.reserved;
        if state.open.len() >= self.limits.max_connections || state.unproven.len() >= unproven_cap {
            let oldest = state.unproven.first().copied()?;
            if let Some(open) = state.remove(oldest) {
                tracing::debug!(peer = %open.peer, %peer, "closing the oldest unproven connection to make room");
                open.evict.cancel();
            }
        }
        let id = state.next_id;
        state.next_id += 1;
        let evicted = CancellationToken::new();
        state.open.insert(
            id,
            Open {
                peer,
                tenant: None,
                evict: evicted.clone(),
            },
        );
        state.unproven.insert(id);
        *state.peers.entry(peer).or_insert(0) += 1;
        Some(Ticket {
            gate: self.clone(),
            id,
            evicted,
        })
    }

    /// `ticket`'s connection carried a request with `tenant`'s valid token:
    /// it keeps its place from now on, within the tenant's share.
    pub fn prove(&self, ticket: &Ticket, tenant: &TenantId) {
        let mut state = self.lock();
        let held = state.proven.get(tenant).copied().unwrap_or(0);
        if held >= self.limits.per_tenant {
            return;
        }
        let Some(open) = state.open.get_mut(&ticket.id) else {
            return;
        };
        if open.tenant.is_some() {
            return;
        }
        open.tenant = Some(tenant.clone());
        state.unproven.remove(&ticket.id);
        *state.proven.entry(tenant.clone()).or_insert(0) += 1;
    }

    #[cfg(test)]
    fn counts(&self) -> (usize, usize) {
        let state = self.lock();
        (state.open.len(), state.unproven.len())
    }
}

impl State {
    fn remove(&mut self, id: u64) -> Option<Open> {
        let open = self.open.remove(&id)?;
        self.unproven.remove(&id);
        decrement(&mut self.peers, &open.peer);
        if let Some(tenant) = &open.tenant {
            decrement(&mut self.proven, tenant);
        }
        Some(open)
    }
}

fn decrement<K: std::hash::Hash + Eq>(counts: &mut HashMap<K, usize>, key: &K) {
    if let Some(count) = counts.get_mut(key) {
        *count -= 1;
        if *count == 0 {
            counts.remove(key);
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.gate.lock().remove(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    fn gate(
        max_connections: usize,
        per_peer: usize,
        reserved: usize,
        per_tenant: usize,
    ) -> Arc<Gate> {
        Arc::new(Gate::new(GateLimits {
            max_connections,
            per_peer,
            reserved,
            per_tenant,
        }))
    }

    #[test]
    fn each_peer_is_capped() {
        let gate = gate(10, 2, 0, 1);
        let first = gate.admit(ip(2)).unwrap();
        let _second = gate.admit(ip(2)).unwrap();
        assert!(gate.admit(ip(2)).is_none(), "third from one peer refused");
        assert!(gate.admit(ip(3)).is_some(), "another peer admitted");
        drop(first);
        assert!(
            gate.admit(ip(2)).is_some(),
            "a closed connection frees its place"
        );
    }

    #[test]
    fn past_the_unproven_share_the_oldest_unproven_connection_goes() {
        // 6 places, 2 of them only for proven connections.
        let gate = gate(6, 1, 2, 4);
        let tickets: Vec<Ticket> = (1..=4).map(|i| gate.admit(ip(i)).unwrap()).collect();
        assert_eq!(gate.counts(), (4, 4));
        assert!(tickets.iter().all(|t| !t.evicted.is_cancelled()));
        // A fifth unproven connection: the oldest makes room.
        let fifth = gate.admit(ip(5)).unwrap();
        assert!(tickets[0].evicted.is_cancelled());
        assert!(!tickets[1].evicted.is_cancelled());
        assert_eq!(gate.counts(), (4, 4));
        // Its ticket dropping later frees nothing twice.
        drop(tickets);
        assert_eq!(gate.counts(), (1, 1));
        drop(fifth);
        assert_eq!(gate.counts(), (0, 0));
    }

    #[test]
    fn a_proven_connection_keeps_its_place() {
        let acme = TenantId::parse("acme").unwrap();
        let gate = gate(4, 4, 1, 2);
        let proven = gate.admit(ip(9)).unwrap();
        gate.prove(&proven, &acme);
        // Attackers fill the unproven places (3) and keep coming.
        let mut attackers = Vec::new();
        for round in 0..20u8 {
            attackers.push(gate.admit(ip(10 + round % 5)).unwrap());
        }
        assert!(
            !proven.evicted.is_cancelled(),
            "the proven connection stays"
        );
        let open = attackers
            .iter()
            .filter(|t| !t.evicted.is_cancelled())
            .count();
        assert_eq!(open, 3, "unproven connections hold max - reserved");
        // A newcomer still gets in, and keeps its place once proven.
        let victim = gate.admit(ip(8)).unwrap();
        gate.prove(&victim, &acme);
        for _ in 0..10 {
            attackers.push(gate.admit(ip(11)).unwrap_or_else(|| panic!("refused")));
        }
        assert!(!victim.evicted.is_cancelled());
        assert_eq!(gate.counts(), (4, 2));
    }

    #[test]
    fn a_tenant_proves_no_more_than_its_share() {
        let abuse = TenantId::parse("abuse").unwrap();
        let victim = TenantId::parse("victim").unwrap();
        let gate = gate(4, 4, 1, 2);
        let mine: Vec<Ticket> = (0..4)
            .map(|_| {
                let ticket = gate.admit(ip(2)).unwrap();
                gate.prove(&ticket, &abuse);
                ticket
            })
            .collect();
        // Two proven, two unproven: a newcomer closes the oldest unproven.
        assert_eq!(gate.counts(), (4, 2));
        let theirs = gate.admit(ip(3)).unwrap();
        assert!(mine[2].evicted.is_cancelled());
        gate.prove(&theirs, &victim);
        assert_eq!(gate.counts(), (4, 1));
        // Every place proven: refused.
        let last = gate.admit(ip(4)).unwrap();
        gate.prove(&last, &victim);
        assert!(gate.admit(ip(5)).is_none(), "all places proven");
    }
}
