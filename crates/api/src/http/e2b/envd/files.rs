//! envd's plain HTTP routes: `GET /health`, and `GET`/`POST /files`, a
//! file's bytes down and files up (multipart, one part per file named
//! `file` whose filename is its path, or one octet-stream body for
//! `?path=`, gzip-encoded or not), on the sandbox's file operations.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use paddock_core::sandbox::WriteOptions;
use paddock_core::store::SandboxState;
use serde::{Deserialize, Serialize};

use super::paths::{e2b_path, workspace_path};
use crate::http::AppState;
use crate::http::e2b::auth::{EnvdCaller, SANDBOX_ID_HEADER};
use crate::http::e2b::error::E2bError;
use crate::http::files::file_response;

#[derive(Debug, Deserialize)]
pub struct FileQuery {
    path: Option<String>,
}

/// One file written, as envd answers it.
#[derive(Debug, Serialize)]
pub struct EntryWritten {
    name: String,
    r#type: &'static str,
    path: String,
}

fn bad_path(why: String) -> E2bError {
    E2bError::new(StatusCode::BAD_REQUEST, why)
}

/// Bytes of a refused upload read (and dropped) before the answer, so a
/// client still sending a small file reads the refusal rather than a broken
/// pipe; a larger body is cut off.
const REFUSED_BODY_DRAIN: usize = 1 << 20;
/// How long that drain may take.
const REFUSED_BODY_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

async fn drain(request: Request) {
    let body = axum::body::to_bytes(request.into_body(), REFUSED_BODY_DRAIN);
    let _ = tokio::time::timeout(REFUSED_BODY_WAIT, body).await;
}

/// 204 while the sandbox runs; 502 "not found" (what E2B's proxy says)
/// once it is gone, so `Sandbox.is_running()` answers false. Without a
/// valid token there is nothing to look up: envd's own health is 204.
pub async fn health(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if !headers.contains_key(SANDBOX_ID_HEADER) {
        return StatusCode::NO_CONTENT.into_response();
    }
    let Ok(caller) = EnvdCaller::from_headers(&headers, &state) else {
        return StatusCode::NO_CONTENT.into_response();
    };
    match state
        .service
        .get_sandbox(&caller.tenant, &caller.sandbox)
        .await
    {
        Ok(view) if view.state == SandboxState::Running => StatusCode::NO_CONTENT.into_response(),
        _ => E2bError::new(
            StatusCode::BAD_GATEWAY,
            format!("The sandbox {} was not found", caller.sandbox),
        )
        .into_response(),
    }
}

pub async fn download(
    State(state): State<AppState>,
    caller: EnvdCaller,
    Query(query): Query<FileQuery>,
) -> Result<Response, E2bError> {
    let raw = query
        .path
        .ok_or_else(|| bad_path("the path query parameter is required".into()))?;
    let path = workspace_path(&raw).map_err(bad_path)?;
    Ok(file_response(
        state.service.clone(),
        caller.tenant,
        caller.sandbox,
        path,
        0,
        None,
    )
    .await?)
}

pub async fn upload(
    State(state): State<AppState>,
    caller: Result<EnvdCaller, E2bError>,
    Query(query): Query<FileQuery>,
    request: Request,
) -> Result<Json<Vec<EntryWritten>>, E2bError> {
    let caller = match caller {
        Ok(caller) => caller,
        Err(refused) => {
            drain(request).await;
            return Err(refused);
        }
    };
    let multipart = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("multipart/form-data"));
    let gzip = match upload_encoding(request.headers(), multipart) {
        Ok(gzip) => gzip,
        Err(refused) => {
            drain(request).await;
            return Err(refused);
        }
    };
    let mut files: Vec<(String, Bytes)> = Vec::new();
    if multipart {
        let mut form = Multipart::from_request(request, &state)
            .await
            .map_err(|e| E2bError::new(StatusCode::BAD_REQUEST, e.body_text()))?;
        while let Some(field) = form
            .next_field()
            .await
            .map_err(|e| E2bError::new(StatusCode::BAD_REQUEST, e.body_text()))?
        {
            // one file: `?path=` names it; several: each part's filename
            let name = match (&query.path, field.file_name()) {
                (Some(path), _) => path.clone(),
                (None, Some(name)) => name.to_owned(),
                (None, None) => {
                    return Err(bad_path(
                        "a part without a filename, and no path query parameter".into(),
                    ));
                }
            };
            let data = field
                .bytes()
                .await
                .map_err(|e| E2bError::new(StatusCode::BAD_REQUEST, e.body_text()))?;
            files.push((name, data));
        }
    } else {
        let path = query
            .path
            .clone()
            .ok_or_else(|| bad_path("the path query parameter is required".into()))?;
        let data = Bytes::from_request(request, &state)
            .await
            .map_err(|e| E2bError::new(StatusCode::PAYLOAD_TOO_LARGE, e.body_text()))?;
        let data = if gzip { gunzip(data).await? } else { data };
        files.push((path, data));
    }
    let mut written = Vec::with_capacity(files.len());
    for (raw, data) in files {
        let path = workspace_path(&raw).map_err(bad_path)?;
        state
            .service
            .write_file(
                &caller.tenant,
                &caller.sandbox,
                &path,
                &data,
                WriteOptions {
                    mode: None,
                    create_parents: true,
                },
            )
            .await?;
        let shown = e2b_path(&path.display());
        written.push(EntryWritten {
            name: shown.rsplit('/').next().unwrap_or_default().to_owned(),
            r#type: "file",
            path: shown,
        });
    }
    Ok(Json(written))
}

/// Whether an upload's body is gzip-encoded (`Content-Encoding: gzip`, what
/// the SDKs send for `write(..., gzip)`: an octet-stream body only); any
/// other encoding is refused rather than written as it came.
fn upload_encoding(headers: &HeaderMap, multipart: bool) -> Result<bool, E2bError> {
    let Some(encoding) = headers.get(header::CONTENT_ENCODING) else {
        return Ok(false);
    };
    let encoding = encoding.to_str().unwrap_or_default().trim();
    if encoding.eq_ignore_ascii_case("identity") {
        Ok(false)
    } else if encoding.eq_ignore_ascii_case("gzip") && !multipart {
        Ok(true)
    } else {
        Err(E2bError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "content encoding {encoding:?}: an octet-stream upload may be gzip, a multipart one identity only"
            ),
        ))
    }
}

/// The largest file a gzip upload inflates to: what one write carries.
const MAX_INFLATED: u64 = paddock_proto::MAX_PAYLOAD_LEN as u64;

/// A gzip body inflated (every member), off the async workers; refused
/// when it is not gzip or inflates past `MAX_INFLATED`.
async fn gunzip(data: Bytes) -> Result<Bytes, E2bError> {
    let inflate = move || {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&data[..])
            .take(MAX_INFLATED + 1)
            .read_to_end(&mut out)
            .map_err(|e| {
                E2bError::new(
                    StatusCode::BAD_REQUEST,
                    format!("the gzip-encoded body does not inflate: {e}"),
                )
            })?;
        if out.len() as u64 > MAX_INFLATED {
            return Err(E2bError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the gzip-encoded body inflates past {MAX_INFLATED} bytes"),
            ));
        }
        Ok(Bytes::from(out))
    };
    tokio::task::spawn_blocking(inflate).await.map_err(|_| {
        E2bError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "inflating the upload stopped",
        )
    })?
}
