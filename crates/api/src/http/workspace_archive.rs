//! Workspaces as archives: create one from an uploaded tar.zst, download
//! one's files as a tar.zst.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use paddock_core::ids::WorkspaceId;
use tokio_util::io::ReaderStream;

use super::error::Body as ErrorBody;
use super::extract::{ApiPath, ApiQuery};
use super::openapi::Binary;
use super::sandboxes::workspace_id;
use super::snapshots::capped_body;
use super::{ApiError, AppState, Caller};
use crate::service::{ExportWorkspace, ImportWorkspace, WorkspaceView};

/// The body is the archive itself (`application/zstd`), streamed and
/// unpacked into the new workspace with every check of a snapshot import;
/// a refused archive leaves no workspace behind.
#[utoipa::path(post, path = "/v1/workspaces/import", tag = "workspaces",
    summary = "Create a workspace from an archive (the body is the tar.zst)",
    params(ImportWorkspace),
    request_body(description = "The archive; any content type is read as its bytes",
        content((Binary = "application/zstd"), (Binary = "application/octet-stream"))),
    responses(
        (status = 201, description = "created, holding the archive's files", body = WorkspaceView),
        (status = 400, description = "a bad query, or the archive is unreadable or over 1 GiB (`upload_failed`) or refused: hostile, or over its limits (`archive_refused`)", body = ErrorBody),
        (status = 409, description = "a conflicting write (`conflict`)", body = ErrorBody),
        (status = 413, description = "the tenant's disk quota is used up (`disk_quota_exceeded`)", body = ErrorBody),
    ))]
pub(super) async fn import(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiQuery(query): ApiQuery<ImportWorkspace>,
    body: Body,
) -> Result<(StatusCode, Json<WorkspaceView>), ApiError> {
    let mut reader = capped_body(body);
    let view = state
        .service
        .import_workspace(&tenant, query, &mut reader)
        .await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Packs the workspace as a snapshot would (default excludes) before the
/// answer starts, so an over-limit workspace is a 400, never a cut stream.
#[utoipa::path(get, path = "/v1/workspaces/{id}/archive", tag = "workspaces",
    summary = "Download a workspace's files (tar, zstd)",
    params(("id" = WorkspaceId, Path), ExportWorkspace),
    responses(
        (status = 200, description = "the archive", body = Binary, content_type = "application/zstd"),
        (status = 400, description = "a bad query, or the workspace is over the limits (`archive_refused`)", body = ErrorBody),
    ))]
pub(super) async fn archive(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<ExportWorkspace>,
) -> Result<Response, ApiError> {
    let id = workspace_id(&id)?;
    let archive = state.service.export_workspace(&tenant, &id, query).await?;
    let headers = [
        (header::CONTENT_TYPE, "application/zstd".to_owned()),
        (header::CONTENT_LENGTH, archive.size.to_string()),
        (
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{id}.tar.zst\""),
        ),
    ];
    let body = Body::from_stream(ReaderStream::new(archive.file));
    Ok((headers, body).into_response())
}
