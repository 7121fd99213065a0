//! The sandbox's policy, swappable while it runs, and its open connections
//! by destination, so that a change cuts those the new policy refuses.
//!
//! Ordering: a connection registers before it reads the policy, and a
//! change swaps the policy before it walks the registry (both under the
//! registry's lock). A connection either registered before the walk (and
//! is cut if refused) or reads the new policy (and is refused): none
//! admitted by the old rules outlives the change.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use paddock_proto::{NetworkPolicy, Target};
use tokio::sync::oneshot;

/// The policy and the open connections of one sandbox's proxy.
#[derive(Debug)]
pub(crate) struct Live {
    policy: RwLock<Arc<NetworkPolicy>>,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    next: u64,
    by_id: HashMap<u64, Entry>,
}

#[derive(Debug)]
struct Entry {
    target: Target,
    port: u16,
    cut: oneshot::Sender<()>,
}

/// What a change did: the connections it cut (destination, port).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PolicyChange {
    pub old: NetworkPolicy,
    pub cut: Vec<(String, u16)>,
}

impl Live {
    pub(crate) fn new(policy: NetworkPolicy) -> Self {
        Self {
            policy: RwLock::new(Arc::new(policy)),
            open: Mutex::new(Open::default()),
        }
    }

    /// The policy now.
    pub(crate) fn policy(&self) -> Arc<NetworkPolicy> {
        match self.policy.read() {
            Ok(p) => p.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Puts `policy` in place and cuts every open connection it refuses.
    pub(crate) fn swap(&self, policy: NetworkPolicy) -> PolicyChange {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let new = Arc::new(policy);
        let old = {
            let mut slot = self.policy.write().unwrap_or_else(|p| p.into_inner());
            std::mem::replace(&mut *slot, new.clone())
        };
        let refused: Vec<u64> = open
            .by_id
            .iter()
            .filter(|(_, e)| !new.allows(&e.target, e.port))
            .map(|(id, _)| *id)
            .collect();
        let mut cut = Vec::with_capacity(refused.len());
        for id in refused {
            if let Some(entry) = open.by_id.remove(&id) {
                // the receiver may be gone already (the connection ending)
                let _ = entry.cut.send(());
                cut.push((entry.target.to_string(), entry.port));
            }
        }
        cut.sort();
        PolicyChange {
            old: Arc::unwrap_or_clone(old),
            cut,
        }
    }

    /// Registers a connection to `target:port` (before its policy check);
    /// dropping the returned handle unregisters it.
    pub(crate) fn register(self: &Arc<Self>, target: &Target, port: u16) -> Registration {
        let (tx, rx) = oneshot::channel();
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let id = open.next;
        open.next += 1;
        open.by_id.insert(
            id,
            Entry {
                target: target.clone(),
                port,
                cut: tx,
            },
        );
        Registration {
            id,
            live: self.clone(),
            cut: rx,
        }
    }

    #[cfg(test)]
    pub(crate) fn open_count(&self) -> usize {
        self.open.lock().map(|o| o.by_id.len()).unwrap_or(0)
    }
}

/// One open connection in the registry.
#[derive(Debug)]
pub(crate) struct Registration {
    id: u64,
    live: Arc<Live>,
    cut: oneshot::Receiver<()>,
}

/// A connection ended by a policy change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut;

impl Cut {
    pub(crate) fn reason(target: &str, port: u16) -> String {
        format!(
            "cut: {target}:{port} is no longer allowed by the sandbox's network policy (changed while the connection was open)"
        )
    }
}

impl Registration {
    /// Runs `relay` until it ends or a change cuts the connection (the
    /// future is dropped, closing its sockets).
    pub(crate) async fn until_cut<F: std::future::Future>(
        &mut self,
        relay: F,
    ) -> Result<F::Output, Cut> {
        tokio::select! {
            out = relay => Ok(out),
            // Err: the sender was dropped without a cut (the Live is gone
            // with its proxy); then the relay goes on until it ends.
            Ok(()) = &mut self.cut => Err(Cut),
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Ok(mut open) = self.live.open.lock() {
            open.by_id.remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn allow(hosts: &str) -> NetworkPolicy {
        format!("allow:{hosts}").parse().unwrap()
    }

    fn name(n: &str) -> Target {
        Target::Name(n.to_owned())
    }

    #[tokio::test]
    async fn a_swap_cuts_only_connections_the_new_policy_refuses() {
        let live = Arc::new(Live::new(allow("a.test,b.test")));
        let mut to_a = live.register(&name("a.test"), 443);
        let mut to_b = live.register(&name("b.test"), 443);
        assert_eq!(live.open_count(), 2);

        let swapped = live.swap(allow("b.test,c.test"));
        assert_eq!(swapped.old, allow("a.test,b.test"));
        assert_eq!(swapped.cut, vec![("a.test".to_owned(), 443)]);
        assert_eq!(*live.policy(), allow("b.test,c.test"));

        let forever = std::future::pending::<()>();
        assert_eq!(to_a.until_cut(forever).await, Err(Cut));
        let b = tokio::time::timeout(
            std::time::Duration::from_millis(50),
            to_b.until_cut(std::future::pending::<()>()),
        )
        .await;
        assert!(b.is_err(), "b.test stays open");
        assert_eq!(to_b.until_cut(async { 7 }).await, Ok(7));
        drop((to_a, to_b));
        assert_eq!(live.open_count(), 0);
    }

    #[tokio::test]
    async fn a_port_leaving_the_list_cuts_its_connections() {
        let live = Arc::new(Live::new(allow("a.test:22,a.test")));
        let mut ssh = live.register(&name("a.test"), 22);
        let _https = live.register(&name("a.test"), 443);
        let swapped = live.swap(allow("a.test"));
        assert_eq!(swapped.cut, vec![("a.test".to_owned(), 22)]);
        assert_eq!(ssh.until_cut(std::future::pending::<()>()).await, Err(Cut));
        assert_eq!(live.open_count(), 1);
    }

    #[test]
    fn a_connection_registered_after_a_swap_reads_the_new_policy() {
        let live = Arc::new(Live::new(allow("a.test")));
        live.swap(allow("b.test"));
        let _late = live.register(&name("a.test"), 443);
        assert!(!live.policy().allows(&name("a.test"), 443));
        assert!(live.policy().allows(&name("b.test"), 443));
    }
}
