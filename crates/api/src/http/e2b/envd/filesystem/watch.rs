//! envd's watch methods, served by polling: the guest agent reports no file
//! events (there is no inotify behind them), so a watcher keeps a snapshot
//! of the watched directory (its own entries, or with `recursive` its whole
//! tree, at most [`MAX_LIST_ENTRIES`](super::MAX_LIST_ENTRIES) entries like ListDir: a bigger tree
//! is refused with `resource_exhausted`) and each poll lists it again and
//! reports the difference (`diff`): a new name `CREATE`, a changed size or
//! mtime `WRITE`, a changed mode `CHMOD`, a gone name `REMOVE`. The event's
//! `name` is the path relative to the watched directory (`a.txt`,
//! `sub/b.txt`), as envd's `filepath.Rel` gives it; with `include_entry`
//! the entry rides along on every event but a removal, as envd does.
//!
//! What polling cannot see, unlike inotify:
//! - a rename shows as `REMOVE` of the old name and `CREATE` of the new one
//!   (never `RENAME`);
//! - the changes between two polls are coalesced: one `CREATE` for a file
//!   made and written, one `WRITE` for any number of writes;
//! - a file created and removed between two polls is not seen at all, nor
//!   a write that leaves the size and the millisecond mtime as they were.
//!
//! When the watched directory itself goes, its entries are reported
//! removed, then `REMOVE` of `.`, and the watcher goes quiet for good (an
//! inotify watch ends with its directory too).
//!
//! - `CreateWatcher`: the first listing; answers the watcher's id, random
//!   and unguessable. The watcher is kept in [`WATCHERS`], bound to the
//!   calling sandbox and tenant (another's id is `not_found`), at most
//!   [`MAX_WATCHERS_PER_SANDBOX`] per sandbox and [`MAX_WATCHERS`] in all
//!   (`resource_exhausted` beyond), dropped after [`WATCHER_IDLE`] without
//!   a read and when a poll finds its sandbox gone (stopped or lost; a
//!   paused one keeps them).
//! - `GetWatcherEvents`: polls, answers the events since the last call
//!   (at most [`MAX_PENDING`]: past that the oldest are dropped, with a
//!   warning in the log).
//! - `RemoveWatcher`: drops it.
//! - `WatchDir`: a server stream: a start event, then the events of a poll
//!   every [`POLL_INTERVAL`], a keepalive whenever nothing was sent for the
//!   client's `Keepalive-Ping-Interval` (seconds, envd's default 90); it
//!   ends with `deadline_exceeded` at the call's `Connect-Timeout-Ms`, or
//!   when the client goes, and counts as one of the tenant's open streams.
//!
//! A missing path is `not_found`; a path that is neither a directory nor a
//! symlink to one is `invalid_argument`, as envd answers.

mod diff;
mod poll;
mod registry;
mod stream;

use std::io::Read as _;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use tokio::time::Instant;

use self::poll::Watch;
use self::registry::{Limits, Owner, Registry};
use super::super::connect::{CallShape, Code, ConnectError, streaming};
use super::super::filesystem_pb::watch::{
    CreateWatcherRequest, CreateWatcherResponse, GetWatcherEventsRequest, GetWatcherEventsResponse,
    RemoveWatcherRequest, RemoveWatcherResponse, WatchDirResponse,
};
use super::{Files, serve};
use crate::http::AppState;

/// Watchers one sandbox may hold at once.
pub const MAX_WATCHERS_PER_SANDBOX: usize = 64;
/// Watchers the server holds at once, over every sandbox.
pub const MAX_WATCHERS: usize = 1_024;
/// How long a watcher is kept without a `GetWatcherEvents` call.
pub const WATCHER_IDLE: Duration = Duration::from_secs(600);
/// Events a watcher keeps for its next read.
pub const MAX_PENDING: usize = 10_000;
/// How often `WatchDir` lists the directory again.
pub const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// The longest `WatchDir` may take to read its request and list first.
const OPEN_LIMIT: Duration = Duration::from_secs(60);

/// The watchers of `CreateWatcher`, which outlive its call. A static rather
/// than a field of `AppState`: they are state of the E2B envd façade alone,
/// which no other part of the server reads, so they stay here rather than
/// widen the server's shared state; like envd's own watcher map they are
/// process wide. Every entry carries its owner (tenant and sandbox), so
/// servers sharing one process (tests) never see each other's, and the
/// registry is bounded and swept on every call, so nothing grows unless a
/// caller keeps it.
static WATCHERS: LazyLock<Registry<tokio::sync::Mutex<Watch>>> = LazyLock::new(|| {
    Registry::new(Limits {
        per_sandbox: MAX_WATCHERS_PER_SANDBOX,
        total: MAX_WATCHERS,
        idle: WATCHER_IDLE,
    })
});

pub async fn create_watcher(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    serve(
        state,
        headers,
        body,
        |files, request: CreateWatcherRequest| async move {
            let owner = owner_of(&files);
            WATCHERS.room_for(&owner, now())?;
            let watch = Watch::open(&files, &request).await?;
            let watcher_id = watcher_id().await?;
            let watch = Arc::new(tokio::sync::Mutex::new(watch));
            WATCHERS.insert(watcher_id.clone(), owner, watch, now())?;
            Ok(CreateWatcherResponse { watcher_id })
        },
    )
    .await
}

pub async fn get_watcher_events(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    serve(
        state,
        headers,
        body,
        |files, request: GetWatcherEventsRequest| async move {
            let owner = owner_of(&files);
            let watch = WATCHERS.read(&request.watcher_id, &owner, now())?;
            let mut watch = watch.lock().await;
            watch.poll(&files).await.map_err(|e| e.forgetting(&owner))?;
            Ok(GetWatcherEventsResponse {
                events: watch.pending.drain(..).collect(),
            })
        },
    )
    .await
}

pub async fn remove_watcher(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    serve(
        state,
        headers,
        body,
        |files, request: RemoveWatcherRequest| async move {
            WATCHERS.remove(&request.watcher_id, &owner_of(&files), now())?;
            Ok(RemoveWatcherResponse {})
        },
    )
    .await
}

/// `WatchDir`: the events of the directory, streamed as they are found.
pub async fn watch_dir(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let opened =
        tokio::time::timeout(OPEN_LIMIT, stream::open_stream(&state, &headers, body)).await;
    let refused = match opened {
        Ok(Ok(response)) => return response,
        Ok(Err(err)) => err,
        Err(_) => ConnectError::new(
            Code::DeadlineExceeded,
            format!(
                "opening the watch took longer than {} s",
                OPEN_LIMIT.as_secs()
            ),
        ),
    };
    match CallShape::of(&headers) {
        Ok(shape) if shape.streaming => {
            streaming::<WatchDirResponse, _>(shape, futures_util::stream::iter([Err(refused)]))
        }
        _ => refused.into_response(),
    }
}

fn now() -> Instant {
    Instant::now()
}

fn owner_of(files: &Files) -> Owner {
    Owner {
        tenant: files.tenant.clone(),
        sandbox: files.sandbox.clone(),
    }
}

/// A fresh watcher id: `w` (as envd's) and 128 random bits in hex.
async fn watcher_id() -> Result<String, ConnectError> {
    let drawn = tokio::task::spawn_blocking(|| {
        let mut bytes = [0u8; 16];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map(|()| bytes)
    })
    .await;
    match drawn {
        Ok(Ok(bytes)) => Ok(std::iter::once("w".to_owned())
            .chain(bytes.iter().map(|b| format!("{b:02x}")))
            .collect()),
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "drawing a watcher id from /dev/urandom");
            Err(ConnectError::new(Code::Internal, "drawing a watcher id"))
        }
        Err(err) => {
            tracing::warn!(error = %err, "drawing a watcher id: the task failed");
            Err(ConnectError::new(Code::Internal, "drawing a watcher id"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn watcher_ids_are_random_and_look_like_envds() {
        let first = watcher_id().await.unwrap();
        let second = watcher_id().await.unwrap();
        assert_ne!(first, second);
        assert_eq!(first.len(), 33);
        assert!(first.starts_with('w'));
        assert!(first[1..].bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
