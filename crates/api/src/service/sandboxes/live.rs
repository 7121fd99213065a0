//! A running sandbox the service owns: its handle, its guest, and when it was
//! last used.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

use paddock_core::ids::TenantId;
use paddock_core::sandbox::{EgressLog, GuestOps, Sandbox, SandboxId};
use paddock_core::store::{Clock, Lease, Timestamp};
use tokio::sync::Mutex;

use super::network::NetworkState;

#[derive(Debug)]
pub(crate) struct Live {
    pub id: SandboxId,
    pub tenant: TenantId,
    pub guest: Arc<dyn GuestOps>,
    /// The egress decisions of a sandbox with network.
    pub egress: Option<EgressLog>,
    /// Taken once, by whoever retires the sandbox.
    pub handle: Mutex<Option<Box<dyn Sandbox>>>,
    pub expires_at: Timestamp,
    /// The workspace's writer lease of a read-write sandbox over one.
    pub writer: Option<Lease>,
    /// The leases of its read-write volume mounts (`volume_mounts.rs`).
    pub volume_leases: Vec<Lease>,
    pub created_at: Timestamp,
    /// It was started with secrets (their values are not stored: pausing
    /// it is refused, since a resume could not inject them).
    pub secrets: bool,
    /// A console sandbox's keep-alive deadline (milliseconds): it is ended
    /// once this passes while nothing uses it (see `console.rs`). None: an
    /// ordinary sandbox, kept until idle or too old.
    keepalive_until: Option<AtomicI64>,
    activity: Arc<Activity>,
    /// Environment every command starts with, beneath its own.
    pub env: Arc<BTreeMap<String, String>>,
    /// When it ends whatever it does (milliseconds), set by the caller
    /// (E2B's sandbox timeout); None: ended when idle or too old.
    deadline: std::sync::Mutex<Option<Timestamp>>,
    /// Its network now and the changes made to it while it runs.
    network: std::sync::Mutex<NetworkState>,
}

impl Live {
    pub fn new(
        sandbox: Box<dyn Sandbox>,
        tenant: TenantId,
        now: Timestamp,
        expires_at: Timestamp,
        writer: Option<Lease>,
        keepalive_until: Option<Timestamp>,
    ) -> Self {
        let network = NetworkState::new(sandbox.info().network.clone());
        Self {
            network: std::sync::Mutex::new(network),
            id: sandbox.info().id.clone(),
            tenant,
            guest: sandbox.guest(),
            egress: sandbox.egress_log(),
            handle: Mutex::new(Some(sandbox)),
            expires_at,
            writer,
            volume_leases: Vec::new(),
            created_at: now,
            secrets: false,
            keepalive_until: keepalive_until.map(|t| AtomicI64::new(t.as_millis())),
            env: Arc::default(),
            deadline: std::sync::Mutex::new(None),
            activity: Arc::new(Activity {
                last: AtomicI64::new(now.as_millis()),
                flushed: AtomicI64::new(now.as_millis()),
                busy: AtomicUsize::new(0),
            }),
        }
    }

    /// When it ends whatever it does, if the caller set a deadline.
    pub fn deadline(&self) -> Option<Timestamp> {
        *self.deadline.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets (or with None clears) the deadline.
    pub fn set_deadline(&self, at: Option<Timestamp>) {
        *self.deadline.lock().unwrap_or_else(|e| e.into_inner()) = at;
    }

    /// `spec` with the sandbox's default environment beneath its own.
    pub fn with_env(&self, mut spec: paddock_proto::ExecSpec) -> paddock_proto::ExecSpec {
        for (name, value) in self.env.iter() {
            spec.env
                .entry(name.clone())
                .or_insert_with(|| value.clone());
        }
        spec
    }

    /// Why the sandbox cannot be saved whole (`full` pause), or None; a
    /// sandbox already released says so too.
    pub async fn suspend_refusal(&self) -> Option<String> {
        match self.handle.lock().await.as_ref() {
            Some(sandbox) => sandbox.suspend_refusal(),
            None => Some("it is being stopped".to_owned()),
        }
    }

    /// Marks the sandbox in use until the guard is dropped; idle expiry never
    /// takes a sandbox while a request (or an exec stream) uses it.
    pub fn use_now(&self, clock: Arc<dyn Clock>) -> ActivityGuard {
        self.activity.busy.fetch_add(1, Ordering::SeqCst);
        self.activity
            .last
            .fetch_max(clock.now().as_millis(), Ordering::SeqCst);
        ActivityGuard {
            activity: self.activity.clone(),
            clock,
        }
    }

    pub fn last_active(&self) -> Timestamp {
        Timestamp::from_millis(self.activity.last.load(Ordering::SeqCst))
    }

    /// Whether this is a console sandbox (kept alive by its page).
    pub fn is_console(&self) -> bool {
        self.keepalive_until.is_some()
    }

    /// A console sandbox's keep-alive deadline.
    pub fn keepalive_until(&self) -> Option<Timestamp> {
        self.keepalive_until
            .as_ref()
            .map(|t| Timestamp::from_millis(t.load(Ordering::SeqCst)))
    }

    /// Sets a console sandbox's keep-alive deadline (earlier or later: a
    /// page that goes away shortens it); false for an ordinary sandbox.
    pub fn keep_alive_until(&self, until: Timestamp) -> bool {
        match &self.keepalive_until {
            Some(t) => {
                t.store(until.as_millis(), Ordering::SeqCst);
                true
            }
            None => false,
        }
    }

    pub fn network(&self) -> std::sync::MutexGuard<'_, NetworkState> {
        self.network.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn is_busy(&self) -> bool {
        self.activity.busy.load(Ordering::SeqCst) > 0
    }

    /// The last activity when it is newer than what the store has, marking it stored.
    pub fn take_unflushed(&self) -> Option<Timestamp> {
        let last = self.activity.last.load(Ordering::SeqCst);
        let before = self.activity.flushed.fetch_max(last, Ordering::SeqCst);
        (last > before).then(|| Timestamp::from_millis(last))
    }
}

#[derive(Debug)]
struct Activity {
    /// Milliseconds of the last use (start or end of a request).
    last: AtomicI64,
    /// The last use the store knows of.
    flushed: AtomicI64,
    /// Requests and streams using the sandbox now.
    busy: AtomicUsize,
}

/// Held while a request uses a sandbox.
#[derive(Debug)]
pub struct ActivityGuard {
    activity: Arc<Activity>,
    clock: Arc<dyn Clock>,
}

impl Drop for ActivityGuard {
    fn drop(&mut self) {
        self.activity
            .last
            .fetch_max(self.clock.now().as_millis(), Ordering::SeqCst);
        self.activity.busy.fetch_sub(1, Ordering::SeqCst);
    }
}
