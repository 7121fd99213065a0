//! The agent service's one error: what a request was refused for, or the
//! runtime step that failed.

use paddock_runtime::RuntimeError;

use super::models::ModelChoiceError;
use crate::service::BackendRefused;
use crate::service::secrets::SecretRefused;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("invalid {field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("model refused: {reason}")]
    ModelRefused { reason: String },
    #[error("model unavailable: {reason}")]
    ModelUnavailable { reason: String },
    #[error("preparing the model")]
    Model(#[source] ModelChoiceError),
    #[error("runtime operation {op} failed")]
    Runtime {
        op: &'static str,
        #[source]
        source: Box<RuntimeError>,
    },
    #[error("the service is shutting down")]
    ShuttingDown,
    /// A change set could not be applied or rejected now (a conflict, it
    /// is not pending, the child is still running): the tool's reason.
    #[error("{message}")]
    ChangesRefused {
        message: String,
        data: serde_json::Value,
    },
    /// The network asked for is beyond what the operator allows tenants.
    #[error("{reason}")]
    NetworkNotAllowed { reason: String },
    /// An operator's secret the config does not grant to the tenant.
    #[error("{reason}")]
    SecretNotAllowed { reason: String },
    /// Another run or a sandbox may write the workspace (it holds the
    /// workspace lease); `held_by` names it, since when, and how to free it.
    #[error(
        "workspace {workspace} already has a writer: {held_by}; a plan-mode run or a read-only \
         sandbox may still read it"
    )]
    WorkspaceBusy { workspace: String, held_by: String },
}

impl AgentError {
    pub(crate) fn runtime(op: &'static str) -> impl FnOnce(RuntimeError) -> AgentError {
        move |source| AgentError::Runtime {
            op,
            source: Box::new(source),
        }
    }

    pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        AgentError::Invalid {
            field,
            reason: reason.into(),
        }
    }
}

impl From<BackendRefused> for AgentError {
    fn from(refused: BackendRefused) -> Self {
        AgentError::Invalid {
            field: refused.field,
            reason: refused.reason,
        }
    }
}

impl From<SecretRefused> for AgentError {
    fn from(refused: SecretRefused) -> Self {
        match refused {
            refused @ SecretRefused::NotGranted { .. } => AgentError::SecretNotAllowed {
                reason: refused.to_string(),
            },
            other => AgentError::invalid("secrets", other.to_string()),
        }
    }
}

impl From<ModelChoiceError> for AgentError {
    fn from(err: ModelChoiceError) -> Self {
        match err {
            ModelChoiceError::Refused { reason } => AgentError::ModelRefused { reason },
            ModelChoiceError::Unavailable { reason } => AgentError::ModelUnavailable { reason },
            other => AgentError::Model(other),
        }
    }
}
