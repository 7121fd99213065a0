//! Orchestration overhead per tool-call turn.
//!
//! A model that answers instantly asks for one `read_file` per turn; the time
//! from one model call to the next is everything the runtime does for a turn
//! (budget checks, request building, state changes, events, messages and the
//! invocation log in SQLite, the tool call in a real native sandbox). Beside
//! it, the same read made directly on `GuestOps`, and through the tool
//! without the run loop, so the overhead is visible side by side.
//!
//! `cargo build --release -p paddock-guest && cargo bench -p paddock-runtime --bench turn_overhead`
//! (root, or PADDOCK_UNCONFINED=1). TURNS and RUNS override the defaults;
//! `-- --help` prints the usage.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use paddock_bench_support::figures::percentile;
use paddock_bench_support::{env_or, wants_help};
use paddock_core::ids::{RunId, SessionId};
use paddock_core::model::{
    ModelEvent, ModelProvider, ModelRequest, ModelStream, StopReason, ToolCall, Usage,
};
use paddock_core::sandbox::SandboxSpec;
use paddock_core::store::{Budgets, Lease, NewEvent, RunMode, RunState};
use paddock_runtime::tools::{ReadFile, ToolContext, execute};
use paddock_runtime::{Runtime, RuntimeConfig, RuntimeDeps, StartRun};
use paddock_test_support::{Stack, StackConfig};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Answers every call at once: `turns` reads of distinct files, then
/// `complete_task`; notes when each call came.
#[derive(Debug)]
struct InstantModel {
    turns: usize,
    calls: Mutex<Vec<Instant>>,
}

impl ModelProvider for InstantModel {
    fn name(&self) -> &str {
        "bench:instant"
    }

    fn context_window(&self) -> u32 {
        1_000_000
    }

    fn stream(&self, _request: &ModelRequest, _cancel: CancellationToken) -> ModelStream {
        let mut calls = self.calls.lock().unwrap();
        calls.push(Instant::now());
        let n = calls.len();
        let call = if n <= self.turns {
            ToolCall {
                id: format!("c{n}"),
                name: "read_file".into(),
                arguments: json!({"path": format!("f{n}.txt")}),
            }
        } else {
            ToolCall {
                id: format!("c{n}"),
                name: "complete_task".into(),
                arguments: json!({"verdict": "unsure", "summary": "benchmark"}),
            }
        };
        let events = vec![
            Ok(ModelEvent::ToolCall(call)),
            Ok(ModelEvent::Usage(Usage {
                input_tokens: 100,
                output_tokens: 10,
            })),
            Ok(ModelEvent::Done {
                stop: StopReason::ToolCalls,
            }),
        ];
        futures_util::stream::iter(events).boxed()
    }
}

/// Events per `append_events` call in the store baseline.
const BATCH: usize = 6;

const USAGE: &str = "\
turn_overhead: orchestration overhead per tool-call turn (read_file in a native
sandbox, SQLite) beside the same read on the guest and single store writes.

usage: cargo build --release -p paddock-guest &&
       cargo bench -p paddock-runtime --bench turn_overhead
as root, or with PADDOCK_UNCONFINED=1 against the unconfined guest.
environment: TURNS (tool-call turns per run, default 200), RUNS (default 3)";

fn report(name: &str, mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    let median = percentile(&samples, 0.5);
    println!(
        "{name:<38} n={:<5} median {:>9.3} ms   p90 {:>9.3} ms   min {:>9.3} ms",
        samples.len(),
        median.as_secs_f64() * 1e3,
        percentile(&samples, 0.9).as_secs_f64() * 1e3,
        samples[0].as_secs_f64() * 1e3,
    );
    median
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    if wants_help() {
        println!("{USAGE}");
        return;
    }
    let turns: usize = env_or("TURNS", 200).unwrap();
    let runs: usize = env_or("RUNS", 3).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let stack = Stack::open(&StackConfig::in_dir(dir.path(), "paddock-bench"))
        .await
        .unwrap();
    let tenant = stack.tenant("bench", "bench").await.unwrap();
    let store = Arc::clone(&stack.store);
    let backend = Arc::clone(&stack.backend);
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    for n in 0..=turns + 1 {
        std::fs::write(project.join(format!("f{n}.txt")), format!("line {n}\n")).unwrap();
    }
    let runtime = Runtime::new(RuntimeDeps {
        store: stack.store,
        backend: stack.backend,
        blobs: stack.blobs,
        config: RuntimeConfig::new("bench", dir.path().join("workspaces")),
    });
    let workspace = runtime.workspace_for_dir(&tenant, &project).await.unwrap();

    // baselines: the same read on the guest directly, and through the tool
    let sandbox = backend
        .create(SandboxSpec {
            workspace: Some(project.clone()),
            ..SandboxSpec::default()
        })
        .await
        .unwrap();
    let guest = sandbox.guest();
    let mut direct = Vec::new();
    let mut tool = Vec::new();
    let read = ReadFile::new();
    let ctx = ToolContext {
        guest: guest.clone(),
        mode: RunMode::Build,
        write_scope: None,
        session: SessionId::generate(),
        run: RunId::generate(),
        cancel: CancellationToken::new(),
        live: Default::default(),
        idempotency_key: None,
    };
    for round in 0..runs {
        for n in 1..=turns {
            let path = format!("f{n}.txt");
            let started = Instant::now();
            guest
                .file_read(&paddock_proto::FsPath::from(&path), 0, None)
                .await
                .unwrap();
            let elapsed = started.elapsed();
            let started_tool = Instant::now();
            execute(&read, &ctx, json!({ "path": path })).await.unwrap();
            let elapsed_tool = started_tool.elapsed();
            if round > 0 || n > 10 {
                direct.push(elapsed);
                tool.push(elapsed_tool);
            }
        }
    }
    sandbox.destroy().await.unwrap();

    // what one fenced store write costs
    let session = runtime
        .create_session(&tenant, &workspace.id, "store")
        .await
        .unwrap();
    let lease = store
        .acquire_lease(
            &Lease::session_resource(&session.id),
            "bench/store",
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    let mut appends = Vec::new();
    for n in 0..(turns * runs) {
        let event = NewEvent {
            session: session.id.clone(),
            run: None,
            kind: "progress".into(),
            payload: format!("{{\"message\":\"{n}\"}}"),
        };
        let started = Instant::now();
        store.append_event(&lease, &tenant, &event).await.unwrap();
        appends.push(started.elapsed());
    }

    // the same events six at a time (about a turn's worth), per event
    let mut batched = Vec::new();
    for n in 0..(turns * runs / BATCH) {
        let events: Vec<NewEvent> = (0..BATCH)
            .map(|i| NewEvent {
                session: session.id.clone(),
                run: None,
                kind: "progress".into(),
                payload: format!("{{\"message\":\"{n}.{i}\"}}"),
            })
            .collect();
        let started = Instant::now();
        store.append_events(&lease, &tenant, &events).await.unwrap();
        batched.push(started.elapsed() / u32::try_from(BATCH).unwrap());
    }

    let mut run_row =
        paddock_core::store::Run::new(tenant.clone(), session.id.clone(), "store", store.now());
    run_row.state = RunState::Acting;
    store.create_run(&lease, &run_row).await.unwrap();
    let mut updates = Vec::new();
    let mut messages = Vec::new();
    let mut invocations = Vec::new();
    for n in 0..(turns * runs) {
        let started = Instant::now();
        let update = paddock_core::store::RunUpdate {
            usage: Some(paddock_core::store::RunUsage {
                turns: u32::try_from(n).unwrap(),
                ..Default::default()
            }),
            ..paddock_core::store::RunUpdate::state(RunState::Planning)
        };
        store
            .update_run(&lease, &tenant, &run_row.id, &update)
            .await
            .unwrap();
        updates.push(started.elapsed());
        let started = Instant::now();
        let message = paddock_core::store::StoredMessage {
            tenant: tenant.clone(),
            session: session.id.clone(),
            run: run_row.id.clone(),
            seq: 0,
            message: paddock_core::model::Message::user(format!("message {n}")),
            created_at: store.now(),
        };
        store.append_message(&lease, &message).await.unwrap();
        messages.push(started.elapsed());
        let started = Instant::now();
        let invocation =
            paddock_core::store::ToolInvocation::start(&run_row, "read_file", "{}", store.now());
        store
            .record_tool_invocation(&lease, &invocation)
            .await
            .unwrap();
        let outcome = paddock_core::store::ToolOutcome {
            status: paddock_core::store::ToolStatus::Succeeded,
            output: "{}".into(),
        };
        store
            .finish_tool_invocation(&lease, &tenant, &invocation.id, &outcome)
            .await
            .unwrap();
        invocations.push(started.elapsed());
    }

    let mut per_turn = Vec::new();
    let mut sustained = Vec::new();
    let mut totals = Vec::new();
    for _ in 0..runs {
        let session = runtime
            .create_session(&tenant, &workspace.id, "bench")
            .await
            .unwrap();
        let model = Arc::new(InstantModel {
            turns,
            calls: Mutex::new(Vec::new()),
        });
        let mut request = StartRun::new("benchmark", model.clone());
        request.budgets = Budgets {
            max_turns: u32::try_from(turns).unwrap() + 10,
            max_tool_calls: u32::try_from(turns).unwrap() + 10,
            ..Budgets::default()
        };
        // note when each event arrives: the loop's last write is the event
        // before `sandbox.stopped`
        let mut events = runtime.event_stream(&tenant, &session.id, 0).await.unwrap();
        let watcher = tokio::spawn(async move {
            let mut last_loop_event = None;
            while let Some(event) = events.next().await {
                let event = event.unwrap();
                if event.kind == "sandbox.stopped" {
                    break;
                }
                last_loop_event = Some(Instant::now());
            }
            last_loop_event.unwrap()
        });
        let started = Instant::now();
        let run = runtime
            .start_run(&tenant, &session.id, request)
            .await
            .unwrap()
            .wait()
            .await
            .unwrap();
        let finished_at = Instant::now();
        totals.push(finished_at - started);
        assert_eq!(run.state, RunState::Completed, "{run:?}");
        assert_eq!(run.usage.tool_calls as usize, turns + 1);
        let calls = model.calls.lock().unwrap().clone();
        // turn n runs from model call n to model call n+1 (the tool-call turns)
        per_turn.extend(calls.windows(2).take(turns).map(|w| w[1] - w[0]));
        // the store writes of a turn overlap the next turns (they are
        // pipelined), so the sustained rate, first model call to the last
        // write of the loop, is the honest cost of a turn
        let loop_done = watcher.await.unwrap();
        sustained.push(loop_done.duration_since(calls[0]) / u32::try_from(turns + 1).unwrap());
    }

    println!(
        "paddock-runtime turn overhead: {runs} runs x {turns} tool-call turns (read_file, native sandbox, SQLite)"
    );
    let guest_median = report("guest file_read (direct GuestOps)", direct);
    let tool_median = report("read_file tool (tools::execute)", tool);
    report("store append_event (one fenced write)", appends);
    report("store append_events x6, per event", batched);
    report("store update_run", updates);
    report("store append_message", messages);
    report("store record+finish_tool_invocation", invocations);
    let turn_median = report("turn latency (model call to next)", per_turn);
    let sustained_median = report("sustained turn incl. its writes", sustained);
    println!(
        "orchestration overhead per turn, sustained (incl. all store writes) - guest read: {:.3} ms; \
         latency - guest read: {:.3} ms; tool call over guest read: {:.3} ms",
        (sustained_median.saturating_sub(guest_median)).as_secs_f64() * 1e3,
        (turn_median.saturating_sub(guest_median)).as_secs_f64() * 1e3,
        (tool_median.saturating_sub(guest_median)).as_secs_f64() * 1e3,
    );
    for (i, total) in totals.iter().enumerate() {
        println!(
            "run {}: {:.1} ms end to end (sandbox start, {turns} turns, completion, snapshot)",
            i + 1,
            total.as_secs_f64() * 1e3
        );
    }
}
