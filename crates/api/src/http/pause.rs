//! Pausing and resuming a sandbox (see `service::sandboxes::pause`).

use axum::Json;
use axum::extract::State;
use paddock_core::sandbox::SandboxId;

use super::error::Body as ErrorBody;
use super::extract::{ApiJson, ApiPath, sandbox_id};
use super::{ApiError, AppState, Caller};
use crate::service::{PauseSandbox, SandboxView};

#[utoipa::path(post, path = "/v1/sandboxes/{id}/pause", tag = "sandboxes",
    summary = "Pause a sandbox",
    description = "Releases everything the sandbox holds on the host (no process, no memory) and keeps what its tier can: `filesystem` keeps the workspace's files and stops its processes (`pause.processes_kept` is false); `full` keeps memory and processes too (the microVM tier saves the VM into a file on the server, the gVisor tier checkpoints the sandbox's container: `pause.processes_kept` is true), and is refused (409 `pause_mode_unsupported`, naming the reason) where the tier or the sandbox cannot (native, docker; a gVisor sandbox with network or resumed from a `full` pause already; a microVM whose workspace or a volume is a host directory), or while an exec runs in it. No `mode`: the strongest the sandbox can do. The sandbox stays `paused` across a restart of the server; `POST .../resume`, or any request that needs it (exec, files, processes, ports), resumes it.",
    params(("id" = SandboxId, Path)),
    request_body = PauseSandbox,
    responses(
        (status = 200, description = "the paused sandbox", body = SandboxView),
        (status = 403, description = "its temporary workspace cannot be kept: the sandbox may not read a workspace file (`permission_denied`); it stays running", body = ErrorBody),
        (status = 404, description = "no such sandbox (`sandbox_not_found`)", body = ErrorBody),
        (status = 409, description = "it is not running (`sandbox_not_running`), already paused (`conflict`), driven by an agent run (`sandbox_owned_by_run`), or its tier cannot keep what `mode` asks (`pause_mode_unsupported`)", body = ErrorBody),
        (status = 503, description = "its temporary workspace cannot be kept: snapshots are not available (`snapshots_unavailable`)", body = ErrorBody),
    ))]
pub(super) async fn pause(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(command): ApiJson<PauseSandbox>,
) -> Result<Json<SandboxView>, ApiError> {
    let id = sandbox_id(&id)?;
    Ok(Json(
        state.service.pause_sandbox(&tenant, &id, command).await?,
    ))
}

#[utoipa::path(post, path = "/v1/sandboxes/{id}/resume", tag = "sandboxes",
    summary = "Resume a paused sandbox",
    description = "Restores the saved sandbox (`full` mode: its processes run on) or starts a fresh sandbox of the paused one's spec on its kept files (`filesystem` mode: its processes start anew), under the same id. Bounded: a resume that takes longer than 120 s is abandoned and the sandbox stays paused.",
    params(("id" = SandboxId, Path)),
    responses(
        (status = 200, description = "the running sandbox", body = SandboxView),
        (status = 404, description = "no such sandbox (`sandbox_not_found`)", body = ErrorBody),
        (status = 409, description = "it is not paused (`conflict`), or its workspace has another writer (`workspace_busy`)", body = ErrorBody),
        (status = 429, description = "no room for it now (`too_many_sandboxes`, `quota_exceeded`)", body = ErrorBody),
        (status = 503, description = "the sandbox could not be started (`sandbox_start_failed`)", body = ErrorBody),
    ))]
pub(super) async fn resume(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<SandboxView>, ApiError> {
    let id = sandbox_id(&id)?;
    Ok(Json(state.service.resume_sandbox(&tenant, &id).await?))
}
