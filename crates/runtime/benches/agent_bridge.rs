//! What bridging an agent CLI's output into a run's events costs.
//!
//! An [`ExternalDriver`] (Claude Code's) runs a replay script in a real
//! native sandbox instead of the CLI: it prints a synthesized stream-json
//! transcript of TURNS tool-call turns (assistant text, assistant `Bash`
//! tool_use, user tool_result; then a final text and the `result` line),
//! a line every PACE_MS, and logs each line's wall-clock emission time
//! (bash's `$EPOCHREALTIME`) to a file in the workspace. The session's
//! events are read live ([`Runtime::event_stream`]) and stamped as they
//! arrive: a bridged event's latency is its arrival less the emission of
//! the line it came from (tool_use line: `tool.call`, tool_result line:
//! `tool.result`, text line: `model.message`).
//!
//! Beside it, the transport without the bridge: the same script run
//! through the sandbox's plain `GuestOps::exec` (a sandbox of the same
//! backend), its stdout lines stamped as they arrive. The difference of
//! the two is the bridge's cost (floor: < 1 ms per event, p99), and the
//! counts must be equal (tool_use lines and `tool.call` events, tool_result
//! lines and `tool.result` events, text lines and `model.message` events).
//!
//! The bridge records a model message (and its calls) once it is complete,
//! that is when the CLI's next line comes (Claude Code prints a message a
//! content block a line): so `model.message` and `tool.call` are also
//! measured from the line that completed them (the turn's tool_result line,
//! or the `result` line for the last message), which is the bridge's own
//! share; from their own line they include the wait for that next line.
//!
//! `cargo build --release -p paddock-guest && cargo bench -p paddock-runtime --bench agent_bridge`
//! (root, or PADDOCK_UNCONFINED=1). TURNS, RUNS, PACE_MS and TOOL (`Read`:
//! calls that change nothing, so no checkpoints) override the defaults;
//! `-- --help` prints the usage.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use paddock_bench_support::figures::build_profile;
use paddock_bench_support::{env_or, wants_help};
use paddock_core::model::{ModelProvider, ModelRequest, ModelStream};
use paddock_core::sandbox::{ExecEvent, SandboxSpec};
use paddock_core::store::{Budgets, DriverKind, RunState};
use paddock_proto::{ExecSpec, OutputStream};
use paddock_runtime::{
    ExternalDriver, ExternalSettings, Runtime, RuntimeConfig, RuntimeDeps, StartRun,
};
use paddock_test_support::{Stack, StackConfig};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The floor: what bridging adds per event, p99.
const FLOOR_MS: f64 = 1.0;
const SESSION: &str = "5c79f5f2-8de0-40ce-b31e-64114042b92a";
const SCRIPT: &str = "/workspace/replay.sh";
const LOG: &str = "emitted.log";

const USAGE: &str = "\
agent_bridge: latency of an agent CLI's stream-json lines bridged into run events
(ExternalDriver, Claude Code's reader, native sandbox, SQLite) beside the same
lines read through the sandbox's plain exec.

usage: cargo build --release -p paddock-guest &&
       cargo bench -p paddock-runtime --bench agent_bridge
as root, or with PADDOCK_UNCONFINED=1 against the unconfined guest.
environment: TURNS (tool-call turns per transcript, default 200), RUNS (default 3),
PACE_MS (between lines, default 2), TOOL (the calls' tool: Bash, default,
checkpoints each batch; Read does not)";

/// The driver calls its own model: the run's provider is never asked.
#[derive(Debug)]
struct NoModel;

impl ModelProvider for NoModel {
    fn name(&self) -> &str {
        "bench:none"
    }

    fn context_window(&self) -> u32 {
        1_000_000
    }

    fn stream(&self, _request: &ModelRequest, _cancel: CancellationToken) -> ModelStream {
        futures_util::stream::empty().boxed()
    }
}

/// What a transcript line is, for matching events to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Line {
    Init,
    Text(String),
    ToolUse(String),
    ToolResult(String),
    Result,
}

/// A Claude Code stream-json transcript of `turns` tool-call turns and a
/// final answer.
fn transcript(turns: usize, tool: &str) -> (String, Vec<Line>) {
    let usage = json!({"input_tokens": 100, "output_tokens": 10,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    let mut out = String::new();
    let mut lines = Vec::new();
    let mut push = |value: Value, line: Line| {
        out.push_str(&value.to_string());
        out.push('\n');
        lines.push(line);
    };
    push(
        json!({"type": "system", "subtype": "init", "session_id": SESSION, "cwd": "/workspace",
            "tools": ["Bash", "Read", "Write", "Edit"], "model": "claude-sonnet-4-5",
            "permissionMode": "bypassPermissions"}),
        Line::Init,
    );
    let assistant = |id: String, content: Value| {
        json!({"type": "assistant", "message": {"id": id, "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": content, "stop_reason": null,
            "usage": usage}, "parent_tool_use_id": null, "session_id": SESSION})
    };
    for k in 1..=turns {
        let text = format!("Turn {k}: checking step {k} of the build.");
        push(
            assistant(
                format!("msg_{k:04}"),
                json!([{"type": "text", "text": text}]),
            ),
            Line::Text(text),
        );
        let call = format!("toolu_{k:04}");
        push(
            assistant(
                format!("msg_{k:04}"),
                json!([{"type": "tool_use", "id": call, "name": tool, "input": input(tool, k)}]),
            ),
            Line::ToolUse(call.clone()),
        );
        push(
            json!({"type": "user", "message": {"role": "user", "content": [
                {"tool_use_id": call, "type": "tool_result", "content": format!("step {k}"),
                 "is_error": false}]}, "parent_tool_use_id": null, "session_id": SESSION}),
            Line::ToolResult(call),
        );
    }
    let text = "Done: every step ran.".to_owned();
    push(
        assistant(
            "msg_final".to_owned(),
            json!([{"type": "text", "text": text}]),
        ),
        Line::Text(text.clone()),
    );
    push(
        json!({"type": "result", "subtype": "success", "is_error": false, "result": text,
            "num_turns": turns + 1, "total_cost_usd": 0.01, "session_id": SESSION,
            "usage": {"input_tokens": 100 * (turns + 1), "output_tokens": 10 * (turns + 1),
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}),
        Line::Result,
    );
    (out, lines)
}

/// A call's arguments: `Bash` runs a command (a checkpoint after its
/// batch), `Read` reads a file (none).
fn input(tool: &str, k: usize) -> Value {
    match tool {
        "Bash" => json!({"command": format!("echo step {k}"), "description": "Print the step"}),
        _ => json!({"file_path": "/workspace/transcript.jsonl", "offset": k, "limit": 1}),
    }
}

/// The replay: ignores its arguments, prints the transcript a line every
/// `pace_ms`, logging each line's emission (microseconds, wall clock).
fn replay_script(pace_ms: u64) -> String {
    format!(
        "#!/bin/bash\n\
         # replays transcript.jsonl; each line's emission time goes to {LOG}\n\
         log=/workspace/{LOG}\n\
         : > \"$log\"\n\
         while IFS= read -r line; do\n\
         \x20 t=$EPOCHREALTIME\n\
         \x20 printf '%s\\n' \"$line\"\n\
         \x20 printf '%s\\n' \"$t\" >> \"$log\"\n\
         \x20 sleep {pace}\n\
         done < /workspace/transcript.jsonl\n",
        pace = pace_ms as f64 / 1e3,
    )
}

fn now_us() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_micros(),
    )
    .unwrap()
}

/// The emission times the replay logged, a line each, in microseconds.
fn emitted(project: &Path) -> Vec<i64> {
    std::fs::read_to_string(project.join(LOG))
        .unwrap()
        .lines()
        .map(|l| {
            let (secs, micros) = l.trim().split_once(['.', ',']).unwrap();
            secs.parse::<i64>().unwrap() * 1_000_000 + micros.parse::<i64>().unwrap()
        })
        .collect()
}

/// Latencies of one kind, in milliseconds.
#[derive(Debug, Default)]
struct Samples(Vec<f64>);

impl Samples {
    fn push_us(&mut self, us: i64) {
        self.0.push(us as f64 / 1e3);
    }

    fn at(&self, p: f64) -> f64 {
        let mut sorted = self.0.clone();
        sorted.sort_by(f64::total_cmp);
        if sorted.is_empty() {
            return f64::NAN;
        }
        let at = ((sorted.len() - 1) as f64 * p).round() as usize;
        sorted[at.min(sorted.len() - 1)]
    }

    fn report(&self, name: &str) {
        println!(
            "{name:<50} n={:<6} p50 {:>8.3} ms   p99 {:>8.3} ms   max {:>8.3} ms",
            self.0.len(),
            self.at(0.5),
            self.at(0.99),
            self.at(1.0),
        );
    }
}

/// What one bridged run showed.
#[derive(Debug, Default)]
struct Bridged {
    /// From the line each event came from, per kind.
    own: HashMap<&'static str, Samples>,
    /// From the line that completed each event (the bridge's own share).
    completed: Samples,
    counts: HashMap<String, usize>,
    /// Per run: how long after the last line the last bridged event came.
    drain: Samples,
    /// Per run: from the first line to the last bridged event, per line.
    per_line: Samples,
    /// Per run: from the first line to the last, per line.
    interval: Samples,
}

/// The line (index) that completes the message holding line `at`: the next
/// line that is not a block of the same message.
fn completing(lines: &[Line], at: usize) -> usize {
    let mut next = at + 1;
    while matches!(lines.get(next), Some(Line::Text(_) | Line::ToolUse(_))) {
        next += 1;
    }
    next.min(lines.len() - 1)
}

async fn bridged_run(
    runtime: &Runtime,
    tenant: &paddock_core::ids::TenantId,
    workspace: &paddock_core::ids::WorkspaceId,
    project: &Path,
    lines: &[Line],
    turns: usize,
    into: &mut Bridged,
) {
    let session = runtime
        .create_session(tenant, workspace, "bridge")
        .await
        .unwrap();
    let driver = ExternalDriver::new(
        DriverKind::ClaudeCode,
        ExternalSettings {
            program: SCRIPT.to_owned(),
            model: None,
            base_url: "https://api.anthropic.test".to_owned(),
            key: None,
        },
    )
    .unwrap();
    let mut request = StartRun::new("Replay the transcript", Arc::new(NoModel));
    request.driver = Arc::new(driver);
    let limit = u32::try_from(turns).unwrap() + 10;
    request.budgets = Budgets {
        max_turns: limit,
        max_tool_calls: limit,
        ..Budgets::default()
    };
    let mut events = runtime.event_stream(tenant, &session.id, 0).await.unwrap();
    let watcher = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(event) = events.next().await {
            let arrived = now_us();
            let event = event.unwrap();
            let done = event.kind == "run.finished";
            seen.push((event.kind, event.payload, arrived));
            if done {
                break;
            }
        }
        seen
    });
    let run = runtime
        .start_run(tenant, &session.id, request)
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(run.state, RunState::Completed, "{run:?}");
    let seen = tokio::time::timeout(Duration::from_secs(30), watcher)
        .await
        .expect("run.finished")
        .unwrap();
    let emitted = emitted(project);
    assert_eq!(emitted.len(), lines.len(), "every line was emitted");
    let index: HashMap<&Line, usize> = lines.iter().enumerate().map(|(i, l)| (l, i)).collect();
    let mut last_arrival = emitted[0];
    for (kind, payload, arrived) in seen {
        *into.counts.entry(kind.clone()).or_default() += 1;
        let payload: Value = serde_json::from_str(&payload).unwrap_or(Value::Null);
        let call = || payload["call_id"].as_str().unwrap_or_default().to_owned();
        let (label, line) = match kind.as_str() {
            "model.message" => (
                "model.message",
                Line::Text(payload["text"].as_str().unwrap_or_default().to_owned()),
            ),
            "tool.call" => ("tool.call", Line::ToolUse(call())),
            "tool.result" => ("tool.result", Line::ToolResult(call())),
            _ => continue,
        };
        let Some(&at) = index.get(&line) else {
            println!("an event of no line: {kind} {payload}");
            continue;
        };
        last_arrival = last_arrival.max(arrived);
        into.own
            .entry(label)
            .or_default()
            .push_us(arrived - emitted[at]);
        into.completed
            .push_us(arrived - emitted[completing(lines, at)]);
    }
    let last_line = emitted[emitted.len() - 1];
    into.drain.push_us(last_arrival - last_line);
    let gaps = i64::try_from(lines.len() - 1).unwrap();
    into.interval.push_us((last_line - emitted[0]) / gaps);
    into.per_line.push_us((last_arrival - emitted[0]) / gaps);
}

/// The same script through the sandbox's plain exec: each stdout line's
/// arrival less its emission.
async fn exec_run(
    backend: &Arc<dyn paddock_core::sandbox::SandboxBackend>,
    project: &Path,
    lines: usize,
    into: &mut Samples,
) {
    let sandbox = backend
        .create(SandboxSpec {
            workspace: Some(project.to_path_buf()),
            ..SandboxSpec::default()
        })
        .await
        .unwrap();
    let guest = sandbox.guest();
    let mut execution = guest
        .exec(
            ExecSpec {
                argv: vec![SCRIPT.to_owned(), "-p".to_owned(), "ignored".to_owned()],
                ..ExecSpec::default()
            },
            &[],
        )
        .await
        .unwrap();
    let mut arrivals = Vec::new();
    loop {
        match execution.next_event().await.unwrap() {
            Some(ExecEvent::Output {
                stream: OutputStream::Stdout,
                data,
            }) => {
                let arrived = now_us();
                let ends = data.iter().filter(|&&b| b == b'\n').count();
                arrivals.extend(std::iter::repeat_n(arrived, ends));
            }
            Some(ExecEvent::Exited(exit)) => {
                assert_eq!(exit.code, Some(0), "{exit:?}");
                break;
            }
            Some(_) => {}
            None => break,
        }
    }
    drop(execution);
    sandbox.destroy().await.unwrap();
    let emitted = emitted(project);
    assert_eq!(arrivals.len(), lines, "every line arrived");
    assert_eq!(emitted.len(), lines, "every line was emitted");
    for (arrived, emitted) in arrivals.iter().zip(&emitted) {
        into.push_us(arrived - emitted);
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    if wants_help() {
        println!("{USAGE}");
        return;
    }
    let turns: usize = env_or("TURNS", 200).unwrap();
    let runs: usize = env_or("RUNS", 3).unwrap();
    let pace_ms: u64 = env_or("PACE_MS", 2).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let stack = Stack::open(&StackConfig::in_dir(dir.path(), "paddock-bench"))
        .await
        .unwrap();
    let tenant = stack.tenant("bench", "bench").await.unwrap();
    let backend = Arc::clone(&stack.backend);
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let tool = std::env::var("TOOL").unwrap_or_else(|_| "Bash".to_owned());
    let (text, lines) = transcript(turns, &tool);
    std::fs::write(project.join("transcript.jsonl"), text).unwrap();
    let script = project.join("replay.sh");
    std::fs::write(&script, replay_script(pace_ms)).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let runtime = Runtime::new(RuntimeDeps {
        store: stack.store,
        backend: stack.backend,
        blobs: stack.blobs,
        config: RuntimeConfig::new("bench", dir.path().join("workspaces")),
    });
    let workspace = runtime.workspace_for_dir(&tenant, &project).await.unwrap();

    let mut bridged = Bridged::default();
    let mut transport = Samples::default();
    for _ in 0..runs {
        exec_run(&backend, &project, lines.len(), &mut transport).await;
        bridged_run(
            &runtime,
            &tenant,
            &workspace.id,
            &project,
            &lines,
            turns,
            &mut bridged,
        )
        .await;
    }

    println!(
        "paddock-runtime agent bridge ({} build): {runs} runs x {turns} {tool} turns \
         ({} stream-json lines, one every {pace_ms} ms + a sleep's fork; Claude Code's reader, \
         native sandbox, SQLite)",
        build_profile(),
        lines.len()
    );
    bridged.interval.report("lines emitted: one every");
    bridged
        .per_line
        .report("bridged: first line to last event, per line");
    bridged.drain.report("bridged: last line to last event");
    transport.report("transport: plain exec, line emitted -> read");
    for kind in ["model.message", "tool.call", "tool.result"] {
        if let Some(samples) = bridged.own.get(kind) {
            samples.report(&format!("bridged: {kind}, from its own line"));
        }
    }
    let mut all = Samples::default();
    for samples in bridged.own.values() {
        all.0.extend(&samples.0);
    }
    all.report("bridged: every event, from its own line");
    bridged
        .completed
        .report("bridged: every event, from the line completing it");

    let count = |kind: &str| bridged.counts.get(kind).copied().unwrap_or(0);
    let per_run = |f: fn(&Line) -> bool| lines.iter().filter(|l| f(l)).count() * runs;
    let pairs = [
        (
            "tool_use lines",
            per_run(|l| matches!(l, Line::ToolUse(_))),
            "tool.call events",
            count("tool.call"),
        ),
        (
            "tool_result lines",
            per_run(|l| matches!(l, Line::ToolResult(_))),
            "tool.result events",
            count("tool.result"),
        ),
        (
            "assistant messages",
            (turns + 1) * runs,
            "model.message events",
            count("model.message"),
        ),
    ];
    for (lines_name, lines_n, events_name, events_n) in pairs {
        println!(
            "{lines_name} {lines_n} vs {events_name} {events_n}: {}",
            if lines_n == events_n { "equal" } else { "LOST" }
        );
    }
    println!(
        "checkpoint.created events {} ({} per run; the bridge checkpoints each batch that ran a command)",
        count("checkpoint.created"),
        count("checkpoint.created") / runs.max(1)
    );
    let verdict = |cost: f64| if cost < FLOOR_MS { "PASS" } else { "MISS" };
    let cost_completed = bridged.completed.at(0.99) - transport.at(0.99);
    let cost_own = all.at(0.99) - transport.at(0.99);
    println!(
        "bridge cost per event, p99 over the transport's p99, from the line completing it: \
         {cost_completed:.3} ms (floor < {FLOOR_MS} ms): {}",
        verdict(cost_completed)
    );
    println!(
        "bridge cost per event, p99 over the transport's p99, from its own line: \
         {cost_own:.3} ms (floor < {FLOOR_MS} ms): {} (model.message and tool.call wait for \
         the line that completes their message)",
        verdict(cost_own)
    );
    println!(
        "p50: bridged {:.3} ms (own line) / {:.3} ms (completing line) vs transport {:.3} ms",
        all.at(0.5),
        bridged.completed.at(0.5),
        transport.at(0.5)
    );
}
