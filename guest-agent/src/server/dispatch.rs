//! Routing each request to its handler.
//!
//! Requests run concurrently in their own tasks, except the few whose effect
//! must keep arrival order: stdin and port chunks are queued before the next frame is
//! read, and an `Exec` is registered before its `ExecStdin`/`ExecSignal` can
//! arrive.

use std::sync::Arc;

use paddock_proto::{ErrorCode, ErrorInfo, HostFrame, PROTOCOL_VERSION, Reply, Request};

use super::outbox::Outbox;
use crate::agent::Agent;
use crate::error::{Handled, bad_request};
use crate::exec::stdin::Ack;
use crate::snapshot::{export, import};
use crate::{exec, files, ports, processes};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Shutdown,
    /// Detached from this host (`Suspend`); the next must greet anew.
    Suspend,
}

const AGENT_VERSION: &str = env!("CARGO_PKG_VERSION");

#[derive(Debug)]
pub struct Session {
    agent: Arc<Agent>,
    outbox: Outbox,
    greeted: bool,
}

fn ok() -> Handled {
    Ok((Reply::Ok, Vec::new()))
}

impl Session {
    pub fn new(agent: Arc<Agent>, outbox: Outbox) -> Self {
        Self {
            agent,
            outbox,
            greeted: false,
        }
    }

    /// Whether this host's Hello was answered.
    pub fn greeted(&self) -> bool {
        self.greeted
    }

    pub async fn dispatch(&mut self, frame: HostFrame, payload: Vec<u8>) -> Flow {
        let HostFrame { id, request } = frame;
        tracing::debug!(id, op = request.name(), "request");
        if let Request::Hello { version } = request {
            let result = hello(version);
            self.greeted |= result.is_ok();
            self.outbox.finish(id, result).await;
            return Flow::Continue;
        }
        if !self.greeted {
            let error = bad_request("the first request must be hello");
            self.outbox.finish(id, Err(error)).await;
            return Flow::Continue;
        }
        let agent = &self.agent;
        let result = match request {
            // Answered above.
            Request::Hello { .. } => return Flow::Continue,
            Request::Shutdown => {
                self.outbox.finish(id, ok()).await;
                return Flow::Shutdown;
            }
            Request::Suspend => {
                let running = agent.execs.running();
                if running > 0 {
                    let error = ErrorInfo::new(
                        ErrorCode::Busy,
                        format!("{running} exec(s) still running; suspend waits for none"),
                    );
                    self.outbox.finish(id, Err(error)).await;
                    return Flow::Continue;
                }
                // What belongs to this connection ends as at a close.
                agent.imports.clear();
                agent.ports.clear();
                self.greeted = false;
                self.outbox.finish(id, ok()).await;
                return Flow::Suspend;
            }
            Request::Info => Ok((
                Reply::Info {
                    version: PROTOCOL_VERSION,
                    agent_version: AGENT_VERSION.to_string(),
                    enforcement: agent.enforcement.clone(),
                },
                Vec::new(),
            )),
            Request::Exec(spec) => {
                exec::start(agent, &self.outbox, id, spec, payload);
                return Flow::Continue;
            }
            Request::ExecStdin { target, eof } => {
                match agent.execs.stdin(target) {
                    Ok(feed) => self.acknowledge(id, feed.submit(payload, eof)),
                    Err(e) => self.outbox.finish(id, Err(e)).await,
                }
                return Flow::Continue;
            }
            Request::ExecSignal { target, signal } => {
                agent.execs.signal(target, signal).and_then(|()| ok())
            }
            // Unanswered by design: credit flows often and needs no reply.
            Request::StreamCredit { target, bytes } => {
                self.outbox.grant(target, bytes);
                return Flow::Continue;
            }
            Request::ProcessStart(spec) => processes::start(agent, spec, payload).await,
            Request::ProcessList => agent.processes.list(),
            Request::ProcessRead {
                handle,
                offset,
                max_bytes,
                wait_ms: None | Some(0),
            } => agent.processes.read(handle, offset, max_bytes),
            Request::ProcessRead {
                handle,
                offset,
                max_bytes,
                wait_ms: Some(wait_ms),
            } => {
                let agent = agent.clone();
                let outbox = self.outbox.clone();
                // Bounded: a follower asks again rather than parking forever.
                let wait_ms = wait_ms.min(MAX_READ_WAIT_MS);
                tokio::spawn(async move {
                    let result = agent
                        .processes
                        .read_waiting(handle, offset, max_bytes, wait_ms)
                        .await;
                    outbox.finish(id, result).await;
                });
                return Flow::Continue;
            }
            Request::ProcessResize { handle, size } => agent.processes.resize(handle, size),
            Request::ProcessWrite { handle, eof } => {
                match agent.processes.write(handle, payload, eof) {
                    Ok(ack) => self.acknowledge(id, ack),
                    Err(e) => self.outbox.finish(id, Err(e)).await,
                }
                return Flow::Continue;
            }
            Request::ProcessSignal { handle, signal } => agent.processes.signal(handle, signal),
            Request::ProcessWait { handle, timeout_ms } => {
                let agent = agent.clone();
                let outbox = self.outbox.clone();
                tokio::spawn(async move {
                    let result = agent.processes.wait(handle, timeout_ms).await;
                    outbox.finish(id, result).await;
                });
                return Flow::Continue;
            }
            Request::SnapshotExport {
                excludes,
                max_files,
                max_bytes,
            } => {
                let spec = export::ExportSpec {
                    excludes,
                    max_files,
                    max_bytes,
                };
                export::start(agent.workspace.root().to_path_buf(), &self.outbox, id, spec);
                return Flow::Continue;
            }
            Request::SnapshotImport {
                max_files,
                max_bytes,
            } => {
                let spec = import::ImportSpec {
                    max_files,
                    max_bytes,
                };
                import::start(agent, &self.outbox, id, spec, payload);
                return Flow::Continue;
            }
            Request::PortConnect {
                port,
                connect_timeout_ms,
                idle_timeout_ms,
            } => {
                let timeouts = ports::Timeouts::from_request(connect_timeout_ms, idle_timeout_ms);
                ports::start(&agent.ports, &self.outbox, id, port, timeouts);
                return Flow::Continue;
            }
            // Queued before the next frame is read, so bytes keep their order.
            Request::PortWrite { target, eof } => {
                match agent.ports.feed(target) {
                    Ok(feed) => self.acknowledge(id, feed.submit(payload, eof)),
                    Err(e) => self.outbox.finish(id, Err(e)).await,
                }
                return Flow::Continue;
            }
            Request::PortClose { target } => agent.ports.close(target),
            // Queued before the next frame is read, so chunks keep their order.
            Request::SnapshotChunk { target, eof } => {
                agent.imports.feed(target, payload, eof).await
            }
            file_request @ (Request::FileRead { .. }
            | Request::FileWrite { .. }
            | Request::FileList { .. }
            | Request::FileStat { .. }
            | Request::Mkdir { .. }
            | Request::Remove { .. }
            | Request::Rename { .. }
            | Request::Search(_)) => {
                self.file_request(id, file_request, payload);
                return Flow::Continue;
            }
        };
        self.outbox.finish(id, result).await;
        Flow::Continue
    }

    /// Replies once the stdin chunk is written (or failed).
    fn acknowledge(&self, id: u64, ack: Ack) {
        let outbox = self.outbox.clone();
        tokio::spawn(async move {
            let result = match ack.await {
                Ok(Ok(())) => ok(),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(crate::exec::stdin::closed()),
            };
            outbox.finish(id, result).await;
        });
    }

    /// File I/O blocks, so it runs on the blocking pool.
    fn file_request(&self, id: u64, request: Request, payload: Vec<u8>) {
        let agent = self.agent.clone();
        let outbox = self.outbox.clone();
        tokio::spawn(async move {
            let work = tokio::task::spawn_blocking(move || {
                files::handle(&agent.workspace, request, payload)
            });
            let result = match work.await {
                Ok(result) => result,
                Err(e) => Err(ErrorInfo::new(
                    ErrorCode::Io,
                    format!("file request failed: {e}"),
                )),
            };
            outbox.finish(id, result).await;
        });
    }
}

/// Longest a `ProcessRead` may wait for output.
const MAX_READ_WAIT_MS: u64 = 60_000;

fn hello(version: u32) -> Handled {
    if version != PROTOCOL_VERSION {
        return Err(ErrorInfo::new(
            ErrorCode::VersionMismatch,
            format!("this guest speaks protocol version {PROTOCOL_VERSION}, not {version}"),
        ));
    }
    Ok((
        Reply::Hello {
            version: PROTOCOL_VERSION,
            agent_version: AGENT_VERSION.to_string(),
        },
        Vec::new(),
    ))
}
