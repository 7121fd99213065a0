//! Snapshots: create from a sandbox, list, get, delete, restore (fork),
//! download the archive, import one.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::TryStreamExt;
use paddock_core::ids::SnapshotId;
use paddock_core::sandbox::SandboxId;
use serde::{Deserialize, Serialize};
use tokio_util::io::{ReaderStream, StreamReader};

use super::error::Body as ErrorBody;
use super::extract::{ApiJson, ApiPath, ApiQuery, sandbox_id};
use super::openapi::Binary;
use super::{ApiError, AppState, Caller};
use crate::service::{CreateSnapshot, ImportSnapshot, RestoreSnapshot, SandboxView, SnapshotView};

/// Largest archive `POST /v1/snapshots` accepts.
pub const MAX_IMPORT_BYTES: u64 = 1 << 30;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    /// The last id of the previous page.
    #[param(value_type = Option<SnapshotId>)]
    after: Option<String>,
    /// Page size, default 100.
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SnapshotList {
    pub snapshots: Vec<SnapshotView>,
    /// Pass as `after` for the next page; absent on the last page.
    pub next_after: Option<SnapshotId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Restored {
    pub sandboxes: Vec<SandboxView>,
}

#[utoipa::path(post, path = "/v1/sandboxes/{id}/snapshots", tag = "snapshots",
    summary = "Snapshot a sandbox's workspace",
    params(("id" = SandboxId, Path)),
    request_body = CreateSnapshot,
    responses(
        (status = 201, description = "stored", body = SnapshotView),
        (status = 400, description = "a bad id or body, or the workspace is over the asked limits (`archive_refused`)", body = ErrorBody),
        (status = 403, description = "the sandbox may not read a workspace file (`permission_denied`)", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or a conflicting write (`conflict`)", body = ErrorBody),
        (status = 413, description = "the body is larger than the server accepts (`payload_too_large`)", body = ErrorBody),
        (status = 504, description = "the guest did not answer in time (`timeout`)", body = ErrorBody),
    ))]
pub(super) async fn create(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(command): ApiJson<CreateSnapshot>,
) -> Result<(StatusCode, Json<SnapshotView>), ApiError> {
    let id = sandbox_id(&id)?;
    let view = state.service.create_snapshot(&tenant, &id, command).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

#[utoipa::path(get, path = "/v1/snapshots", tag = "snapshots",
    summary = "List snapshots, oldest first",
    params(ListQuery),
    responses((status = 200, description = "one page", body = SnapshotList)))]
pub(super) async fn list(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<SnapshotList>, ApiError> {
    let after = query.after.as_deref().map(snapshot_id).transpose()?;
    let limit = query.limit;
    let snapshots = state.service.list_snapshots(&tenant, after, limit).await?;
    let full = !snapshots.is_empty() && snapshots.len() as u64 == u64::from(limit.unwrap_or(100));
    let next_after = full
        .then(|| snapshots.last().map(|s| s.id.clone()))
        .flatten();
    Ok(Json(SnapshotList {
        snapshots,
        next_after,
    }))
}

#[utoipa::path(get, path = "/v1/snapshots/{id}", tag = "snapshots",
    summary = "Get a snapshot",
    params(("id" = SnapshotId, Path)),
    responses((status = 200, description = "the snapshot", body = SnapshotView)))]
pub(super) async fn get(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<SnapshotView>, ApiError> {
    let id = snapshot_id(&id)?;
    Ok(Json(state.service.get_snapshot(&tenant, &id).await?))
}

#[utoipa::path(delete, path = "/v1/snapshots/{id}", tag = "snapshots",
    summary = "Delete a snapshot (its archive goes once nothing else refers to it)",
    params(("id" = SnapshotId, Path)),
    responses(
        (status = 200, description = "the snapshot as it was", body = SnapshotView),
        (status = 409, description = "a conflicting write (`conflict`)", body = ErrorBody),
    ))]
pub(super) async fn delete(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<SnapshotView>, ApiError> {
    let id = snapshot_id(&id)?;
    Ok(Json(state.service.delete_snapshot(&tenant, &id).await?))
}

#[utoipa::path(post, path = "/v1/snapshots/{id}/restore", tag = "snapshots",
    summary = "Start sandboxes from a snapshot",
    params(("id" = SnapshotId, Path)),
    request_body = RestoreSnapshot,
    responses(
        (status = 201, description = "the sandboxes, running", body = Restored),
        (status = 409, description = "a conflicting write (`conflict`)", body = ErrorBody),
        (status = 429, description = "the server runs its limit of sandboxes (`too_many_sandboxes`)", body = ErrorBody),
    ))]
pub(super) async fn restore(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(command): ApiJson<RestoreSnapshot>,
) -> Result<(StatusCode, Json<Restored>), ApiError> {
    let id = snapshot_id(&id)?;
    let sandboxes = state
        .service
        .restore_snapshot(&tenant, &id, command)
        .await?;
    Ok((StatusCode::CREATED, Json(Restored { sandboxes })))
}

#[utoipa::path(get, path = "/v1/snapshots/{id}/archive", tag = "snapshots",
    summary = "Download a snapshot's archive (tar, zstd)",
    params(("id" = SnapshotId, Path)),
    responses((status = 200, description = "the archive", body = Binary, content_type = "application/zstd")))]
pub(super) async fn archive(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Response, ApiError> {
    let id = snapshot_id(&id)?;
    let archive = state.service.snapshot_archive(&tenant, &id).await?;
    let headers = [
        (header::CONTENT_TYPE, "application/zstd".to_owned()),
        (header::CONTENT_LENGTH, archive.size.to_string()),
        (
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{id}.tar.zst\""),
        ),
    ];
    let body = Body::from_stream(ReaderStream::new(archive.body));
    Ok((headers, body).into_response())
}

/// The body is the archive itself (`application/zstd`), streamed; the
/// query may raise the limits of its check (`?max_files=N&max_bytes=N`).
#[utoipa::path(post, path = "/v1/snapshots", tag = "snapshots",
    summary = "Import an archive as a snapshot (the body is the tar.zst)",
    params(ImportSnapshot),
    request_body(description = "The archive; any content type is read as its bytes",
        content((Binary = "application/zstd"), (Binary = "application/octet-stream"))),
    responses(
        (status = 201, description = "stored", body = SnapshotView),
        (status = 400, description = "a bad query, or the archive is unreadable or over 1 GiB (`upload_failed`) or refused (`archive_refused`)", body = ErrorBody),
        (status = 409, description = "a conflicting write (`conflict`)", body = ErrorBody),
    ))]
pub(super) async fn import(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiQuery(limits): ApiQuery<ImportSnapshot>,
    body: Body,
) -> Result<(StatusCode, Json<SnapshotView>), ApiError> {
    let mut reader = capped_body(body);
    let view = state
        .service
        .import_snapshot(&tenant, limits, &mut reader)
        .await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// An uploaded archive's body as a reader that fails once it passed
/// [`MAX_IMPORT_BYTES`].
pub(super) fn capped_body(body: Body) -> impl tokio::io::AsyncRead + Send + Unpin {
    let mut seen = 0u64;
    let stream = body
        .into_data_stream()
        .map_err(std::io::Error::other)
        .and_then(move |chunk| {
            seen += chunk.len() as u64;
            futures_util::future::ready(if seen > MAX_IMPORT_BYTES {
                Err(std::io::Error::other(format!(
                    "the archive is larger than {MAX_IMPORT_BYTES} bytes"
                )))
            } else {
                Ok(chunk)
            })
        });
    StreamReader::new(stream)
}

fn snapshot_id(raw: &str) -> Result<SnapshotId, ApiError> {
    SnapshotId::parse(raw)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_id", e.to_string()))
}
