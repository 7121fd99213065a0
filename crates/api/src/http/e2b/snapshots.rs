//! E2B's snapshots on Paddock's: `POST /sandboxes/{id}/snapshots` takes
//! one, `GET /snapshots` lists them, `DELETE /templates/{id}` (what the
//! SDK's `delete_snapshot` calls) deletes one, and a create whose template
//! is a snapshot id starts a sandbox restored from it.
//!
//! A Paddock snapshot holds a sandbox's workspace files, not its memory:
//! E2B's `memory: true` is refused, and with `memory` left out (E2B's
//! default would keep memory) the snapshot is of the files, so a sandbox
//! made from it starts fresh on them. Snapshots have no names: the id
//! (`snap_...`) is the only name, and `name` is refused. The snapshots a
//! filesystem pause keeps a paused sandbox's files in are not shown here
//! and cannot be deleted here: its resume needs them.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use paddock_core::ids::{SnapshotId, TenantId};
use paddock_core::sandbox::SandboxId;
use paddock_core::store::SandboxState;
use paddock_proto::NetworkPolicy;
use serde::{Deserialize, Serialize};

use super::auth::ApiKey;
use super::error::E2bError;
use super::sandboxes::{for_sandbox, shown_sandbox};
use super::templates::Template;
use crate::http::AppState;
use crate::service::{CreateSnapshot, RestoreSnapshot, SandboxView, ServiceError, SnapshotView};

/// The most snapshots one list answer holds (E2B's page limit), and the
/// most rows it reads.
const MAX_LIST: u32 = 100;
const MAX_ROWS_SCANNED: usize = 5_000;

/// `SandboxSnapshotRequest`.
#[derive(Debug, Default, Deserialize)]
pub struct SnapshotBody {
    name: Option<String>,
    memory: Option<bool>,
}

/// `SnapshotInfo`.
#[derive(Debug, Serialize)]
pub struct SnapshotInfo {
    #[serde(rename = "snapshotID")]
    snapshot_id: String,
    names: Vec<String>,
}

impl From<&SnapshotView> for SnapshotInfo {
    fn from(view: &SnapshotView) -> Self {
        Self {
            snapshot_id: view.id.to_string(),
            names: Vec::new(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListQuery {
    #[serde(rename = "sandboxID")]
    sandbox_id: Option<String>,
    name: Option<String>,
    limit: Option<u32>,
    next_token: Option<String>,
}

/// The snapshot a template name is, if it is one: `snap_...`, with or
/// without E2B's `:tag` (Paddock has one tag, the snapshot itself).
pub fn snapshot_template(name: &str) -> Option<SnapshotId> {
    let id = name.split_once(':').map_or(name, |(id, _tag)| id);
    SnapshotId::parse(id).ok()
}

fn snapshot_not_found(id: &str) -> E2bError {
    E2bError::new(StatusCode::NOT_FOUND, format!("snapshot {id} not found"))
}

/// A service error, with E2B's "not found" wording for a missing snapshot.
fn for_snapshot(id: &str) -> impl FnOnce(ServiceError) -> E2bError + '_ {
    move |err| {
        let err = E2bError::from(err);
        if err.status == StatusCode::NOT_FOUND {
            snapshot_not_found(id)
        } else {
            err
        }
    }
}

/// Whether the snapshot keeps a paused sandbox's files for its resume.
async fn held_by_pause(state: &AppState, tenant: &TenantId, snapshot: &SnapshotView) -> bool {
    let Some(source) = &snapshot.source_sandbox else {
        return false;
    };
    match state.service.store().get_sandbox(tenant, source).await {
        Ok(record) => {
            record.state == SandboxState::Paused
                && record
                    .pause
                    .as_ref()
                    .and_then(|p| p.snapshot.as_ref())
                    .is_some_and(|kept| kept == &snapshot.id)
        }
        Err(_) => false,
    }
}

/// `POST /sandboxes/{id}/snapshots`: the running sandbox's workspace into
/// a new snapshot; 201 with its id. The sandbox runs on.
pub async fn create(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Path(id): Path<String>,
    body: Option<Json<SnapshotBody>>,
) -> Result<Response, E2bError> {
    let body = body.map(|Json(b)| b).unwrap_or_default();
    if body.name.is_some() {
        return Err(E2bError::new(
            StatusCode::BAD_REQUEST,
            "snapshot names are not supported: a Paddock snapshot is named by its id",
        ));
    }
    if body.memory == Some(true) {
        return Err(E2bError::new(
            StatusCode::BAD_REQUEST,
            "memory snapshots are not supported: a Paddock snapshot keeps the workspace files (mode \"filesystem\")",
        ));
    }
    let (sandbox, view) = shown_sandbox(&state, &tenant, &id).await?;
    match view.state {
        SandboxState::Running => {}
        SandboxState::Paused => {
            return Err(E2bError::new(
                StatusCode::CONFLICT,
                format!("sandbox {id} is paused; connect to it (resume) before taking a snapshot"),
            ));
        }
        _ => return Err(E2bError::sandbox_not_found(&id)),
    }
    let snapshot = state
        .service
        .create_snapshot(&tenant, &sandbox, CreateSnapshot::default())
        .await
        .map_err(for_sandbox(&id))?;
    Ok((StatusCode::CREATED, Json(SnapshotInfo::from(&snapshot))).into_response())
}

/// `GET /snapshots`: the tenant's snapshots, oldest first, filtered by
/// source sandbox and by id (`name`); `X-Next-Token` names the next page.
pub async fn list(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Query(query): Query<ListQuery>,
) -> Result<Response, E2bError> {
    let limit = query.limit.unwrap_or(MAX_LIST).clamp(1, MAX_LIST) as usize;
    let source = query.sandbox_id.as_deref().filter(|s| !s.is_empty());
    let source = match source.map(SandboxId::parse) {
        // no sandbox of that id: none of its snapshots
        Some(Err(_)) => return Ok(Json(Vec::<SnapshotInfo>::new()).into_response()),
        Some(Ok(id)) => Some(id),
        None => None,
    };
    let named = match query.name.as_deref().filter(|n| !n.is_empty()) {
        Some(name) => match snapshot_template(name) {
            Some(id) => Some(id),
            None => return Ok(Json(Vec::<SnapshotInfo>::new()).into_response()),
        },
        None => None,
    };
    let mut after = query
        .next_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(|t| {
            SnapshotId::parse(t).map_err(|_| {
                E2bError::new(
                    StatusCode::BAD_REQUEST,
                    "nextToken: not a token this server gave",
                )
            })
        })
        .transpose()?;
    let mut found = Vec::new();
    let mut scanned = 0;
    let mut next = None;
    'pages: loop {
        let page = state
            .service
            .list_snapshots(&tenant, after.clone(), Some(MAX_LIST))
            .await?;
        let full_page = page.len() == MAX_LIST as usize;
        for snapshot in page {
            scanned += 1;
            after = Some(snapshot.id.clone());
            let matches = source
                .as_ref()
                .is_none_or(|s| snapshot.source_sandbox.as_ref() == Some(s))
                && named.as_ref().is_none_or(|n| n == &snapshot.id)
                && !held_by_pause(&state, &tenant, &snapshot).await;
            if matches {
                found.push(SnapshotInfo::from(&snapshot));
                if found.len() == limit {
                    next = after.clone();
                    break 'pages;
                }
            }
        }
        if !full_page {
            break;
        }
        if scanned >= MAX_ROWS_SCANNED {
            next = after.clone();
            break;
        }
    }
    let mut headers = HeaderMap::new();
    if let Some(token) = next.and_then(|id| HeaderValue::from_str(id.as_str()).ok()) {
        headers.insert("x-next-token", token);
    }
    Ok((headers, Json(found)).into_response())
}

/// `DELETE /templates/{id}`: deletes a snapshot (204; 404 when there is
/// none). Paddock's other templates are its backends, which no request
/// deletes.
pub async fn delete_template(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Path(name): Path<String>,
) -> Result<StatusCode, E2bError> {
    let Some(id) = snapshot_template(&name) else {
        Template::resolve(&name, &state)?;
        return Err(E2bError::new(
            StatusCode::BAD_REQUEST,
            format!("template '{name}' is this server's own (its backends) and cannot be deleted"),
        ));
    };
    let snapshot = state
        .service
        .get_snapshot(&tenant, &id)
        .await
        .map_err(for_snapshot(&name))?;
    if held_by_pause(&state, &tenant, &snapshot).await {
        return Err(snapshot_not_found(&name));
    }
    state
        .service
        .delete_snapshot(&tenant, &id)
        .await
        .map_err(for_snapshot(&name))?;
    Ok(StatusCode::NO_CONTENT)
}

/// A sandbox restored from a snapshot, for a create whose template is
/// one (`snapshot_template`): the snapshot's files in a new workspace, on
/// the backend and image of the sandbox it was taken from (so its files'
/// owners are those that backend sees). A restore takes no metadata nor
/// environment yet, so a create asking for them is refused. The caller
/// sets the timeout as for any create.
pub async fn create_from_snapshot(
    state: &AppState,
    tenant: &TenantId,
    snapshot: &SnapshotId,
    network: NetworkPolicy,
    metadata: &BTreeMap<String, String>,
    env: &BTreeMap<String, String>,
) -> Result<SandboxView, E2bError> {
    if !metadata.is_empty() || !env.is_empty() {
        return Err(E2bError::new(
            StatusCode::BAD_REQUEST,
            "metadata and envVars are not supported for a sandbox made from a snapshot on Paddock",
        ));
    }
    let name = snapshot.to_string();
    let template_not_found = || {
        E2bError::new(
            StatusCode::NOT_FOUND,
            format!("template '{name}' not found"),
        )
    };
    let view = state
        .service
        .get_snapshot(tenant, snapshot)
        .await
        .map_err(|err| match E2bError::from(err) {
            e if e.status == StatusCode::NOT_FOUND => template_not_found(),
            e => e,
        })?;
    if held_by_pause(state, tenant, &view).await {
        return Err(template_not_found());
    }
    let source = match &view.source_sandbox {
        Some(source) => state.service.get_sandbox(tenant, source).await.ok(),
        None => None,
    };
    let restore = RestoreSnapshot {
        count: 1,
        network,
        backend: source.as_ref().map(|s| s.backend.clone()),
        image: source.and_then(|s| s.image),
        ..RestoreSnapshot::default()
    };
    let mut restored = state
        .service
        .restore_snapshot(tenant, snapshot, restore)
        .await?;
    restored.pop().ok_or_else(|| {
        E2bError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the restore made no sandbox",
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_template_is_a_snapshot_by_its_id_with_or_without_a_tag() {
        let id = SnapshotId::generate();
        assert_eq!(snapshot_template(id.as_str()), Some(id.clone()));
        assert_eq!(
            snapshot_template(&format!("{id}:default")),
            Some(id.clone())
        );
        for other in ["base", "native", "team/name:v1", "snap_", ""] {
            assert_eq!(snapshot_template(other), None, "{other}");
        }
    }

    #[test]
    fn snapshot_info_has_the_keys_the_sdk_requires() {
        let info = SnapshotInfo {
            snapshot_id: "snap_0192f5e0c1a47d2e9b3c4d5e6f708192".to_owned(),
            names: Vec::new(),
        };
        assert_eq!(
            serde_json::to_value(&info).unwrap(),
            serde_json::json!({"snapshotID": "snap_0192f5e0c1a47d2e9b3c4d5e6f708192", "names": []})
        );
    }
}
