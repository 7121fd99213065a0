//! A warm pool in front of any backend: sandboxes of one profile started
//! ahead of time, handed out on `create`, refilled in the background, and
//! never handed out twice (a sandbox that served one tenant is that
//! tenant's to destroy).
//!
//! Only requests for exactly the pool's profile with a temporary
//! workspace are served from it: a container's workspace is bound when the
//! engine starts it, so a request naming a workspace directory, other
//! limits or another network starts a sandbox of its own.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use paddock_core::sandbox::{
    OrphanReport, Sandbox, SandboxBackend, SandboxError, SandboxId, SandboxSpec,
};
use paddock_proto::ExecSpec;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// How long the refiller waits after a failed start before trying again.
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// The longest a pooled sandbox's warm-up command may take.
const WARM_UP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the refiller waits after a hand-out before it starts the next
/// sandbox. Starting one is a burst of work on every core (the engine
/// creates a container, runsc boots a sentry, QEMU a kernel); begun at the
/// moment of the hand-out it competes with the tenant's first commands in
/// the sandbox just handed out, which is what the pool is there to make
/// fast (gVisor on 2 cores: 25.6 ms to the first exec with the burst, see
/// the start benchmark). Hand-outs within this window are refilled together.
const REFILL_DELAY: Duration = Duration::from_millis(250);

/// Run once in each sandbox before it is queued. A sandbox's first command
/// pays for what its kernel does once (gVisor's sentry faults in the
/// guest's pages and loads the shell and libc into its caches on the first
/// fork and exec); paid here, the tenant's first command does not wait for
/// it. `true` writes nothing, so the sandbox a tenant gets is as fresh as
/// a new one.
const WARM_UP: &str = "true";

#[derive(Debug)]
struct Shared {
    ready: Mutex<VecDeque<Box<dyn Sandbox>>>,
    /// Wakes the refiller (a sandbox was taken).
    taken: Notify,
    /// Wakes waiters of [`WarmPool::wait_full`] (a sandbox was added).
    added: Notify,
    size: usize,
}

impl Shared {
    fn ready(&self) -> std::sync::MutexGuard<'_, VecDeque<Box<dyn Sandbox>>> {
        self.ready.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A backend with `size` sandboxes of `profile` kept started.
#[derive(Debug)]
pub struct WarmPool {
    backend: Arc<dyn SandboxBackend>,
    profile: SandboxSpec,
    shared: Arc<Shared>,
    refiller: Mutex<Option<JoinHandle<()>>>,
}

impl WarmPool {
    /// [`Self::new`] and [`Self::fill`].
    pub fn start(backend: Arc<dyn SandboxBackend>, profile: SandboxSpec, size: usize) -> Self {
        let pool = Self::new(backend, profile, size);
        pool.fill();
        pool
    }

    /// An empty pool that starts nothing until [`Self::fill`] (a server
    /// reaps the orphans of its node first: a sandbox still starting is no
    /// orphan, but nothing could tell). `profile.workspace` must be None
    /// (pooled sandboxes have temporary workspaces); it is cleared.
    pub fn new(backend: Arc<dyn SandboxBackend>, mut profile: SandboxSpec, size: usize) -> Self {
        profile.workspace = None;
        let shared = Arc::new(Shared {
            ready: Mutex::new(VecDeque::with_capacity(size)),
            taken: Notify::new(),
            added: Notify::new(),
            size,
        });
        Self {
            backend,
            profile,
            shared,
            refiller: Mutex::new(None),
        }
    }

    /// Starts the refiller on the current runtime (once; later calls do nothing).
    pub fn fill(&self) {
        let mut refiller = self.refiller.lock().unwrap_or_else(|e| e.into_inner());
        if refiller.is_none() {
            *refiller = Some(tokio::spawn(refill(
                self.backend.clone(),
                self.profile.clone(),
                self.shared.clone(),
            )));
        }
    }

    /// Sandboxes ready to hand out now.
    pub fn ready(&self) -> usize {
        self.shared.ready().len()
    }

    /// Ids of the sandboxes waiting in the pool.
    pub fn ready_ids(&self) -> Vec<SandboxId> {
        self.shared
            .ready()
            .iter()
            .map(|s| s.info().id.clone())
            .collect()
    }

    /// Waits (at most `timeout`) until the pool is full; says whether it is.
    pub async fn wait_full(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let added = self.shared.added.notified();
            if self.ready() >= self.shared.size {
                return true;
            }
            if tokio::time::timeout_at(deadline, added).await.is_err() {
                return self.ready() >= self.shared.size;
            }
        }
    }

    fn serves(&self, spec: &SandboxSpec) -> bool {
        spec.workspace.is_none() && *spec == self.profile
    }
}

impl Drop for WarmPool {
    fn drop(&mut self) {
        let refiller = self
            .refiller
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(refiller) = refiller {
            refiller.abort();
        }
        // The queued sandboxes go with the queue: each one's drop removes it.
        self.shared.ready().clear();
    }
}

async fn refill(backend: Arc<dyn SandboxBackend>, profile: SandboxSpec, shared: Arc<Shared>) {
    loop {
        let taken = shared.taken.notified();
        if shared.ready().len() < shared.size {
            match backend.create(profile.clone()).await {
                Ok(sandbox) => match warm_up(&*sandbox).await {
                    Ok(()) => {
                        tracing::info!(backend = backend.name(), sandbox_id = %sandbox.info().id, "warm pool: a sandbox is ready");
                        shared.ready().push_back(sandbox);
                        shared.added.notify_waiters();
                    }
                    Err(reason) => {
                        tracing::warn!(backend = backend.name(), sandbox_id = %sandbox.info().id, reason, "warm pool: a new sandbox failed its warm-up");
                        let _ = sandbox.destroy().await;
                        tokio::time::sleep(RETRY_AFTER).await;
                    }
                },
                Err(err) => {
                    tracing::warn!(backend = backend.name(), error = %err, "warm pool: starting a sandbox failed");
                    tokio::time::sleep(RETRY_AFTER).await;
                }
            }
            continue;
        }
        taken.await;
        tokio::time::sleep(REFILL_DELAY).await;
    }
}

async fn warm_up(sandbox: &dyn Sandbox) -> Result<(), String> {
    let spec = ExecSpec {
        argv: vec![WARM_UP.to_owned()],
        ..ExecSpec::default()
    };
    let guest = sandbox.guest();
    match tokio::time::timeout(WARM_UP_TIMEOUT, guest.exec_output(spec, &[])).await {
        Err(_) => Err(format!("`{WARM_UP}` took more than {WARM_UP_TIMEOUT:?}")),
        Ok(Err(err)) => Err(err.to_string()),
        Ok(Ok(out)) if out.exit.code == Some(0) => Ok(()),
        Ok(Ok(out)) => Err(format!("`{WARM_UP}` ended {:?}", out.exit)),
    }
}

#[async_trait]
impl SandboxBackend for WarmPool {
    fn name(&self) -> &'static str {
        self.backend.name()
    }

    /// A started sandbox of the pool when the request is the pool's
    /// profile and one is ready; otherwise a fresh one from the backend.
    async fn create(&self, spec: SandboxSpec) -> Result<Box<dyn Sandbox>, SandboxError> {
        if self.serves(&spec) {
            // Popped one at a time: the lock is not held across a destroy.
            loop {
                let taken = self.shared.ready().pop_front();
                let Some(sandbox) = taken else { break };
                self.shared.taken.notify_one();
                // Dead while it waited (engine restart, OOM, killed): not
                // handed out, and the next one is tried. Its connection
                // says so without a round trip: the guest's end closes
                // when the sandbox dies.
                if !sandbox.guest().is_closed() {
                    return Ok(sandbox);
                }
                tracing::warn!(sandbox_id = %sandbox.info().id, "warm pool: a pooled sandbox died while waiting");
                let _ = sandbox.destroy().await;
            }
        }
        self.backend.create(spec).await
    }

    async fn check(&self) -> Result<(), SandboxError> {
        self.backend.check().await
    }

    async fn restore(
        &self,
        spec: SandboxSpec,
        state: &std::path::Path,
    ) -> Result<Box<dyn Sandbox>, SandboxError> {
        self.backend.restore(spec, state).await
    }

    async fn saved_instance(&self, state: &std::path::Path) -> Option<SandboxId> {
        self.backend.saved_instance(state).await
    }

    async fn discard_saved(&self, state: &std::path::Path) -> Result<(), SandboxError> {
        self.backend.discard_saved(state).await
    }

    fn mounts_volumes(&self) -> bool {
        self.backend.mounts_volumes()
    }

    fn kept(&self) -> Vec<SandboxId> {
        self.ready_ids()
    }

    /// The pool's own ready sandboxes are kept, whatever `keep` says.
    async fn reap_orphans(&self, keep: &[SandboxId]) -> Result<OrphanReport, SandboxError> {
        let mut keep = keep.to_vec();
        keep.extend(self.shared.ready().iter().map(|s| s.info().id.clone()));
        self.backend.reap_orphans(&keep).await
    }
}
