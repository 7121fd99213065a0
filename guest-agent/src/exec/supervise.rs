//! Watching one child to the end: stream its output to a sink (up to a cap),
//! enforce its timeout, and stop waiting for its pipes shortly after it exits.

use std::os::unix::process::ExitStatusExt;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use nix::sys::signal::Signal;
use paddock_proto::{ExitInfo, OutputStream};
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use tokio::time::{Instant, sleep_until};

use super::command::{OutputPipe, Spawned};
use super::groups::kill_group;

/// After the child exits, how long its pipes may stay quiet but open (held by
/// a grandchild left running) before the rest of its group is killed, and the
/// most this drain may take even while output keeps coming.
const DRAIN_QUIET: Duration = Duration::from_millis(250);
const DRAIN_MAX: Duration = Duration::from_secs(2);
/// After that kill, the same for a writer that left the group: past these,
/// the pipes are abandoned.
const FINAL_QUIET: Duration = Duration::from_secs(1);
const FINAL_MAX: Duration = Duration::from_secs(5);
const READ_CHUNK: usize = 64 * 1024;
/// After the child exits, how long the sink may take no output (its reader
/// stopped) before the pipes are abandoned and the output marked truncated.
/// Before the exit, a sink without room just holds the command back.
const STARVED_MAX: Duration = Duration::from_secs(60);
/// How far off a timer that is off is.
const NEVER: Duration = Duration::from_secs(86_400 * 365);

/// Where output goes.
pub trait OutputSink {
    fn output(&mut self, stream: OutputStream, data: &[u8]) -> impl Future<Output = ()> + Send;

    /// Bytes the sink takes now without waiting; None: no limit.
    fn room(&self) -> Option<usize> {
        None
    }

    /// Resolves once [`OutputSink::room`] is above zero.
    fn more_room(&self) -> impl Future<Output = ()> + Send {
        std::future::pending()
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    pub timeout: Option<Duration>,
    /// Most bytes of stdout+stderr passed to the sink.
    pub output_cap: Option<u64>,
}

pub async fn supervise<S: OutputSink>(spawned: Spawned, limits: Limits, sink: &mut S) -> ExitInfo {
    let Spawned {
        mut child,
        pid,
        mut stdout,
        mut stderr,
        started,
        ..
    } = spawned;
    let pgid = i32::try_from(pid).unwrap_or(i32::MAX);
    let mut capped = Capped {
        sink,
        left: limits.output_cap,
        truncated: false,
    };
    let mut out_buf = vec![0u8; READ_CHUNK];
    let mut err_buf = vec![0u8; READ_CHUNK];
    let (mut out_open, mut err_open) = (true, true);
    let deadline = limits.timeout.map(|t| started + t);
    // The instant of a timer that is off: computed once, not read from the
    // clock for each disabled branch at each turn of the loop (select!
    // evaluates every branch's future; under gVisor's ptrace platform each
    // clock read is a trapped system call).
    let never = started + NEVER;
    let mut timed_out = false;
    let mut status: Option<Option<std::process::ExitStatus>> = None;
    // After the child exits: when the pipes stay quiet (or the drain runs too
    // long), the group is killed; the second time, the pipes are abandoned.
    // Killing loses nothing: bytes already in a pipe stay readable.
    let mut drain: Option<Drain> = None;
    // Since when the sink has had no room (pipes left unread meanwhile).
    let mut starved_since: Option<Instant> = None;

    while status.is_none() || out_open || err_open {
        let room = capped.sink.room();
        let can_read = room.is_none_or(|room| room > 0);
        let limit = room.map_or(READ_CHUNK, |room| room.min(READ_CHUNK));
        if can_read {
            starved_since = None;
        } else if starved_since.is_none() {
            starved_since = Some(Instant::now());
        }
        tokio::select! {
            // Timers and the exit before output, so endless output can starve
            // none of them.
            biased;
            () = sleep_until(far(deadline, never)), if deadline.is_some() && !timed_out && status.is_none() => {
                kill_group(pgid, Signal::SIGKILL);
                timed_out = true;
            },
            waited = child.wait(), if status.is_none() => {
                if let Err(e) = &waited {
                    tracing::warn!(pid, error = %e, "waiting for child failed");
                }
                status = Some(waited.ok());
                // Output usually ends with the command: what its pipes hold
                // now, their ends included, is read at once, and the drain
                // (a timer, and registering one wakes the runtime once more:
                // a trapped call or three under gVisor) starts only for a
                // pipe still open after that.
                if out_open {
                    out_open = read_ready(&mut stdout, &mut out_buf, OutputStream::Stdout, &mut capped).await;
                }
                if err_open {
                    err_open = read_ready(&mut stderr, &mut err_buf, OutputStream::Stderr, &mut capped).await;
                }
                drain = (out_open || err_open).then(|| Drain::start(DRAIN_QUIET, DRAIN_MAX));
            },
            // Flow control: the sink's reader is behind, so the pipes are not
            // read (the command blocks writing) until it catches up.
            () = capped.sink.more_room(), if !can_read => {
                if let Some(drain) = drain.as_mut() { drain.activity(); }
            },
            () = sleep_until(far(starved_since.map(|at| at + STARVED_MAX), never)), if !can_read && status.is_some() => {
                tracing::debug!(pid, "output reader stalled after exit; abandoning the pipes");
                kill_group(pgid, Signal::SIGKILL);
                capped.truncated = true;
                break;
            },
            // A starved sink is not quiet pipes: the drain waits for it.
            () = sleep_until(far(drain.as_ref().map(Drain::due), never)), if drain.is_some() && can_read => {
                if drain.as_ref().is_some_and(|d| d.final_phase) {
                    tracing::debug!(pid, "pipes held open outside the group; abandoning them");
                    break;
                }
                tracing::debug!(pid, "pipes still open after exit; killing the group");
                kill_group(pgid, Signal::SIGKILL);
                drain = Some(Drain { final_phase: true, ..Drain::start(FINAL_QUIET, FINAL_MAX) });
            },
            read = stdout.read(&mut out_buf[..limit]), if out_open && can_read => {
                match read {
                    // Only output counts as activity (each clock read is a
                    // trapped call under gVisor): an end of file closes the pipe.
                    Ok(n) if n > 0 => {
                        capped.output(OutputStream::Stdout, &out_buf[..n]).await;
                        if let Some(drain) = drain.as_mut() { drain.activity(); }
                    }
                    _ => out_open = false,
                }
            },
            read = stderr.read(&mut err_buf[..limit]), if err_open && can_read => {
                match read {
                    // Only output counts as activity (each clock read is a
                    // trapped call under gVisor): an end of file closes the pipe.
                    Ok(n) if n > 0 => {
                        capped.output(OutputStream::Stderr, &err_buf[..n]).await;
                        if let Some(drain) = drain.as_mut() { drain.activity(); }
                    }
                    _ => err_open = false,
                }
            },
        }
    }

    let status = status.flatten();
    ExitInfo {
        code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        timed_out,
        truncated: capped.truncated,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        // The host tells, from the sandbox's memory cgroup.
        oom_killed: false,
    }
}

/// Reads `pipe` for as long as it has bytes ready and the sink has room,
/// without waiting; false once it reached its end (or failed).
async fn read_ready<S: OutputSink>(
    pipe: &mut OutputPipe,
    buf: &mut [u8],
    stream: OutputStream,
    capped: &mut Capped<'_, S>,
) -> bool {
    loop {
        let limit = match capped.sink.room() {
            Some(0) => return true,
            Some(room) => room.min(buf.len()),
            None => buf.len(),
        };
        let polled = {
            let mut read = ReadBuf::new(&mut buf[..limit]);
            // Polled once with a waker that wakes nothing: the loop's own
            // read registers the real one if the pipe is not ready now.
            let mut cx = Context::from_waker(Waker::noop());
            Pin::new(&mut *pipe)
                .poll_read(&mut cx, &mut read)
                .map_ok(|()| read.filled().len())
        };
        match polled {
            Poll::Pending => return true,
            Poll::Ready(Ok(0) | Err(_)) => return false,
            Poll::Ready(Ok(n)) => capped.output(stream, &buf[..n]).await,
        }
    }
}

/// One phase of draining the pipes after the child exited.
#[derive(Debug)]
struct Drain {
    quiet: Duration,
    /// Hard end of the phase, however busy the pipes are.
    end: Instant,
    /// End of the phase if the pipes stay quiet from now on.
    quiet_end: Instant,
    final_phase: bool,
}

impl Drain {
    fn start(quiet: Duration, max: Duration) -> Self {
        let now = Instant::now();
        Self {
            quiet,
            end: now + max,
            quiet_end: now + quiet,
            final_phase: false,
        }
    }

    fn activity(&mut self) {
        self.quiet_end = Instant::now() + self.quiet;
    }

    fn due(&self) -> Instant {
        self.quiet_end.min(self.end)
    }
}

fn far(at: Option<Instant>, never: Instant) -> Instant {
    at.unwrap_or(never)
}

/// Passes output through until the cap, then only notes that some was dropped.
struct Capped<'a, S> {
    sink: &'a mut S,
    left: Option<u64>,
    truncated: bool,
}

impl<S: OutputSink> Capped<'_, S> {
    async fn output(&mut self, stream: OutputStream, data: &[u8]) {
        let allowed = match self.left {
            None => data.len(),
            Some(left) => usize::try_from(left).unwrap_or(usize::MAX).min(data.len()),
        };
        if allowed < data.len() {
            self.truncated = true;
        }
        if let Some(left) = self.left.as_mut() {
            *left -= allowed as u64;
        }
        if allowed > 0 {
            self.sink.output(stream, &data[..allowed]).await;
        }
    }
}
