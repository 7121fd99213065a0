//! Background processes: started by one request, visible to later ones.
//! Their stdout and stderr are kept, in order and told apart, in a bounded
//! [`ring::OutputRing`].

pub mod ring;

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use paddock_proto::{
    ErrorCode, ErrorInfo, ExecSpec, ExitInfo, MAX_PAYLOAD_LEN, OutputStream, ProcessInfo, PtySize,
    Reply, StdinMode,
};
use tokio::sync::watch;

use self::ring::OutputRing;
use crate::agent::Agent;
use crate::error::{Handled, bad_request};
use crate::exec::command::{self, command_line};
use crate::exec::groups::{parse_signal, signal_group};
use crate::exec::stdin::{self, Ack, StdinFeed};
use crate::exec::supervise::{OutputSink, supervise};
use crate::exec::{limits, stdin_plumbing};

/// Output kept per process unless configured otherwise.
pub const DEFAULT_RING_BYTES: usize = 1 << 20;
/// Ended processes remembered (with their output) for late readers; older
/// ones are forgotten first. Running processes are always kept.
const KEEP_ENDED: usize = 32;

#[derive(Debug)]
pub struct ProcessTable {
    next_handle: AtomicU64,
    ring_bytes: usize,
    processes: Mutex<BTreeMap<u64, Arc<Process>>>,
}

#[derive(Debug)]
struct Process {
    handle: u64,
    pid: u32,
    command: Vec<String>,
    output: Mutex<OutputRing>,
    /// The output's end offset, for readers waiting on more.
    output_end: watch::Sender<u64>,
    stdin: Option<StdinFeed>,
    /// The terminal's master, when started on one (for resizing).
    pty: Option<OwnedFd>,
    /// None while running; the exit once the process ended and its output was drained.
    exit: watch::Sender<Option<ExitInfo>>,
}

fn unknown(handle: u64) -> ErrorInfo {
    ErrorInfo::new(
        ErrorCode::UnknownProcess,
        format!("no process with handle {handle}"),
    )
}

fn poisoned() -> ErrorInfo {
    ErrorInfo::new(ErrorCode::Io, "process table unavailable")
}

impl ProcessTable {
    pub fn new(ring_bytes: usize) -> Self {
        Self {
            next_handle: AtomicU64::new(1),
            ring_bytes,
            processes: Mutex::new(BTreeMap::new()),
        }
    }

    fn get(&self, handle: u64) -> Result<Arc<Process>, ErrorInfo> {
        let processes = self.processes.lock().map_err(|_| poisoned())?;
        processes
            .get(&handle)
            .cloned()
            .ok_or_else(|| unknown(handle))
    }

    /// Where a `ProcessWrite` goes; called in request order by the reader.
    pub fn write(&self, handle: u64, data: Vec<u8>, eof: bool) -> Result<Ack, ErrorInfo> {
        let process = self.get(handle)?;
        let feed = process.stdin.as_ref().ok_or_else(|| {
            bad_request(format!(
                "process {handle} was not started with streamed stdin"
            ))
        })?;
        Ok(feed.submit(data, eof))
    }

    pub fn list(&self) -> Handled {
        let processes = self.processes.lock().map_err(|_| poisoned())?;
        let processes = processes.values().map(|p| p.info()).collect();
        Ok((Reply::Processes { processes }, Vec::new()))
    }

    pub fn read(&self, handle: u64, offset: u64, max_bytes: u64) -> Handled {
        let process = self.get(handle)?;
        // Exit first: once it is set, the ring already holds all the output.
        let exit = process.exit.borrow().clone();
        let max = usize::try_from(max_bytes.min(u64::from(MAX_PAYLOAD_LEN))).unwrap_or(0);
        let slice = {
            let ring = process.output.lock().map_err(|_| poisoned())?;
            ring.read(offset, max).ok_or_else(|| {
                bad_request(format!(
                    "offset {offset} is past the end of process {handle}'s output ({})",
                    ring.end()
                ))
            })?
        };
        let reply = Reply::ProcessOutput {
            offset: slice.offset,
            next_offset: slice.offset + slice.data.len() as u64,
            dropped: slice.dropped,
            running: exit.is_none(),
            exit,
            stderr: slice.stderr,
        };
        Ok((reply, slice.data))
    }

    /// [`ProcessTable::read`], after waiting up to `wait_ms` for output past
    /// `offset` (or the exit) when there is none yet.
    pub async fn read_waiting(
        &self,
        handle: u64,
        offset: u64,
        max_bytes: u64,
        wait_ms: u64,
    ) -> Handled {
        let process = self.get(handle)?;
        let mut end = process.output_end.subscribe();
        let mut exit = process.exit.subscribe();
        let more = async {
            tokio::select! {
                _ = end.wait_for(|end| *end > offset) => {},
                _ = exit.wait_for(Option::is_some) => {},
            }
        };
        // Past the wait the answer is the same read, just empty.
        let _ = tokio::time::timeout(Duration::from_millis(wait_ms), more).await;
        self.read(handle, offset, max_bytes)
    }

    pub fn resize(&self, handle: u64, size: PtySize) -> Handled {
        let size = size.check().map_err(bad_request)?;
        let process = self.get(handle)?;
        let master = process.pty.as_ref().ok_or_else(|| {
            bad_request(format!(
                "process {handle} was not started on a pseudo-terminal"
            ))
        })?;
        paddock_jail::pty::resize(master, size.rows, size.cols).map_err(|e| {
            ErrorInfo::new(
                ErrorCode::Io,
                format!("resizing process {handle}'s terminal: {e}"),
            )
        })?;
        Ok((Reply::Ok, Vec::new()))
    }

    pub fn signal(&self, handle: u64, signal: i32) -> Handled {
        let signal = parse_signal(signal)?;
        let process = self.get(handle)?;
        signal_group(process.pgid(), signal)?;
        Ok((Reply::Ok, Vec::new()))
    }

    pub async fn wait(&self, handle: u64, timeout_ms: Option<u64>) -> Handled {
        let process = self.get(handle)?;
        let mut exit = process.exit.subscribe();
        let ended = exit.wait_for(Option::is_some);
        let exit = match timeout_ms {
            None => ended.await.ok().and_then(|e| e.clone()),
            Some(ms) => match tokio::time::timeout(Duration::from_millis(ms), ended).await {
                Ok(ended) => ended.ok().and_then(|e| e.clone()),
                Err(_) => None,
            },
        };
        Ok((
            Reply::ProcessStatus {
                running: exit.is_none(),
                exit,
            },
            Vec::new(),
        ))
    }
}

/// Spawns the process and a task that records its output and exit.
pub async fn start(agent: &Arc<Agent>, spec: ExecSpec, payload: Vec<u8>) -> Handled {
    let table = &agent.processes;
    // A terminal's input is typed as it goes.
    let stdin_mode = if spec.pty.is_some() {
        StdinMode::Stream
    } else {
        spec.stdin
    };
    let (feed, queue) = stdin_plumbing(stdin_mode, payload);
    let mut spawned = command::spawn(
        &spec,
        &agent.workspace,
        &agent.spawner,
        command::proxied(&agent.enforcement),
        &agent.egress_env,
    )
    .await?;
    let pid = spawned.pid;
    let handle = table.next_handle.fetch_add(1, Ordering::Relaxed);
    let process = Arc::new(Process {
        handle,
        pid,
        command: command_line(&spec),
        output: Mutex::new(OutputRing::new(table.ring_bytes)),
        output_end: watch::Sender::new(0),
        stdin: feed,
        pty: spawned.pty.take(),
        exit: watch::Sender::new(None),
    });
    agent.groups.insert(process.pgid());
    {
        let mut processes = table.processes.lock().map_err(|_| poisoned())?;
        forget_oldest_ended(&mut processes);
        processes.insert(handle, process.clone());
    }
    if let (Some(pipe), Some(queue)) = (spawned.stdin.take(), queue) {
        tokio::spawn(stdin::pump(pipe, queue));
    }
    let agent = agent.clone();
    let limits = limits(&spec);
    tracing::debug!(handle, pid, "background process started");
    tokio::spawn(async move {
        let mut sink = RingSink {
            process: process.clone(),
        };
        let exit = supervise(spawned, limits, &mut sink).await;
        tracing::debug!(handle, pid, ?exit, "background process ended");
        process.exit.send_replace(Some(exit));
        agent.groups.forget_if_empty(process.pgid());
    });
    Ok((Reply::ProcessStarted { handle, pid }, Vec::new()))
}

fn forget_oldest_ended(processes: &mut BTreeMap<u64, Arc<Process>>) {
    let ended: Vec<u64> = processes
        .iter()
        .filter(|(_, p)| p.exit.borrow().is_some())
        .map(|(handle, _)| *handle)
        .collect();
    // Handles grow with time, so the first ones are the oldest.
    for handle in ended
        .iter()
        .take(ended.len().saturating_sub(KEEP_ENDED - 1))
    {
        processes.remove(handle);
    }
}

impl Process {
    fn pgid(&self) -> i32 {
        i32::try_from(self.pid).unwrap_or(i32::MAX)
    }

    fn info(&self) -> ProcessInfo {
        let exit = self.exit.borrow().clone();
        ProcessInfo {
            handle: self.handle,
            pid: self.pid,
            command: self.command.clone(),
            running: exit.is_none(),
            exit,
            output_bytes: self.output.lock().map(|r| r.end()).unwrap_or(0),
            pty: self.pty.is_some(),
        }
    }
}

struct RingSink {
    process: Arc<Process>,
}

impl OutputSink for RingSink {
    async fn output(&mut self, stream: OutputStream, data: &[u8]) {
        if let Ok(mut ring) = self.process.output.lock() {
            ring.push_from(data, stream == OutputStream::Stderr);
            self.process.output_end.send_replace(ring.end());
        }
    }
}
