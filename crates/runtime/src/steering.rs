//! Steering: a user's message to a run in progress. It goes through the
//! store (not this process's memory), so it reaches the run whichever node
//! drives it; that loop delivers it before its next model request
//! (`run::driver`): marked delivered in the store write that appends it to
//! the history and records its `user.message` event
//! (`Journal::deliver_steering`), so a kill leaves it waiting (a resume
//! carries it) or delivered with both, once.
//!
//! No accepted message is left behind: as the run is about to end, its loop
//! closes the run's queue in the store, reading what still waits in the
//! same step. If the run could go on (it completed, stopped or asked the user),
//! what waited is delivered and the loop goes on to answer it; if it cannot
//! (cancelled, failed, out of budget, interrupted), the queue closes and
//! what waited is listed in `run.finished` as `undelivered`
//! ([`close_for_end`]). A post after the close is refused
//! ([`RuntimeError::RunFinished`]).

use paddock_core::ids::{RunId, TenantId};
use paddock_core::store::{STEERING_TEXT_MAX, SteeringClose, SteeringMessage, StoreError};

use crate::Runtime;
use crate::error::RuntimeError;
use crate::events::UserMessage;
use crate::events::journal::Journal;
use crate::util::error_chain;

/// Closes the run's steering queue for good as the run ends, whatever
/// waits; answers the messages that waited (accepted, never delivered) for
/// `run.finished`. A failure is logged: the run is over either way, and
/// the messages stay on record (`delivered_at` unset).
pub(crate) async fn close_for_end(journal: &Journal) -> Vec<UserMessage> {
    match journal.close_steering(SteeringClose::Always).await {
        Ok(closed) => {
            if !closed.messages.is_empty() {
                tracing::info!(
                    count = closed.messages.len(),
                    "steering messages left undelivered: the run cannot go on"
                );
            }
            closed.messages.into_iter().map(UserMessage::from).collect()
        }
        Err(err) => {
            tracing::warn!(error = %error_chain(&err), "closing the run's steering queue");
            Vec::new()
        }
    }
}

impl From<SteeringMessage> for UserMessage {
    fn from(steering: SteeringMessage) -> Self {
        UserMessage {
            message: steering.text,
            steering_id: steering.id,
        }
    }
}

impl Runtime {
    /// Queues `text` for `run`'s next model turn. Refused with
    /// [`RuntimeError::Invalid`] for an empty or too long text,
    /// [`RuntimeError::NotFound`] for no run of the tenant's and
    /// [`RuntimeError::RunFinished`] once the run has ended (a terminal
    /// state, or `awaiting_user`: start a new run in the session instead).
    pub async fn steer(
        &self,
        tenant: &TenantId,
        run: &RunId,
        text: &str,
    ) -> Result<SteeringMessage, RuntimeError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(RuntimeError::Invalid {
                reason: "text: a steering message cannot be empty".to_owned(),
            });
        }
        let caps = self.shared.config.steering;
        let most = caps.max_message_chars.min(STEERING_TEXT_MAX);
        if text.chars().count() > most {
            return Err(RuntimeError::Invalid {
                reason: format!("text: a steering message has at most {most} characters"),
            });
        }
        // a run on another node is the store's to refuse once it ends
        let driver = self
            .shared
            .active()
            .get(run)
            .filter(|active| &active.tenant == tenant && !active.steerable)
            .map(|active| active.driver);
        if let Some(driver) = driver {
            return Err(RuntimeError::DriverCannot {
                run: run.clone(),
                driver,
                cannot: "takes no steering messages",
            });
        }
        match self
            .shared
            .store
            .post_steering_message(tenant, run, text, caps.store_caps())
            .await
        {
            Ok(message) => {
                tracing::info!(run_id = %run, steering_id = message.id, "steering message queued");
                Ok(message)
            }
            Err(StoreError::Conflict { .. }) => Err(RuntimeError::RunFinished { run: run.clone() }),
            Err(StoreError::Limit { reason, .. }) => {
                tracing::info!(run_id = %run, %reason, "steering message refused by a cap");
                Err(RuntimeError::SteeringLimit {
                    run: run.clone(),
                    reason,
                })
            }
            Err(err) => Err(RuntimeError::store("post_steering_message")(err)),
        }
    }
}
