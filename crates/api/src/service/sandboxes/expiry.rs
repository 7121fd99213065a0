//! The background task that destroys idle and too-old sandboxes (and
//! console sandboxes whose page stopped keeping them alive) and writes
//! recent activity to the store.

use std::sync::Arc;

use paddock_core::ids::TenantId;
use paddock_core::sandbox::SandboxId;
use paddock_core::store::{SandboxState, StoreError, Timestamp};
use tokio::task::JoinHandle;

use super::{OnIdle, SandboxService, ServiceError};

const IDLE: &str = "idle timeout";
const DEADLINE: &str = "its timeout passed";

impl SandboxService {
    /// Runs until the service's shutdown token is cancelled.
    pub fn spawn_expiry(self: &Arc<Self>) -> JoinHandle<()> {
        let service = self.clone();
        let interval = self.config.effective_expiry_interval();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = service.shutdown.cancelled() => break,
                    () = tokio::time::sleep(interval) => {}
                }
                service.expire_once().await;
            }
        })
    }

    /// One pass: retires what expired, records the others' activity.
    pub async fn expire_once(&self) {
        let now = self.clock.now();
        let live: Vec<_> = self.live_map().values().cloned().collect();
        let mut expired: Vec<(SandboxId, &'static str)> = Vec::new();
        let writer_ttl = super::writer::ttl(self.config.effective_expiry_interval());
        for sandbox in &live {
            if let Some(lease) = &sandbox.writer {
                match self.store.renew_lease(lease, writer_ttl).await {
                    Ok(_) => {}
                    // another writer took the workspace over: this one must stop writing
                    Err(err @ StoreError::StaleLease { .. }) => {
                        tracing::error!(sandbox_id = %sandbox.id, error = %err, "workspace lease lost");
                        expired.push((sandbox.id.clone(), "workspace lease lost"));
                        continue;
                    }
                    Err(err) => {
                        tracing::warn!(sandbox_id = %sandbox.id, error = %err, "renewing the workspace lease");
                    }
                }
            }
            if let Some(reason) = self.renew_volume_leases(sandbox, writer_ttl).await {
                expired.push((sandbox.id.clone(), reason));
                continue;
            }
            let idle_until = sandbox
                .last_active()
                .saturating_add(self.config.idle_timeout);
            // a console sandbox lives while its page keeps it alive (console.rs)
            let left = match sandbox.keepalive_until() {
                Some(alive) => now >= alive,
                None => now >= idle_until,
            };
            // a deadline replaces the idle rule: it ends then, busy or not
            let deadline = sandbox.deadline();
            if now >= sandbox.expires_at {
                expired.push((sandbox.id.clone(), "max lifetime reached"));
            } else if deadline.is_some_and(|at| now >= at) {
                expired.push((sandbox.id.clone(), DEADLINE));
            } else if deadline.is_none() && !sandbox.is_busy() && left {
                let reason = if sandbox.is_console() {
                    "console page gone (no keep-alive)"
                } else {
                    IDLE
                };
                expired.push((sandbox.id.clone(), reason));
            } else if sandbox.take_unflushed().is_some()
                && let Err(err) = self.store.touch_sandbox(&sandbox.tenant, &sandbox.id).await
            {
                tracing::warn!(sandbox_id = %sandbox.id, error = %err, "recording sandbox activity");
            }
        }
        for (id, reason) in expired {
            if (reason == IDLE || reason == DEADLINE) && self.pause_idle(&id).await {
                continue;
            }
            if let Err(err) = self.retire(&id, SandboxState::Stopped, reason).await {
                tracing::warn!(sandbox_id = %id, error = %err, "recording an expired sandbox");
            }
        }
    }

    /// Sets when a sandbox ends whatever it does (None: when idle, as
    /// before): it is then paused where it asked to be on idle, else
    /// stopped. A paused sandbox is resumed first, as by any request.
    pub async fn set_deadline(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        at: Option<Timestamp>,
    ) -> Result<(), ServiceError> {
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        live.set_deadline(at.map(|at| at.min(live.expires_at)));
        Ok(())
    }

    /// A running sandbox's deadline, if it has one.
    pub fn deadline(&self, id: &SandboxId) -> Option<Timestamp> {
        self.live_map().get(id).and_then(|live| live.deadline())
    }

    /// The service's clock, now.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Pauses an idle sandbox where it asked (its own `on_idle`, else the
    /// server's is `pause`); false when it is to be stopped instead (not
    /// asked, a console sandbox, one with secrets, or the pause failed).
    async fn pause_idle(&self, id: &SandboxId) -> bool {
        let Some(live) = self.live_map().get(id).cloned() else {
            return false;
        };
        if live.is_console() || live.secrets {
            return false;
        }
        let record = match self.store.get_sandbox(&live.tenant, id).await {
            Ok(record) => record,
            Err(err) => {
                tracing::warn!(sandbox_id = %id, error = %err, "reading an idle sandbox to pause it");
                return false;
            }
        };
        if record.spec.on_idle.unwrap_or(self.config.on_idle) != OnIdle::Pause {
            return false;
        }
        let refusal = live.suspend_refusal().await;
        let Ok(mode) = super::pause_mode(&record.backend, None, refusal.as_deref()) else {
            return false;
        };
        match self.pause_live(&record, &live, mode, "idle").await {
            Ok(()) => true,
            Err(err) => {
                tracing::warn!(sandbox_id = %id, error = %err, "pausing an idle sandbox failed: stopping it");
                false
            }
        }
    }
}
