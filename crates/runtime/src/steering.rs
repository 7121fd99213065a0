//! Steering: a user's message to a run in progress. It goes through the
//! store (not this process's memory), so it reaches the run whichever node
//! drives it; that loop takes it before its next model request
//! (`run::driver`) and records it as a `user.message` event.

use paddock_core::ids::{RunId, TenantId};
use paddock_core::store::{STEERING_TEXT_MAX, SteeringMessage, StoreError};

use crate::Runtime;
use crate::error::RuntimeError;

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
        if text.chars().count() > STEERING_TEXT_MAX {
            return Err(RuntimeError::Invalid {
                reason: format!(
                    "text: a steering message has at most {STEERING_TEXT_MAX} characters"
                ),
            });
        }
        match self
            .shared
            .store
            .post_steering_message(tenant, run, text)
            .await
        {
            Ok(message) => {
                tracing::info!(run_id = %run, steering_id = message.id, "steering message queued");
                Ok(message)
            }
            Err(StoreError::Conflict { .. }) => Err(RuntimeError::RunFinished { run: run.clone() }),
            Err(err) => Err(RuntimeError::store("post_steering_message")(err)),
        }
    }
}
