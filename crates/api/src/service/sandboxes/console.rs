//! Console sandboxes: the web console's Files and Terminal work in a sandbox
//! of their own over the session's workspace, which holds the workspace's
//! writer lease. Such a sandbox is tied to its page, not to the idle
//! timeout: the page keeps it alive while it is open (each keep-alive is
//! good for [`KEEPALIVE`]), asks for a few seconds only when it goes away
//! (a reload takes it back within them), and the expiry task ends it once
//! its deadline passed while nothing uses it. A run that needs the workspace takes it
//! over from a console sandbox nothing uses ([`SandboxService::yield_idle_console`]),
//! and a `workspace_busy` refusal names the holder, since when, and how to
//! free it ([`SandboxService::describe_writer`]).

use std::time::Duration;

use paddock_core::ids::{RunId, TenantId};
use paddock_core::sandbox::SandboxId;
use paddock_core::store::{SandboxState, Timestamp};

use super::{SandboxService, SandboxView, ServiceError};

/// How long a console sandbox lives after its last keep-alive: the console
/// pings every 20 s; a hidden tab's timers may run only once a minute.
pub(crate) const KEEPALIVE: Duration = Duration::from_secs(120);
/// The shortest keep-alive a page may ask for (when it goes away).
pub const KEEPALIVE_MIN: Duration = Duration::from_secs(1);

/// Why a console sandbox was ended for a run.
const TAKEN_OVER: &str = "workspace taken over by a run";

impl SandboxService {
    /// Keeps the tenant's console sandbox `id` alive for `secs` more seconds
    /// (default and most: 120); a page that goes away asks for a
    /// few. Refused for a sandbox that is not a console sandbox (400) and,
    /// as every use, for one that no longer runs.
    pub async fn keep_alive(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        secs: Option<u64>,
    ) -> Result<SandboxView, ServiceError> {
        let most = KEEPALIVE.as_secs();
        let least = KEEPALIVE_MIN.as_secs();
        let secs = secs.unwrap_or(most);
        if !(least..=most).contains(&secs) {
            return Err(ServiceError::invalid(
                "secs",
                format!("expected {least} to {most}"),
            ));
        }
        let (live, _guard) = self.use_sandbox(tenant, id).await?;
        let until = self.clock.now().saturating_add(Duration::from_secs(secs));
        if !live.keep_alive_until(until) {
            return Err(ServiceError::invalid(
                "id",
                format!("sandbox {id} is not a console sandbox (made without \"console\": true)"),
            ));
        }
        self.get_sandbox(tenant, id).await
    }

    /// Ends the console sandbox of `tenant` that holds a workspace's writer
    /// lease as `holder` (`NODE/SANDBOX`), when it runs on this node and
    /// nothing uses it, so a run can take the workspace; true when it did.
    /// Any other holder (a run, an ordinary sandbox, a console sandbox in
    /// use) is left alone.
    pub async fn yield_idle_console(&self, tenant: &TenantId, holder: &str) -> bool {
        let Some(id) = self.local_sandbox(holder) else {
            return false;
        };
        let idle = self
            .live_map()
            .get(&id)
            .is_some_and(|l| &l.tenant == tenant && l.is_console() && !l.is_busy());
        if !idle {
            return false;
        }
        match self.retire(&id, SandboxState::Stopped, TAKEN_OVER).await {
            Ok(()) => {}
            Err(err) => {
                tracing::warn!(sandbox_id = %id, error = %err, "recording a console sandbox taken over");
            }
        }
        tracing::info!(sandbox_id = %id, "a run took the workspace over from an idle console sandbox");
        true
    }

    /// Who holds a workspace's writer lease (`NODE/ID`, until `until`), for
    /// a `workspace_busy` refusal: what it is, since when, and how to free it.
    pub fn describe_writer(&self, holder: &str, until: Timestamp) -> String {
        self.describe_holder(holder, until, "the workspace")
    }

    /// [`Self::describe_writer`] for the writer of `held` ("the workspace",
    /// "the volume").
    pub fn describe_holder(&self, holder: &str, until: Timestamp, held: &str) -> String {
        if let Some(id) = self.local_sandbox(holder) {
            let live = self.live_map().get(&id).cloned();
            if let Some(live) = live {
                let since = live.created_at;
                let used = live.last_active();
                let (what, free) = match live.keepalive_until() {
                    Some(alive) => (
                        "the web console's Files/Terminal sandbox",
                        format!(
                            "it ends when its console tab has been closed for a few seconds \
                             (at the latest {alive}), a run takes the workspace over from it \
                             while no command or terminal uses it, or end it now with \
                             DELETE /v1/sandboxes/{id} (`paddock sandbox rm {id}`)"
                        ),
                    ),
                    None => (
                        "sandbox",
                        format!(
                            "delete it to free {held}: DELETE /v1/sandboxes/{id} \
                             (`paddock sandbox rm {id}`), or it ends at {} if nothing uses it",
                            used.saturating_add(self.config.idle_timeout)
                        ),
                    ),
                };
                let busy = if live.is_busy() { "in use now" } else { "idle" };
                return format!("{what} {id} (since {since}, last used {used}, {busy}); {free}");
            }
        }
        let (node, id) = holder.split_once('/').unwrap_or(("?", holder));
        if let Ok(run) = RunId::parse(id) {
            return format!(
                "run {run} on node {node} (lease until {until}); it frees {held} when it \
                 ends: cancel it with POST /v1/runs/{run}/cancel (`paddock runs cancel {run}`), \
                 or start a plan-mode run, which only reads"
            );
        }
        format!(
            "{holder} (lease until {until}); if that is a sandbox, DELETE /v1/sandboxes/{id} \
             frees {held}"
        )
    }

    /// The id of a sandbox of this node named by a lease holder `NODE/ID`.
    fn local_sandbox(&self, holder: &str) -> Option<SandboxId> {
        let (node, id) = holder.split_once('/')?;
        if node != self.config.node {
            return None;
        }
        SandboxId::parse(id).ok()
    }
}
