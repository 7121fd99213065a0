//! envd's `filesystem.Filesystem` Connect service, its unary methods, on
//! the sandbox's file operations (workspace paths only, `super::paths`):
//!
//! - `Stat`: the entry; `not_found` when missing (the SDK's `exists` reads
//!   that as false).
//! - `ListDir`: the entries down to `depth` (0 counts as 1), `walk`.
//! - `MakeDir`: creates the directory and its parents; `already_exists`
//!   when it is a directory already (the SDK's `make_dir` answers false),
//!   `invalid_argument` when something else is there.
//! - `Move`: creates the destination's parents, renames, answers the
//!   destination's entry; `not_found` when the source is missing.
//! - `Remove`: files and whole trees; a missing path is no error (envd
//!   calls `os.RemoveAll`).
//!
//! - `CreateWatcher`, `GetWatcherEvents`, `RemoveWatcher`, `WatchDir`:
//!   served by polling the directory's listing (`watch`).
//!
//! A sandbox that is gone answers `unavailable` (`connect.rs`), which the
//! SDK reads as a sandbox no longer running.

mod entry;
mod walk;
mod watch;

pub use self::watch::{create_watcher, get_watcher_events, remove_watcher, watch_dir};

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use paddock_core::ids::TenantId;
use paddock_core::sandbox::SandboxId;
use paddock_proto::{DirEntry, ErrorCode, FileKind, FileStat, FsPath};

use self::entry::{LinkEnd, entry_info, link_destination};
use super::connect::{self, CallShape, Code, ConnectError, Message, single_request, unary};
use super::filesystem_pb::{
    EntryInfo, FILE_TYPE_DIRECTORY, ListDirRequest, ListDirResponse, MakeDirRequest,
    MakeDirResponse, MoveRequest, MoveResponse, RemoveRequest, RemoveResponse, StatRequest,
    StatResponse,
};
use super::paths::{e2b_path, workspace_path};
use crate::http::AppState;
use crate::http::e2b::auth::EnvdCaller;
use crate::http::e2b::error::E2bError;
use crate::service::SandboxService;

/// The most entries one ListDir answers.
pub const MAX_LIST_ENTRIES: usize = 10_000;
/// Symlinks followed, one after the other, to find what a link points at.
const MAX_LINK_HOPS: usize = 8;
/// How long a call may take when it does not say (`Connect-Timeout-Ms`),
/// and the most it may ask for.
const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
const MAX_CALL_TIMEOUT: Duration = Duration::from_secs(600);

pub async fn stat(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    serve(
        state,
        headers,
        body,
        |files, request: StatRequest| async move {
            let path = request_path(&request.path)?;
            Ok(StatResponse {
                entry: Some(files.entry(&path).await?),
            })
        },
    )
    .await
}

pub async fn list_dir(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    serve(
        state,
        headers,
        body,
        |files, request: ListDirRequest| async move {
            let root = request_path(&request.path)?;
            let depth = request.depth.max(1);
            let walked = walk::walk(&root, depth, MAX_LIST_ENTRIES, |dir| {
                let files = &files;
                async move { files.list(&dir).await }
            })
            .await?;
            let mut entries = Vec::with_capacity(walked.len());
            for found in walked {
                entries.push(files.describe(&found.path, &found.stat).await);
            }
            Ok(ListDirResponse { entries })
        },
    )
    .await
}

pub async fn make_dir(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    serve(
        state,
        headers,
        body,
        |files, request: MakeDirRequest| async move {
            let path = request_path(&request.path)?;
            match files.entry(&path).await {
                Ok(found) if found.r#type == FILE_TYPE_DIRECTORY => {
                    return Err(ConnectError::new(
                        Code::AlreadyExists,
                        format!("directory already exists: {}", found.path),
                    ));
                }
                Ok(found) => {
                    return Err(ConnectError::new(
                        Code::InvalidArgument,
                        format!(
                            "path already exists but it is not a directory: {}",
                            found.path
                        ),
                    ));
                }
                Err(e) if e.code == Code::NotFound => {}
                Err(e) => return Err(e),
            }
            files.make_dirs(&path).await?;
            Ok(MakeDirResponse {
                entry: Some(files.entry(&path).await?),
            })
        },
    )
    .await
}

/// `Move` (a Rust keyword, hence the underscore).
pub async fn move_(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    serve(
        state,
        headers,
        body,
        |files, request: MoveRequest| async move {
            let from = request_path(&request.source)?;
            let to = request_path(&request.destination)?;
            if let Some(parent) = parent(&to) {
                files.make_dirs(&parent).await?;
            }
            files
                .service
                .rename_file(&files.tenant, &files.sandbox, &from, &to)
                .await
                .map_err(|e| match e.guest_code() {
                    Some(ErrorCode::NotFound) => ConnectError::new(
                        Code::NotFound,
                        format!("source file not found: {}", e2b_path(&from.display())),
                    ),
                    _ => ConnectError::from(e),
                })?;
            Ok(MoveResponse {
                entry: Some(files.entry(&to).await?),
            })
        },
    )
    .await
}

pub async fn remove(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    serve(
        state,
        headers,
        body,
        |files, request: RemoveRequest| async move {
            let path = request_path(&request.path)?;
            match files
                .service
                .delete_file(&files.tenant, &files.sandbox, &path, true)
                .await
            {
                Ok(()) => Ok(RemoveResponse {}),
                Err(e) if e.guest_code() == Some(ErrorCode::NotFound) => Ok(RemoveResponse {}),
                Err(e) => Err(ConnectError::from(e)),
            }
        },
    )
    .await
}

/// One unary call: the caller checked, the request read, `op` run within
/// the call's deadline, the answer written in the request's codec.
async fn serve<Req, Resp, F, Fut>(
    state: AppState,
    headers: HeaderMap,
    body: Body,
    op: F,
) -> Response
where
    Req: Message,
    Resp: Message,
    F: FnOnce(Files, Req) -> Fut,
    Fut: Future<Output = Result<Resp, ConnectError>>,
{
    let shape = match CallShape::of(&headers) {
        Ok(shape) => shape,
        Err(e) => return e.into_response(),
    };
    let limit = connect::deadline(&headers)
        .unwrap_or(DEFAULT_CALL_TIMEOUT)
        .min(MAX_CALL_TIMEOUT);
    let call = async {
        let caller = EnvdCaller::from_headers(&headers, &state)
            .map_err(|refused| ConnectError::from(E2bError::from(refused)))?;
        let request = single_request(shape, body).await?;
        let files = Files {
            service: state.service.clone(),
            tenant: caller.tenant,
            sandbox: caller.sandbox,
        };
        op(files, request).await
    };
    let result = match tokio::time::timeout(limit, call).await {
        Ok(result) => result,
        Err(_) => Err(ConnectError::new(
            Code::DeadlineExceeded,
            format!("the call took longer than {} ms", limit.as_millis()),
        )),
    };
    unary(shape, result)
}

/// The workspace-relative path of a request's E2B path.
fn request_path(path: &str) -> Result<FsPath, ConnectError> {
    workspace_path(path).map_err(|why| ConnectError::new(Code::InvalidArgument, why))
}

/// The directory holding `path`, unless that is the workspace root.
fn parent(path: &FsPath) -> Option<FsPath> {
    let bytes = path.as_bytes();
    let cut = bytes.iter().rposition(|b| *b == b'/')?;
    Some(FsPath::from_bytes(&bytes[..cut])).filter(|p| !p.is_empty())
}

/// The sandbox's file operations for one call.
struct Files {
    service: Arc<SandboxService>,
    tenant: TenantId,
    sandbox: SandboxId,
}

impl Files {
    async fn stat(&self, path: &FsPath) -> Result<FileStat, ConnectError> {
        self.service
            .stat_file(&self.tenant, &self.sandbox, path)
            .await
            .map_err(ConnectError::from)
    }

    async fn list(&self, dir: &FsPath) -> Result<Vec<DirEntry>, ConnectError> {
        self.service
            .list_dir_entries(&self.tenant, &self.sandbox, dir)
            .await
            .map_err(ConnectError::from)
    }

    async fn make_dirs(&self, path: &FsPath) -> Result<(), ConnectError> {
        self.service
            .make_dir(&self.tenant, &self.sandbox, path, true)
            .await
            .map_err(ConnectError::from)
    }

    /// The entry at `path`.
    async fn entry(&self, path: &FsPath) -> Result<EntryInfo, ConnectError> {
        let stat = self.stat(path).await?;
        Ok(self.describe(path, &stat).await)
    }

    /// The entry of a stat, a symlink's target looked up.
    async fn describe(&self, path: &FsPath, stat: &FileStat) -> EntryInfo {
        let end = match stat.kind {
            FileKind::Symlink => self.follow(path, stat).await,
            _ => None,
        };
        entry_info(path, stat, end.as_ref())
    }

    /// Where the symlink at `path` leads, when that is in the workspace
    /// within [`MAX_LINK_HOPS`] links and exists.
    async fn follow(&self, path: &FsPath, stat: &FileStat) -> Option<LinkEnd> {
        let mut at = path.clone();
        let mut target = stat.link_target.clone()?;
        for _ in 0..MAX_LINK_HOPS {
            let next = link_destination(&at, &target)?;
            let found = self.stat(&next).await.ok()?;
            if found.kind != FileKind::Symlink {
                return Some(LinkEnd {
                    path: next,
                    stat: found,
                });
            }
            target = found.link_target?;
            at = next;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parent_is_named_unless_it_is_the_root() {
        assert_eq!(parent(&FsPath::from("a/b/c")), Some(FsPath::from("a/b")));
        assert_eq!(parent(&FsPath::from("c")), None);
        assert_eq!(parent(&FsPath::from("/c")), None);
    }
}
