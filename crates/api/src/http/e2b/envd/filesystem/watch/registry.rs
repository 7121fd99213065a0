//! The watchers `CreateWatcher` made, which outlive its call: each bound
//! to the sandbox (and tenant) that made it, at most `per_sandbox` of one
//! sandbox and `total` in all, and dropped once `idle` passed without a
//! read (swept on every call that takes the registry). Another sandbox's
//! watcher, or another tenant's, is answered as no watcher at all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use paddock_core::ids::TenantId;
use paddock_core::sandbox::SandboxId;
use tokio::time::Instant;

use super::super::super::connect::{Code, ConnectError};

/// Whose a watcher is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner {
    pub tenant: TenantId,
    pub sandbox: SandboxId,
}

/// How many watchers the registry keeps, and for how long unread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub per_sandbox: usize,
    pub total: usize,
    pub idle: Duration,
}

/// The watchers by id; `W` is what a watcher holds.
#[derive(Debug)]
pub struct Registry<W> {
    limits: Limits,
    watchers: Mutex<HashMap<String, Registered<W>>>,
}

#[derive(Debug)]
struct Registered<W> {
    owner: Owner,
    /// Made, or last read.
    last_read: Instant,
    watch: Arc<W>,
}

impl<W> Registry<W> {
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            watchers: Mutex::new(HashMap::new()),
        }
    }

    /// The map with the watchers idle since before `now - idle` swept out.
    fn swept(&self, now: Instant) -> MutexGuard<'_, HashMap<String, Registered<W>>> {
        let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        let idle = self.limits.idle;
        watchers.retain(|_, w| now.saturating_duration_since(w.last_read) < idle);
        watchers
    }

    /// Whether `owner` may have one more watcher; resource_exhausted when
    /// not (checked again by [`Registry::insert`], so that a watcher's
    /// first listing is not made for nothing).
    pub fn room_for(&self, owner: &Owner, now: Instant) -> Result<(), ConnectError> {
        self.check_room(&self.swept(now), owner)
    }

    fn check_room(
        &self,
        watchers: &HashMap<String, Registered<W>>,
        owner: &Owner,
    ) -> Result<(), ConnectError> {
        let mine = watchers.values().filter(|w| &w.owner == owner).count();
        if mine >= self.limits.per_sandbox {
            return Err(ConnectError::new(
                Code::ResourceExhausted,
                format!(
                    "this sandbox has {mine} watchers, the most it may: remove one first (RemoveWatcher)"
                ),
            ));
        }
        if watchers.len() >= self.limits.total {
            return Err(ConnectError::new(
                Code::ResourceExhausted,
                format!(
                    "this server keeps {} watchers, the most it may: try again later or remove one",
                    watchers.len()
                ),
            ));
        }
        Ok(())
    }

    /// Keeps `watch` as `id`, `owner`'s, if there is room.
    pub fn insert(
        &self,
        id: String,
        owner: Owner,
        watch: Arc<W>,
        now: Instant,
    ) -> Result<(), ConnectError> {
        let mut watchers = self.swept(now);
        self.check_room(&watchers, &owner)?;
        watchers.insert(
            id,
            Registered {
                owner,
                last_read: now,
                watch,
            },
        );
        Ok(())
    }

    /// `owner`'s watcher `id`, marked read at `now`.
    pub fn read(&self, id: &str, owner: &Owner, now: Instant) -> Result<Arc<W>, ConnectError> {
        let mut watchers = self.swept(now);
        match watchers.get_mut(id).filter(|w| &w.owner == owner) {
            Some(found) => {
                found.last_read = now;
                Ok(found.watch.clone())
            }
            None => Err(not_found(id)),
        }
    }

    /// Drops `owner`'s watcher `id`.
    pub fn remove(&self, id: &str, owner: &Owner, now: Instant) -> Result<(), ConnectError> {
        let mut watchers = self.swept(now);
        match watchers.get(id) {
            Some(found) if &found.owner == owner => {
                watchers.remove(id);
                Ok(())
            }
            _ => Err(not_found(id)),
        }
    }

    /// Drops every watcher of `owner` (its sandbox is gone); how many.
    pub fn forget(&self, owner: &Owner) -> usize {
        let mut watchers = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        let before = watchers.len();
        watchers.retain(|_, w| &w.owner != owner);
        before - watchers.len()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.watchers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

/// envd's answer for an id it does not have.
fn not_found(id: &str) -> ConnectError {
    ConnectError::new(Code::NotFound, format!("watcher with id {id} not found"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        per_sandbox: 2,
        total: 3,
        idle: Duration::from_secs(600),
    };

    fn owner(tenant: &str) -> Owner {
        Owner {
            tenant: TenantId::parse(tenant).unwrap(),
            sandbox: SandboxId::generate(),
        }
    }

    #[test]
    fn a_watcher_is_read_and_removed_by_its_owner_only() {
        let registry = Registry::new(LIMITS);
        let now = Instant::now();
        let mine = owner("t1");
        registry
            .insert("w1".into(), mine.clone(), Arc::new(7), now)
            .unwrap();
        assert_eq!(*registry.read("w1", &mine, now).unwrap(), 7);

        // Another sandbox of the same tenant, and another tenant's sandbox
        // of the same id, see no such watcher.
        let other_sandbox = Owner {
            sandbox: SandboxId::generate(),
            ..mine.clone()
        };
        let other_tenant = Owner {
            tenant: TenantId::parse("t2").unwrap(),
            ..mine.clone()
        };
        for stranger in [&other_sandbox, &other_tenant] {
            let err = registry.read("w1", stranger, now).unwrap_err();
            assert_eq!(err.code, Code::NotFound);
            assert_eq!(err.message, "watcher with id w1 not found");
            let err = registry.remove("w1", stranger, now).unwrap_err();
            assert_eq!(err.code, Code::NotFound);
        }
        assert_eq!(
            registry.read("nope", &mine, now).unwrap_err().code,
            Code::NotFound
        );

        registry.remove("w1", &mine, now).unwrap();
        assert_eq!(
            registry.read("w1", &mine, now).unwrap_err().code,
            Code::NotFound
        );
        assert_eq!(
            registry.remove("w1", &mine, now).unwrap_err().code,
            Code::NotFound
        );
    }

    #[test]
    fn a_sandbox_holds_at_most_its_share_and_the_server_its_total() {
        let registry = Registry::new(LIMITS);
        let now = Instant::now();
        let (a, b) = (owner("t1"), owner("t1"));
        registry
            .insert("a1".into(), a.clone(), Arc::new(()), now)
            .unwrap();
        registry
            .insert("a2".into(), a.clone(), Arc::new(()), now)
            .unwrap();
        let err = registry.room_for(&a, now).unwrap_err();
        assert_eq!(err.code, Code::ResourceExhausted);
        assert!(
            err.message.contains("this sandbox has 2 watchers"),
            "{}",
            err.message
        );
        let err = registry
            .insert("a3".into(), a.clone(), Arc::new(()), now)
            .unwrap_err();
        assert_eq!(err.code, Code::ResourceExhausted);

        registry.room_for(&b, now).unwrap();
        registry
            .insert("b1".into(), b.clone(), Arc::new(()), now)
            .unwrap();
        let err = registry
            .insert("b2".into(), b.clone(), Arc::new(()), now)
            .unwrap_err();
        assert_eq!(err.code, Code::ResourceExhausted);
        assert!(err.message.contains("keeps 3 watchers"), "{}", err.message);

        // Removing one makes room again.
        registry.remove("a1", &a, now).unwrap();
        registry.insert("b2".into(), b, Arc::new(()), now).unwrap();
        assert_eq!(registry.len(), 3);
    }

    #[test]
    fn a_watcher_unread_for_the_idle_time_is_swept() {
        let registry = Registry::new(LIMITS);
        let start = Instant::now();
        let mine = owner("t1");
        registry
            .insert("old".into(), mine.clone(), Arc::new(()), start)
            .unwrap();
        registry
            .insert("read".into(), mine.clone(), Arc::new(()), start)
            .unwrap();
        // Reading one keeps it; the other goes ten minutes after it was made.
        let later = start + Duration::from_secs(300);
        registry.read("read", &mine, later).unwrap();
        let gone = start + LIMITS.idle;
        let err = registry.read("old", &mine, gone).unwrap_err();
        assert_eq!(err.code, Code::NotFound);
        assert_eq!(registry.len(), 1);
        registry.read("read", &mine, gone).unwrap();
        // The sweep frees the sandbox's share too.
        registry.room_for(&mine, gone).unwrap();
        let err = registry
            .read("read", &mine, gone + LIMITS.idle)
            .unwrap_err();
        assert_eq!(err.code, Code::NotFound);
        assert_eq!(registry.len(), 0);
    }

    #[test]
    fn a_gone_sandboxs_watchers_are_forgotten() {
        let registry = Registry::new(LIMITS);
        let now = Instant::now();
        let (gone, kept) = (owner("t1"), owner("t1"));
        registry
            .insert("g1".into(), gone.clone(), Arc::new(()), now)
            .unwrap();
        registry
            .insert("g2".into(), gone.clone(), Arc::new(()), now)
            .unwrap();
        registry
            .insert("k1".into(), kept.clone(), Arc::new(()), now)
            .unwrap();
        assert_eq!(registry.forget(&gone), 2);
        assert_eq!(
            registry.read("g1", &gone, now).unwrap_err().code,
            Code::NotFound
        );
        registry.read("k1", &kept, now).unwrap();
        assert_eq!(registry.forget(&gone), 0);
    }
}
