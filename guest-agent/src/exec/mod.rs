//! `Exec`: run a command to completion, streaming its output as events.

pub mod child;
pub mod command;
pub mod groups;
pub mod pty;
pub mod spawner;
pub mod stdin;
pub mod supervise;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use paddock_proto::{ErrorCode, ErrorInfo, Event, ExecSpec, OutputStream, Reply, StdinMode};

use self::groups::{parse_signal, signal_group};
use self::stdin::{StdinFeed, StdinQueue};
use self::supervise::{Limits, OutputSink, supervise};
use crate::agent::Agent;
use crate::error::{Handled, bad_request};
use crate::server::credit::Credit;
use crate::server::outbox::Outbox;

pub fn limits(spec: &ExecSpec) -> Limits {
    Limits {
        timeout: spec.timeout_ms.map(Duration::from_millis),
        output_cap: spec.output_cap,
    }
}

/// Stdin plumbing for a new child: the feed later requests write to (only
/// when streamed) and the queue its pump reads.
pub fn stdin_plumbing(
    mode: StdinMode,
    payload: Vec<u8>,
) -> (Option<StdinFeed>, Option<StdinQueue>) {
    match mode {
        StdinMode::Null => (None, None),
        StdinMode::Payload => {
            let (feed, queue) = stdin::channel();
            // The ack is not awaited: the payload is written while the command runs.
            drop(feed.submit(payload, true));
            (None, Some(queue))
        }
        StdinMode::Stream => {
            let (feed, queue) = stdin::channel();
            (Some(feed), Some(queue))
        }
    }
}

/// Execs in flight, by request id, for `ExecStdin` and `ExecSignal`.
#[derive(Debug, Default)]
pub struct ExecRegistry {
    running: Mutex<HashMap<u64, ExecEntry>>,
}

#[derive(Debug, Default)]
struct ExecEntry {
    pgid: Option<i32>,
    stdin: Option<StdinFeed>,
}

fn unknown(target: u64) -> ErrorInfo {
    ErrorInfo::new(
        ErrorCode::UnknownProcess,
        format!("no exec with request id {target} is running"),
    )
}

fn poisoned() -> ErrorInfo {
    ErrorInfo::new(ErrorCode::Io, "exec registry unavailable")
}

impl ExecRegistry {
    /// How many execs are in flight.
    pub fn running(&self) -> usize {
        match self.running.lock() {
            Ok(running) => running.len(),
            Err(poisoned) => poisoned.into_inner().len(),
        }
    }

    /// False when `id` is already in flight.
    fn register(&self, id: u64, stdin: Option<StdinFeed>) -> bool {
        let Ok(mut running) = self.running.lock() else {
            return false;
        };
        if running.contains_key(&id) {
            return false;
        }
        running.insert(id, ExecEntry { pgid: None, stdin });
        true
    }

    fn set_pgid(&self, id: u64, pgid: i32) {
        if let Ok(mut running) = self.running.lock()
            && let Some(entry) = running.get_mut(&id)
        {
            entry.pgid = Some(pgid);
        }
    }

    fn remove(&self, id: u64) {
        if let Ok(mut running) = self.running.lock() {
            running.remove(&id);
        }
    }

    /// Where an `ExecStdin` for `target` goes.
    pub fn stdin(&self, target: u64) -> Result<StdinFeed, ErrorInfo> {
        let running = self.running.lock().map_err(|_| poisoned())?;
        let entry = running.get(&target).ok_or_else(|| unknown(target))?;
        entry.stdin.clone().ok_or_else(|| {
            bad_request(format!("exec {target} was not started with streamed stdin"))
        })
    }

    pub fn signal(&self, target: u64, signal: i32) -> Result<(), ErrorInfo> {
        let signal = parse_signal(signal)?;
        let pgid = {
            let running = self.running.lock().map_err(|_| poisoned())?;
            let entry = running.get(&target).ok_or_else(|| unknown(target))?;
            entry
                .pgid
                .ok_or_else(|| bad_request(format!("exec {target} has not started yet")))?
        };
        signal_group(pgid, signal)
    }
}

/// Registers the exec at once (so `ExecStdin`/`ExecSignal` sent right after
/// it find it) and runs it in its own task.
pub fn start(agent: &Arc<Agent>, outbox: &Outbox, id: u64, spec: ExecSpec, payload: Vec<u8>) {
    let (feed, queue) = stdin_plumbing(spec.stdin, payload);
    let agent = agent.clone();
    let outbox = outbox.clone();
    if !agent.execs.register(id, feed) {
        tokio::spawn(async move {
            let error = bad_request(format!("request id {id} is already in use"));
            outbox.finish(id, Err(error)).await;
        });
        return;
    }
    tokio::spawn(async move {
        let result = run(&agent, &outbox, id, &spec, queue).await;
        agent.execs.remove(id);
        outbox.finish(id, result).await;
    });
}

async fn run(
    agent: &Agent,
    outbox: &Outbox,
    id: u64,
    spec: &ExecSpec,
    queue: Option<StdinQueue>,
) -> Handled {
    if spec.pty.is_some() {
        return Err(bad_request(
            "a pseudo-terminal is for background processes (process_start), not exec",
        ));
    }
    let mut spawned = command::spawn(
        spec,
        &agent.workspace,
        &agent.spawner,
        command::proxied(&agent.enforcement),
        &agent.egress_env,
    )
    .await?;
    let pid = spawned.pid;
    let pgid = i32::try_from(pid).unwrap_or(i32::MAX);
    agent.groups.insert(pgid);
    agent.execs.set_pgid(id, pgid);
    tracing::debug!(id, pid, "exec started");
    outbox.event(id, Event::Started { pid }, Vec::new()).await;
    if let (Some(pipe), Some(queue)) = (spawned.stdin.take(), queue) {
        tokio::spawn(stdin::pump(pipe, queue));
    }
    let mut sink = EventSink {
        outbox,
        id,
        credit: outbox.credit(id),
    };
    let exit = supervise(spawned, limits(spec), &mut sink).await;
    agent.groups.forget_if_empty(pgid);
    tracing::debug!(id, pid, ?exit, "exec finished");
    Ok((Reply::Exited(exit), Vec::new()))
}

/// Sends output as `Output` events of the exec's request, as far as the
/// host's credit for it goes.
struct EventSink<'a> {
    outbox: &'a Outbox,
    id: u64,
    credit: Arc<Credit>,
}

impl OutputSink for EventSink<'_> {
    async fn output(&mut self, stream: OutputStream, data: &[u8]) {
        self.outbox
            .event(self.id, Event::Output { stream }, data.to_vec())
            .await;
    }

    fn room(&self) -> Option<usize> {
        Some(usize::try_from(self.credit.left()).unwrap_or(usize::MAX))
    }

    fn more_room(&self) -> impl Future<Output = ()> + Send {
        self.credit.available()
    }
}
