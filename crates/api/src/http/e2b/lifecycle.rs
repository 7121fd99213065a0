//! E2B's lifecycle routes beyond create, connect, timeout and pause: the
//! legacy resume, refreshes and fork, on the sandbox service (the network
//! update is `network.rs`). The bodies are E2B's (`spec/openapi.yml` of
//! e2b-dev/infra).
//!
//! - A resume brings back what Paddock's pause kept: memory and processes
//!   where the tier can save them (gVisor, microVM), else the files alone
//!   (`service::sandboxes::pause`). `autoPause` cannot change what a
//!   sandbox does at its timeout, and `memory: false` (a cold boot) cannot
//!   skip a saved memory image: both are refused rather than ignored.
//! - A fork is a snapshot of the running sandbox's workspace restored into
//!   `count` new sandboxes (then the snapshot is deleted): the forks get
//!   the parent's files, backend, image and current network, not its
//!   processes, memory, metadata or environment (a restore takes none yet).
//!   A restore is all or nothing, so a failure fails every fork alike.

use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use paddock_core::ids::TenantId;
use paddock_core::store::{OnIdle, PauseMode, SandboxState};
use serde::{Deserialize, Serialize};

use super::auth::ApiKey;
use super::error::E2bError;
use super::sandboxes::{SandboxCreated, created_view, extend_deadline, for_sandbox, shown_sandbox};
use crate::http::AppState;
use crate::service::{CreateSnapshot, MAX_RESTORE_COUNT, RestoreSnapshot, SandboxView};

/// E2B's default (and, for a refresh, least) sandbox timeout, seconds.
pub const E2B_MIN_TIMEOUT_SECS: u64 = 15;

/// `ResumedSandbox` of E2B's spec.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeBody {
    timeout: Option<u64>,
    auto_pause: Option<bool>,
    memory: Option<bool>,
}

/// `SandboxRefreshRequest`.
#[derive(Debug, Default, Deserialize)]
pub struct RefreshBody {
    duration: Option<u64>,
}

/// `SandboxForkRequest`.
#[derive(Debug, Default, Deserialize)]
pub struct ForkBody {
    timeout: Option<u64>,
    count: Option<u32>,
}

/// `SandboxForkResult`: exactly one of the two.
#[derive(Debug, Serialize)]
pub struct ForkResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<SandboxCreated>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorEntry>,
}

/// E2B's `Error`, as a fork result carries it.
#[derive(Debug, Serialize)]
struct ErrorEntry {
    code: u16,
    message: String,
}

impl From<E2bError> for ErrorEntry {
    fn from(err: E2bError) -> Self {
        Self {
            code: err.status.as_u16(),
            message: err.message,
        }
    }
}

pub(super) fn paused_conflict(id: &str, what: &str) -> E2bError {
    E2bError::new(
        StatusCode::CONFLICT,
        format!("sandbox {id} is paused and cannot {what}; connect to it (resume) first"),
    )
}

/// `POST /sandboxes/{id}/resume` (deprecated by E2B for connect): resumes
/// a paused sandbox with `timeout` (default 15 s) and answers 201 with
/// what create does; a running one is 409.
pub async fn resume(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Path(id): Path<String>,
    body: Option<Json<ResumeBody>>,
) -> Result<Response, E2bError> {
    let body = body.map(|Json(b)| b).unwrap_or_default();
    let (sandbox, view) = shown_sandbox(&state, &tenant, &id).await?;
    if view.state == SandboxState::Running {
        return Err(E2bError::new(
            StatusCode::CONFLICT,
            format!("sandbox {id} is already running"),
        ));
    }
    let pauses_at_timeout = view.on_idle == OnIdle::Pause;
    if body
        .auto_pause
        .is_some_and(|asked| asked != pauses_at_timeout)
    {
        return Err(E2bError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "autoPause cannot change on Paddock: sandbox {id} keeps what it was created with ({})",
                if pauses_at_timeout { "pause" } else { "kill" }
            ),
        ));
    }
    let kept_memory = view
        .pause
        .as_ref()
        .is_some_and(|p| p.mode == PauseMode::Full);
    if body.memory == Some(false) && kept_memory {
        return Err(E2bError::new(
            StatusCode::BAD_REQUEST,
            "memory: false (a cold boot) is not supported: Paddock resumes the memory and processes its pause saved",
        ));
    }
    let resumed = state
        .service
        .resume_sandbox(&tenant, &sandbox)
        .await
        .map_err(for_sandbox(&id))?;
    let secs = body.timeout.unwrap_or(E2B_MIN_TIMEOUT_SECS);
    let until = state
        .service
        .now()
        .saturating_add(Duration::from_secs(secs));
    state
        .service
        .set_deadline(&tenant, &sandbox, Some(until))
        .await
        .map_err(for_sandbox(&id))?;
    let created = created_view(&state, &tenant, &resumed)?;
    Ok((StatusCode::CREATED, Json(created)).into_response())
}

/// `POST /sandboxes/{id}/refreshes`: keeps a running sandbox for at least
/// `duration` seconds more (at least 15, E2B's floor); never shortens it.
pub async fn refresh(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Path(id): Path<String>,
    body: Option<Json<RefreshBody>>,
) -> Result<StatusCode, E2bError> {
    let (sandbox, view) = shown_sandbox(&state, &tenant, &id).await?;
    // E2B keeps only running sandboxes alive; a request here would resume it
    if view.state == SandboxState::Paused {
        return Err(E2bError::new(
            StatusCode::NOT_FOUND,
            format!("sandbox {id} is paused: connect to it to resume it"),
        ));
    }
    let secs = body
        .and_then(|Json(b)| b.duration)
        .unwrap_or(E2B_MIN_TIMEOUT_SECS)
        .max(E2B_MIN_TIMEOUT_SECS);
    extend_deadline(&state, &tenant, &sandbox, &id, secs).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /sandboxes/{id}/fork`: `count` (default 1) new sandboxes with the
/// running sandbox's files (see the module doc), each living `timeout`
/// seconds (default 15); 201 with one result per fork.
pub async fn fork(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Path(id): Path<String>,
    body: Option<Json<ForkBody>>,
) -> Result<Response, E2bError> {
    let body = body.map(|Json(b)| b).unwrap_or_default();
    let count = body.count.unwrap_or(1);
    if count == 0 {
        return Err(E2bError::new(
            StatusCode::BAD_REQUEST,
            "count must be at least 1",
        ));
    }
    if count > MAX_RESTORE_COUNT {
        return Err(E2bError::new(
            StatusCode::BAD_REQUEST,
            format!("count cannot be greater than {MAX_RESTORE_COUNT} on Paddock"),
        ));
    }
    let (sandbox, view) = shown_sandbox(&state, &tenant, &id).await?;
    if view.state == SandboxState::Paused {
        return Err(paused_conflict(&id, "be forked"));
    }
    let network = state
        .service
        .get_network(&tenant, &sandbox)
        .await
        .map_err(for_sandbox(&id))?
        .network;
    let snapshot = state
        .service
        .create_snapshot(&tenant, &sandbox, CreateSnapshot::default())
        .await
        .map_err(for_sandbox(&id))?;
    let restore = RestoreSnapshot {
        count,
        network,
        backend: Some(view.backend.clone()),
        image: view.image.clone(),
        ..RestoreSnapshot::default()
    };
    let restored = state
        .service
        .restore_snapshot(&tenant, &snapshot.id, restore)
        .await;
    // the forks hold their own copies: the snapshot was only the way there
    if let Err(err) = state.service.delete_snapshot(&tenant, &snapshot.id).await {
        tracing::warn!(sandbox_id = %sandbox, snapshot_id = %snapshot.id, error = %err, "deleting a fork's snapshot");
    }
    let results = match restored {
        Ok(forks) => {
            let timeout = Duration::from_secs(body.timeout.unwrap_or(E2B_MIN_TIMEOUT_SECS));
            let mut results = Vec::with_capacity(forks.len());
            for fork in &forks {
                results.push(started_fork(&state, &tenant, fork, timeout).await);
            }
            results
        }
        Err(err) => {
            let err = E2bError::from(err);
            (0..count)
                .map(|_| ForkResult {
                    sandbox: None,
                    error: Some(err.clone().into()),
                })
                .collect()
        }
    };
    Ok((StatusCode::CREATED, Json(results)).into_response())
}

/// One fork's result: its deadline set and its answer, or the error (and
/// the fork destroyed).
async fn started_fork(
    state: &AppState,
    tenant: &TenantId,
    fork: &SandboxView,
    timeout: Duration,
) -> ForkResult {
    let until = state.service.now().saturating_add(timeout);
    let answer = match state
        .service
        .set_deadline(tenant, &fork.id, Some(until))
        .await
    {
        Ok(()) => created_view(state, tenant, fork),
        Err(err) => Err(E2bError::from(err)),
    };
    match answer {
        Ok(created) => ForkResult {
            sandbox: Some(created),
            error: None,
        },
        Err(err) => {
            if let Err(e) = state.service.delete_sandbox(tenant, &fork.id).await {
                tracing::warn!(sandbox_id = %fork.id, error = %e, "destroying a fork that did not start");
            }
            ForkResult {
                sandbox: None,
                error: Some(err.into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_fork_result_carries_one_of_sandbox_or_error() {
        let failed = ForkResult {
            sandbox: None,
            error: Some(E2bError::new(StatusCode::TOO_MANY_REQUESTS, "full").into()),
        };
        assert_eq!(
            serde_json::to_value(&failed).unwrap(),
            serde_json::json!({"error": {"code": 429, "message": "full"}})
        );
    }
}
