//! The agent service's typed commands: what the HTTP API decodes and the
//! CLI sends for sessions and runs.

use std::collections::BTreeMap;

use paddock_core::ids::{RunId, WorkspaceId};
use paddock_core::store::{Budgets, DriverKind, RunMode};
use paddock_proto::NetworkPolicy;
use serde::{Deserialize, Serialize};

use super::ModelChoice;
use crate::service::commands::SnapshotLimitsRequest;
use crate::service::secrets::SecretRef;

/// `POST /v1/sessions`
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    pub workspace: WorkspaceId,
    #[serde(default)]
    pub title: Option<String>,
}

/// `PATCH /v1/sessions/{id}`
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateSession {
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub archived: Option<bool>,
}

/// `POST /v1/sessions/{id}/fork`
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkSession {
    /// Fork from the end of this run of the session (default: its latest state).
    #[serde(default)]
    pub at_run: Option<RunId>,
    /// Fork at this checkpoint of the session instead (not with `at_run`).
    #[serde(default)]
    pub at_checkpoint: Option<paddock_core::ids::CheckpointId>,
    #[serde(default)]
    pub title: Option<String>,
}

/// `POST /v1/runs/{id}/messages`: a message for the run's next model turn.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SteerRun {
    #[schema(
        example = "use the v2 API instead",
        pattern = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub text: String,
}

/// `POST /v1/sessions/{id}/runs`
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRunCommand {
    #[schema(
        max_length = 20000,
        pattern = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub goal: String,
    #[serde(default)]
    pub success_criteria: Vec<String>,
    #[serde(default)]
    pub mode: Option<RunMode>,
    /// Missing fields keep their defaults.
    #[serde(default)]
    pub budgets: Option<Budgets>,
    pub model: ModelChoice,
    /// What drives the run's agent: `builtin` (Paddock's own loop, the
    /// default) or an agent CLI run inside the run's sandbox, among those
    /// the server enables.
    #[serde(default)]
    pub driver: Option<DriverKind>,
    /// The models of some subagents, keyed by task id or profile (`explore`,
    /// `plan`, `review`, `build`; a task id wins); the others use `model`.
    /// A scripted model is replayed from its first turn for each child.
    #[serde(default)]
    pub subagent_models: BTreeMap<String, ModelChoice>,
    /// Extra instructions for the agent, added to its system prompt.
    #[serde(default)]
    pub instructions: Option<String>,
    /// This run's snapshot limits (default: the server's).
    #[serde(default)]
    pub snapshot_limits: Option<SnapshotLimitsRequest>,
    /// The sandbox backend of the run and its subagents (`native`,
    /// `docker`, `gvisor`), among those the server enabled; None: the
    /// server's default.
    #[serde(default)]
    pub backend: Option<String>,
    /// The container image, among those the server enabled for that
    /// backend; None: the backend's first.
    #[serde(default)]
    pub image: Option<String>,
    /// The network of the run's sandbox (default: the server's); 403
    /// beyond the most the server allows tenants.
    #[serde(default)]
    pub network: Option<NetworkPolicy>,
    /// Secrets injected at egress into the run's sandbox and its
    /// subagents' (each sees only a placeholder in the secret's variable):
    /// names of secrets this server defines and grants to the tenant, or
    /// the caller's own (whose value is write-only). They need a network
    /// that allows their hosts. A resumed run has none.
    #[serde(default)]
    pub secrets: Vec<SecretRef>,
}

/// `POST /v1/runs/{id}/resume`: the goal, criteria and mode are the
/// interrupted run's, and so are its sandbox's backend, image and network
/// (from its `run.started`, re-checked against what this server enables and
/// allows); the model is chosen again (as for a new run). A run that had
/// secrets is not resumed here: they were never stored, and the API takes
/// none.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeRunCommand {
    pub model: ModelChoice,
    /// Default: what the interrupted run and its subagents left of its
    /// budgets, the wall clock less the time it ran; given: these, raising the
    /// limit (`run.started` `resume_budget` says which).
    #[serde(default)]
    pub budgets: Option<Budgets>,
    #[serde(default)]
    pub subagent_models: BTreeMap<String, ModelChoice>,
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub snapshot_limits: Option<SnapshotLimitsRequest>,
    /// Restore the last checkpoint even over changes made since it (they
    /// are checkpointed first); false: such a resume is refused with 409
    /// `workspace_changed`, naming the paths.
    #[serde(default)]
    pub force: bool,
}
