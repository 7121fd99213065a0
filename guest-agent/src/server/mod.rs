//! Serving the one host connection: a reader loop that decodes frames and
//! dispatches them, and a single writer ([`outbox::Outbox`]).

pub mod credit;
mod dispatch;
pub mod outbox;

use std::sync::Arc;
use std::time::Duration;

use paddock_proto::{FrameReader, HostFrame, SUSPEND_RECONNECT, error_chain};
use tokio::io::{AsyncRead, AsyncWrite, BufReader};

use self::dispatch::{Flow, Session};
use self::outbox::Outbox;
use crate::agent::Agent;
use crate::error::bad_request;

/// Bytes read from the connection at once. A frame's prefix, header and a
/// small payload arrive in one read instead of one read each (reads larger
/// than this, a big payload's, bypass the buffer).
const READ_BUFFER: usize = 64 << 10;

/// How long queued frames get to reach the host when the guest shuts down.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);
/// How often a suspended guest whose transport ended looks for a new host.
const RECONNECT_POLL: Duration = Duration::from_millis(50);

/// Serves until the host closes the connection, sends `Shutdown`, or sends a
/// frame that cannot even be attributed to a request. Then kills every
/// process group it started. After `Suspend` an end of stream is waited
/// out (up to [`SUSPEND_RECONNECT`]) for the next host on the same
/// transport (a restored microVM's new QEMU behind the same port).
pub async fn serve<R, W>(agent: Arc<Agent>, reader: R, writer: W)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (outbox, mut writer_stopped) = Outbox::start(writer);
    let mut frames = FrameReader::new(BufReader::with_capacity(READ_BUFFER, reader));
    let mut session = Session::new(agent.clone(), outbox.clone());
    // Between `Suspend` and the next host's Hello; the second: since when
    // the transport has been at its end meanwhile.
    let mut suspended = false;
    let mut detached_since: Option<tokio::time::Instant> = None;
    loop {
        let read = tokio::select! {
            read = frames.read_frame() => read,
            _ = &mut writer_stopped => {
                tracing::info!("connection lost while writing");
                break;
            }
        };
        let raw = match read {
            Ok(Some(raw)) => raw,
            Ok(None) if suspended => {
                let since = *detached_since.get_or_insert_with(tokio::time::Instant::now);
                if since.elapsed() >= SUSPEND_RECONNECT {
                    tracing::warn!(
                        waited_s = SUSPEND_RECONNECT.as_secs(),
                        "no new host after suspend"
                    );
                    break;
                }
                tokio::time::sleep(RECONNECT_POLL).await;
                continue;
            }
            Ok(None) => {
                tracing::info!("host closed the connection");
                break;
            }
            Err(e) => {
                // The stream is out of step (or gone): no later frame can be trusted.
                tracing::warn!(error = %error_chain(&e), "unreadable frame; closing the connection");
                break;
            }
        };
        let frame: HostFrame = match raw.decode() {
            Ok(frame) => frame,
            Err(e) => match request_id(&raw.header) {
                Some(id) => {
                    let error = bad_request(format!("malformed request: {}", error_chain(&e)));
                    outbox.finish(id, Err(error)).await;
                    continue;
                }
                None => {
                    tracing::warn!(error = %error_chain(&e), "frame without a request id; closing the connection");
                    break;
                }
            },
        };
        detached_since = None;
        match session.dispatch(frame, raw.payload).await {
            Flow::Shutdown => {
                tracing::info!("shutdown requested");
                break;
            }
            Flow::Suspend => {
                tracing::info!("suspended: waiting for a new host");
                suspended = true;
            }
            Flow::Continue => suspended &= !session.greeted(),
        }
    }
    agent.imports.clear();
    agent.ports.clear();
    agent.groups.kill_all();
    if tokio::time::timeout(FLUSH_TIMEOUT, outbox.flush())
        .await
        .is_err()
    {
        tracing::warn!("host did not take the last frames");
    }
}

/// The id of a request whose header is JSON but not a valid request.
fn request_id(header: &[u8]) -> Option<u64> {
    serde_json::from_slice::<serde_json::Value>(header)
        .ok()?
        .get("id")?
        .as_u64()
}
