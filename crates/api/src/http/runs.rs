//! One run: get it, cancel it, steer it, list the subagent runs it spawned. (Its
//! event stream, GET /v1/runs/{id}/events, is with the session's in `events`.)

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use paddock_core::ids::RunId;
use paddock_runtime::ChangesDecision;

use super::error::Body as ErrorBody;
use super::extract::{ApiJson, ApiPath};
use super::{ApiError, AppState, Caller};
use crate::service::sessions::{ResumeRunCommand, ResumedView};
use crate::service::{RunView, SteerRun, SteeringView};
use serde::{Deserialize, Serialize};

#[utoipa::path(get, path = "/v1/runs/{id}", tag = "runs",
    summary = "Get a run",
    params(("id" = RunId, Path)),
    responses((status = 200, description = "the run", body = RunView)))]
pub(super) async fn get(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<RunView>, ApiError> {
    let id = run_id(&id)?;
    Ok(Json(state.agents()?.get_run(&tenant, &id).await?))
}

/// Asks the run to stop and answers it as it is now; the run ends
/// `cancelled` shortly after (its `run.finished` event says when). Cancelling
/// a finished run changes nothing.
#[utoipa::path(post, path = "/v1/runs/{id}/cancel", tag = "runs",
    summary = "Cancel a run (it ends `cancelled` shortly after)",
    params(("id" = RunId, Path)),
    responses(
        (status = 200, description = "the run as it is now", body = RunView),
        (status = 409, description = "a conflicting write (`conflict`)", body = ErrorBody),
    ))]
pub(super) async fn cancel(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<RunView>, ApiError> {
    let id = run_id(&id)?;
    Ok(Json(state.agents()?.cancel_run(&tenant, &id).await?))
}

/// Steering: puts a user message into the run before its next model turn
/// (as a `user.message` event), whichever node drives the run.
#[utoipa::path(post, path = "/v1/runs/{id}/messages", tag = "runs",
    summary = "Send a message to a run in progress (before its next model turn)",
    params(("id" = RunId, Path)),
    request_body = SteerRun,
    responses(
        (status = 202, description = "the message, queued for the next turn", body = SteeringView),
        (status = 409, description = "the run has finished, or is finishing and closed its queue (`run_finished`); a message accepted before that is answered, or listed in `run.finished` as `undelivered`", body = ErrorBody),
        (status = 429, description = "the run took the server's most steering messages, or characters of them, per run (`steering_limit`, naming the cap)", body = ErrorBody),
    ))]
pub(super) async fn steer(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(command): ApiJson<SteerRun>,
) -> Result<(StatusCode, Json<SteeringView>), ApiError> {
    let id = run_id(&id)?;
    let view = state.agents()?.steer_run(&tenant, &id, command).await?;
    Ok((StatusCode::ACCEPTED, Json(view)))
}

/// Continues an interrupted run as a new run (answered at once, 202): the
/// same session, goal, criteria and mode, a fresh sandbox of the same
/// backend, image and network (re-checked against this server's), the
/// workspace restored to the last checkpoint, `resumed_from` naming the old
/// run. A restore over changes made since that checkpoint is refused
/// (`workspace_changed`, naming them) unless `force`, and then keeps them
/// in a checkpoint first (`safety_checkpoint`, with the `undo`). Its predecessor's unfinished calls are answered by their tools'
/// replay policy before the first model turn.
#[utoipa::path(post, path = "/v1/runs/{id}/resume", tag = "runs",
    summary = "Resume an interrupted run as a new run",
    params(("id" = RunId, Path)),
    request_body = ResumeRunCommand,
    responses(
        (status = 202, description = "the new run, started, with the checkpoint that kept the workspace before the restore and the undo, when it overwrote changes", body = ResumedView),
        (status = 400, description = "a bad id or body, or a model the server does not allow (`model_not_allowed`)", body = ErrorBody),
        (status = 403, description = "the interrupted run's network is beyond what this server allows tenants now (`network_not_allowed`)", body = ErrorBody),
        (status = 409, description = "the run is not interrupted, is a subagent's, its session moved on, its backend or image is not enabled here, or it ran with secrets, which are never stored (`run_not_resumable`); the session runs already (`session_busy`) or its workspace has another writer (`workspace_busy`); the workspace changed since the last checkpoint and `force` is not set (`workspace_changed`, naming the paths)", body = ErrorBody),
        (status = 422, description = "the body does not fit the request type (`invalid_request`), or the model cannot be provided here (`model_unavailable`)", body = ErrorBody),
        (status = 429, description = "the resumed run's sandbox has no slot (`quota_exceeded` naming the quota, or `too_many_sandboxes`); no run is recorded", body = ErrorBody),
    ))]
pub(super) async fn resume(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(command): ApiJson<ResumeRunCommand>,
) -> Result<(StatusCode, Json<ResumedView>), ApiError> {
    let id = run_id(&id)?;
    let view = state.agents()?.resume_run(&tenant, &id, command).await?;
    Ok((StatusCode::ACCEPTED, Json(view)))
}

/// The subagent runs the run spawned, oldest first (empty for a run without any).
#[utoipa::path(get, path = "/v1/runs/{id}/children", tag = "runs",
    summary = "The subagent runs a run spawned, oldest first",
    params(("id" = RunId, Path)),
    responses((status = 200, description = "the child runs", body = ChildRuns)))]
pub(super) async fn children(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ChildRuns>, ApiError> {
    let id = run_id(&id)?;
    let runs = state.agents()?.child_runs(&tenant, &id).await?;
    Ok(Json(ChildRuns { runs }))
}

/// What a person decides on a build subagent's change set.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Apply,
    Reject,
}

#[derive(Debug, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideChanges {
    pub decision: Decision,
}

/// Applies or rejects a finished build subagent's change set into the
/// running parent's workspace, as the parent's own
/// `apply_subagent_changes` / `reject_subagent_changes` would (same
/// conflict checks; the parent's model sees the new state).
#[utoipa::path(post, path = "/v1/runs/{id}/children/{child}/changes", tag = "runs",
    summary = "Apply or reject a build subagent's change set",
    params(("id" = RunId, Path, description = "The running parent run."), ("child" = RunId, Path, description = "Its build subagent's run.")),
    request_body = DecideChanges,
    responses(
        (status = 200, description = "done: `{run_id, applied, written}` or `{run_id, rejected}`", body = Object),
        (status = 409, description = "the parent run is not active here (`run_not_active`), or nothing changed: a conflict, the set is not pending, the child is still running (`change_set_refused`)", body = ErrorBody),
        (status = 404, description = "no such run (`run_not_found`)", body = ErrorBody),
    ))]
pub(super) async fn decide_changes(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath((id, child)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<DecideChanges>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let (id, child) = (run_id(&id)?, run_id(&child)?);
    let decision = match body.decision {
        Decision::Apply => ChangesDecision::Apply,
        Decision::Reject => ChangesDecision::Reject,
    };
    let result = state
        .agents()?
        .decide_child_changes(&tenant, &id, &child, decision)
        .await?;
    Ok(Json(result))
}

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ChildRuns {
    pub runs: Vec<RunView>,
}

pub(super) fn run_id(raw: &str) -> Result<RunId, ApiError> {
    RunId::parse(raw)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_id", e.to_string()))
}
