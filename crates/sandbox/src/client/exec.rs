//! A running exec: its events, in order, ending with the exit.

use std::sync::atomic::Ordering;

use async_trait::async_trait;
use paddock_core::sandbox::{ExecEvent, Execution, GuestError};
use paddock_proto::{Event, ExitInfo, GuestMessage, OutputStream, Reply, Request};

use super::{Call, GuestClient, ops};

/// Kills the command's process group when dropped before it exited, so an
/// abandoned (cancelled) exec never keeps running in the sandbox.
#[derive(Debug)]
pub struct ExecStream {
    id: u64,
    /// None once the final frame (or an error) was returned.
    call: Option<Call>,
    client: GuestClient,
    /// Some output was dropped (the reader fell behind): the exit says truncated.
    dropped_any: bool,
    /// The exit, held back one event for a last drop marker.
    pending_exit: Option<ExitInfo>,
    /// The sandbox's OOM kills when the exec was sent (None: unknown).
    oom_before: Option<u64>,
}

/// What a reader sees in place of output dropped because it fell behind.
fn dropped_marker(bytes: u64) -> Vec<u8> {
    format!("\n[paddock: {bytes} bytes of output dropped: the reader fell behind]\n").into_bytes()
}

impl ExecStream {
    pub(super) fn new(call: Call, client: GuestClient, oom_before: Option<u64>) -> Self {
        Self {
            id: call.id,
            call: Some(call),
            client,
            dropped_any: false,
            pending_exit: None,
            oom_before,
        }
    }

    /// An exit by SIGKILL (or a shell's 137 for a child killed so) while the
    /// sandbox's OOM-kill counter rose was the out-of-memory killer's. The
    /// kernel counts the kill before it signals the victim, so the count is
    /// up by the time the exit arrives. Another command of the sandbox
    /// killed by the OOM killer at the same time as this one is killed by
    /// a plain SIGKILL would be mistaken for it: rare, and said in the docs.
    async fn mark_oom(&self, exit: &mut ExitInfo) {
        let killed = exit.signal == Some(libc::SIGKILL) || exit.code == Some(128 + libc::SIGKILL);
        if let (true, Some(before)) = (killed, self.oom_before)
            && self
                .client
                .oom_kills()
                .await
                .is_some_and(|now| now > before)
        {
            exit.oom_killed = true;
        }
    }
}

#[async_trait]
impl Execution for ExecStream {
    fn id(&self) -> u64 {
        self.id
    }

    async fn next_event(&mut self) -> Result<Option<ExecEvent>, GuestError> {
        if let Some(exit) = self.pending_exit.take() {
            self.call = None;
            return Ok(Some(ExecEvent::Exited(exit)));
        }
        let Some(call) = self.call.as_mut() else {
            return Ok(None);
        };
        let dropped = call.stream.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            self.dropped_any = true;
            return Ok(Some(ExecEvent::Output {
                stream: OutputStream::Stderr,
                data: dropped_marker(dropped),
            }));
        }
        let op = call.op;
        let next = call.next().await;
        let event = match next {
            Ok((GuestMessage::Event(Event::Started { pid }), _)) => {
                return Ok(Some(ExecEvent::Started { pid }));
            }
            Ok((GuestMessage::Event(Event::Output { stream }), data)) => {
                return Ok(Some(ExecEvent::Output { stream, data }));
            }
            // Not an exec event; a well-behaved guest never sends it here.
            Ok((GuestMessage::Event(other), _)) => {
                return Err(GuestError::UnexpectedReply {
                    op,
                    got: format!("{other:?}"),
                });
            }
            Ok((GuestMessage::Reply(Reply::Exited(mut exit)), _)) => {
                // Output dropped just before the exit still gets its marker.
                let dropped = call.stream.dropped.swap(0, Ordering::Relaxed);
                if dropped > 0 || self.dropped_any {
                    exit.truncated = true;
                }
                self.mark_oom(&mut exit).await;
                if dropped > 0 {
                    self.pending_exit = Some(exit);
                    return Ok(Some(ExecEvent::Output {
                        stream: OutputStream::Stderr,
                        data: dropped_marker(dropped),
                    }));
                }
                Ok(Some(ExecEvent::Exited(exit)))
            }
            Ok((GuestMessage::Reply(other), _)) => Err(ops::unexpected(op, &other)),
            Ok((GuestMessage::Error(error), _)) => Err(GuestError::Refused { op, error }),
            Err(err) => Err(err),
        };
        self.call = None;
        event
    }
}

impl Drop for ExecStream {
    fn drop(&mut self) {
        if self.call.is_some() && self.pending_exit.is_none() {
            self.client.send_detached(Request::ExecSignal {
                target: self.id,
                signal: libc::SIGKILL,
            });
        }
    }
}
