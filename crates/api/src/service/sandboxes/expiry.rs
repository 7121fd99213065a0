//! The background task that destroys idle and too-old sandboxes (and
//! console sandboxes whose page stopped keeping them alive) and writes
//! recent activity to the store.

use std::sync::Arc;

use paddock_core::sandbox::SandboxId;
use paddock_core::store::{SandboxState, StoreError};
use tokio::task::JoinHandle;

use super::SandboxService;

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
            let idle_until = sandbox
                .last_active()
                .saturating_add(self.config.idle_timeout);
            // a console sandbox lives while its page keeps it alive (console.rs)
            let left = match sandbox.keepalive_until() {
                Some(alive) => now >= alive,
                None => now >= idle_until,
            };
            if now >= sandbox.expires_at {
                expired.push((sandbox.id.clone(), "max lifetime reached"));
            } else if !sandbox.is_busy() && left {
                let reason = if sandbox.is_console() {
                    "console page gone (no keep-alive)"
                } else {
                    "idle timeout"
                };
                expired.push((sandbox.id.clone(), reason));
            } else if sandbox.take_unflushed().is_some()
                && let Err(err) = self.store.touch_sandbox(&sandbox.tenant, &sandbox.id).await
            {
                tracing::warn!(sandbox_id = %sandbox.id, error = %err, "recording sandbox activity");
            }
        }
        for (id, reason) in expired {
            if let Err(err) = self.retire(&id, SandboxState::Stopped, reason).await {
                tracing::warn!(sandbox_id = %id, error = %err, "recording an expired sandbox");
            }
        }
    }
}
