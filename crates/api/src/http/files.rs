//! Files of a sandbox's workspace as raw bytes, directory listings and search.
//! Paths are relative to /workspace; the guest refuses any that leave it
//! (`..`, absolute paths elsewhere, symlinks out) with `path_escape`. A path
//! is bytes: one not in UTF-8 is named percent-encoded (`%FF`) in the URL and
//! answered as a display form plus its base64 (docs/api.md, "Paths not in
//! UTF-8").

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use std::sync::Arc;

use paddock_core::ids::TenantId;
use paddock_core::sandbox::{SandboxId, WriteOptions};
use paddock_proto::FsPath;
use serde::{Deserialize, Serialize};

use super::error::Body as ErrorBody;
use super::extract::{ApiJson, ApiPath, ApiQuery, FilesPath, RawBody, raw_query_value, sandbox_id};
use super::openapi::Binary;
use super::{ApiError, AppState, Caller};
use crate::service::commands::SearchCommand;
use crate::service::{FileEntry, SandboxService, SearchView, ServiceError};

/// Bytes read from the guest per request while a file streams out.
const READ_CHUNK: u64 = 4 << 20;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct ReadQuery {
    /// First byte to read (default 0).
    #[serde(default)]
    offset: u64,
    /// Most bytes to read (default: to the end).
    len: Option<u64>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct WriteQuery {
    /// Permission bits in octal (`644`), at most 7777.
    #[param(pattern = "^0*[0-7]{1,4}$")]
    mode: Option<String>,
    /// Create missing parent directories (default true).
    parents: Option<bool>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct DeleteQuery {
    /// Delete a directory with everything in it (default false).
    #[serde(default)]
    recursive: bool,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    /// The directory to list, relative to /workspace (default `.`);
    /// percent-encoded bytes (`%FF`) name one not in UTF-8.
    #[param(min_length = 1)]
    dir: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Written {
    /// For display: bytes not in UTF-8 as `\xNN`.
    pub path: String,
    /// The path's raw bytes in standard base64, only when it is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Listing {
    /// For display: bytes not in UTF-8 as `\xNN`.
    pub dir: String,
    /// The directory's raw bytes in standard base64, only when it is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir_bytes: Option<String>,
    pub entries: Vec<FileEntry>,
}

/// The file's bytes (or the asked range), streamed in chunks.
#[utoipa::path(get, path = "/v1/sandboxes/{id}/files/{path}", tag = "files",
    summary = "Read a file",
    params(("id" = SandboxId, Path), ("path" = String, Path, min_length = 1, description = "Relative to /workspace; may contain `/`; percent-encoded bytes (`%FF`) name a path not in UTF-8. Paths that leave the workspace are refused (`path_escape`)."), ReadQuery),
    responses(
        (status = 200, description = "the bytes", body = Binary, content_type = "application/octet-stream"),
        (status = 403, description = "the sandbox refused: `permission_denied`, `read_only`", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty`", body = ErrorBody),
        (status = 413, description = "the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`)", body = ErrorBody),
        (status = 504, description = "the guest did not answer in time (`timeout`)", body = ErrorBody),
    ))]
pub(super) async fn read(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    FilesPath { id, path }: FilesPath,
    ApiQuery(query): ApiQuery<ReadQuery>,
) -> Result<Response, ApiError> {
    let id = sandbox_id(&id)?;
    Ok(file_response(state.service, tenant, id, path, query.offset, query.len).await?)
}

/// `[offset, offset+len)` of a file (to its end when `len` is None) as an
/// `application/octet-stream` answer: one read when it fits a chunk, else
/// streamed chunk by chunk (a failure midway cuts the answer short).
pub(super) async fn file_response(
    service: Arc<SandboxService>,
    tenant: TenantId,
    id: SandboxId,
    path: FsPath,
    offset: u64,
    len: Option<u64>,
) -> Result<Response, ServiceError> {
    let first_len = len.map_or(READ_CHUNK, |l| l.min(READ_CHUNK));
    let first = service
        .read_file(&tenant, &id, &path, offset, Some(first_len))
        .await?;
    let end = len.map_or(first.size, |l| first.size.min(offset.saturating_add(l)));
    let next = first.offset + first.data.len() as u64;
    let octet_stream = HeaderValue::from_static("application/octet-stream");
    if next >= end || first.data.is_empty() {
        return Ok(([(header::CONTENT_TYPE, octet_stream)], first.data).into_response());
    }
    let head = futures_util::stream::once(async move { Ok::<_, std::io::Error>(first.data) });
    let rest = stream::unfold(next, move |offset| {
        let (service, tenant, id, path) =
            (service.clone(), tenant.clone(), id.clone(), path.clone());
        async move {
            if offset >= end {
                return None;
            }
            let len = (end - offset).min(READ_CHUNK);
            match service
                .read_file(&tenant, &id, &path, offset, Some(len))
                .await
            {
                Ok(chunk) if chunk.data.is_empty() => None,
                Ok(chunk) => {
                    let next = offset + chunk.data.len() as u64;
                    Some((Ok(chunk.data), next))
                }
                Err(err) => {
                    tracing::warn!(sandbox_id = %id, error = %err, "file read failed midway");
                    Some((Err(std::io::Error::other("file read failed")), end))
                }
            }
        }
    });
    let body = Body::from_stream(futures_util::StreamExt::chain(head, rest));
    Ok(([(header::CONTENT_TYPE, octet_stream)], body).into_response())
}

#[utoipa::path(put, path = "/v1/sandboxes/{id}/files/{path}", tag = "files",
    summary = "Write a file (the body is its bytes)",
    params(("id" = SandboxId, Path), ("path" = String, Path, min_length = 1, description = "Relative to /workspace; may contain `/`; percent-encoded bytes (`%FF`) name a path not in UTF-8. Paths that leave the workspace are refused (`path_escape`)."), WriteQuery),
    request_body(content = Option<Binary>, content_type = "application/octet-stream",
        description = "The file's bytes; none writes an empty file"),
    responses(
        (status = 200, description = "written", body = Written),
        (status = 403, description = "the sandbox refused: `permission_denied`, `read_only`", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty`", body = ErrorBody),
        (status = 413, description = "the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`)", body = ErrorBody),
        (status = 504, description = "the guest did not answer in time (`timeout`)", body = ErrorBody),
    ))]
pub(super) async fn write(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    FilesPath { id, path }: FilesPath,
    ApiQuery(query): ApiQuery<WriteQuery>,
    RawBody(body): RawBody,
) -> Result<Json<Written>, ApiError> {
    let id = sandbox_id(&id)?;
    let mode = match query.mode.as_deref() {
        // Digits only, as the document's pattern says (from_str_radix would take a sign).
        Some(text) => Some(
            text.bytes()
                .all(|b| (b'0'..=b'7').contains(&b))
                .then(|| u32::from_str_radix(text, 8).ok())
                .flatten()
                .ok_or_else(|| {
                    ApiError::invalid("query string: mode is octal permission bits, e.g. 644")
                })?,
        ),
        None => None,
    };
    let options = WriteOptions {
        mode,
        create_parents: query.parents.unwrap_or(true),
    };
    let bytes = state
        .service
        .write_file(&tenant, &id, &path, &body, options)
        .await?;
    Ok(Json(Written {
        path: path.display(),
        path_bytes: path.bytes_b64(),
        bytes,
    }))
}

#[utoipa::path(delete, path = "/v1/sandboxes/{id}/files/{path}", tag = "files",
    summary = "Delete a file or directory",
    params(("id" = SandboxId, Path), ("path" = String, Path, min_length = 1, description = "Relative to /workspace; may contain `/`; percent-encoded bytes (`%FF`) name a path not in UTF-8. Paths that leave the workspace are refused (`path_escape`)."), DeleteQuery),
    responses(
        (status = 204, description = "deleted"),
        (status = 403, description = "the sandbox refused: `permission_denied`, `read_only`", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty`", body = ErrorBody),
        (status = 413, description = "the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`)", body = ErrorBody),
        (status = 504, description = "the guest did not answer in time (`timeout`)", body = ErrorBody),
    ))]
pub(super) async fn delete(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    FilesPath { id, path }: FilesPath,
    ApiQuery(query): ApiQuery<DeleteQuery>,
) -> Result<StatusCode, ApiError> {
    let id = sandbox_id(&id)?;
    state
        .service
        .delete_file(&tenant, &id, &path, query.recursive)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/v1/sandboxes/{id}/files", tag = "files",
    summary = "List a directory",
    params(("id" = SandboxId, Path), ListQuery),
    responses(
        (status = 200, description = "its entries", body = Listing),
        (status = 403, description = "the sandbox refused: `permission_denied`, `read_only`", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty`", body = ErrorBody),
        (status = 413, description = "the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`)", body = ErrorBody),
        (status = 504, description = "the guest did not answer in time (`timeout`)", body = ErrorBody),
    ))]
pub(super) async fn list(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<ListQuery>,
    uri: Uri,
) -> Result<Json<Listing>, ApiError> {
    let id = sandbox_id(&id)?;
    let dir = match query.dir {
        None => FsPath::from("."),
        // read again as bytes: serde's form decoding makes `%FF` lossy
        Some(text) => {
            raw_query_value(uri.query(), "dir").map_or_else(|| FsPath::from(text), FsPath::from)
        }
    };
    let entries = state.service.list_files(&tenant, &id, &dir).await?;
    Ok(Json(Listing {
        dir: dir.display(),
        dir_bytes: dir.bytes_b64(),
        entries,
    }))
}

#[utoipa::path(post, path = "/v1/sandboxes/{id}/search", tag = "files",
    summary = "Find files by name and/or content",
    params(("id" = SandboxId, Path)),
    request_body = SearchCommand,
    responses(
        (status = 200, description = "the matches", body = SearchView),
        (status = 403, description = "the sandbox refused: `permission_denied`, `read_only`", body = ErrorBody),
        (status = 409, description = "the sandbox is not running (`sandbox_not_running`) or an agent run drives it (`sandbox_owned_by_run`), or the guest refused: `already_exists`, `directory_not_empty`", body = ErrorBody),
        (status = 413, description = "the body is larger than the server accepts (`payload_too_large`), or the guest's answer would be (`too_large`)", body = ErrorBody),
        (status = 504, description = "the guest did not answer in time (`timeout`)", body = ErrorBody),
    ))]
pub(super) async fn search(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(command): ApiJson<SearchCommand>,
) -> Result<Json<SearchView>, ApiError> {
    let id = sandbox_id(&id)?;
    Ok(Json(state.service.search(&tenant, &id, command).await?))
}
