//! Subagent readiness: the time from the parent's model asking for spawns to
//! every child's sandbox being ready (its model's first call comes right
//! after `sandbox.ready`), on a 100 MiB workspace, for 1 spawn and for 3
//! spawns in one turn. The floor: 3 ready in under 1.5x the time of 1 (the
//! spawns share one pack of the parent's workspace and one `unpack_many`
//! pass writes all their copies; their sandboxes start side by side).
//!
//! `cargo build --release -p paddock-guest && cargo bench -p paddock-runtime --bench subagent_spawn`
//! (root, or PADDOCK_UNCONFINED=1). ROUNDS (default 3) and MIB (default 100)
//! override; BREAKDOWN=1 prints where each child's time went; `-- --help`
//! prints the usage.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use paddock_bench_support::{env_or, wants_help};
use paddock_core::ids::TenantId;
use paddock_core::model::{
    ModelEvent, ModelProvider, ModelRequest, ModelStream, StopReason, ToolCall,
};
use paddock_core::store::{RunState, SubagentProfile};
use paddock_runtime::subagents::SubagentModels;
use paddock_runtime::{Runtime, RuntimeConfig, RuntimeDeps, StartRun};
use paddock_snapshot::Limits;
use paddock_test_support::{Stack, StackConfig};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Answers each call with the next turn's tool calls; notes when each call came.
#[derive(Debug)]
struct Instant_ {
    turns: Vec<Vec<(String, Value)>>,
    calls: Mutex<Vec<Instant>>,
}

impl Instant_ {
    fn new(turns: Vec<Vec<(String, Value)>>) -> Arc<Self> {
        Arc::new(Self {
            turns,
            calls: Mutex::new(Vec::new()),
        })
    }

    fn first_call(&self) -> Option<Instant> {
        self.calls.lock().unwrap().first().copied()
    }
}

impl ModelProvider for Instant_ {
    fn name(&self) -> &str {
        "bench:instant"
    }

    fn context_window(&self) -> u32 {
        1_000_000
    }

    fn stream(&self, _request: &ModelRequest, _cancel: CancellationToken) -> ModelStream {
        let mut calls = self.calls.lock().unwrap();
        let n = calls.len();
        calls.push(Instant::now());
        let turn = self.turns.get(n).cloned().unwrap_or_default();
        let mut events: Vec<_> = turn
            .into_iter()
            .enumerate()
            .map(|(i, (name, arguments))| {
                Ok(ModelEvent::ToolCall(ToolCall {
                    id: format!("c{n}_{i}"),
                    name,
                    arguments,
                }))
            })
            .collect();
        events.push(Ok(ModelEvent::Done {
            stop: StopReason::ToolCalls,
        }));
        futures_util::stream::iter(events).boxed()
    }
}

fn complete() -> Vec<(String, Value)> {
    vec![(
        "complete_task".into(),
        json!({"verdict": "unsure", "summary": "benchmark"}),
    )]
}

#[derive(Debug, Default)]
struct Children(Mutex<HashMap<String, Arc<Instant_>>>);

impl SubagentModels for Children {
    fn model(&self, _profile: SubagentProfile, task_id: &str) -> Option<Arc<dyn ModelProvider>> {
        let model = Instant_::new(vec![complete()]);
        self.0
            .lock()
            .unwrap()
            .insert(task_id.to_owned(), Arc::clone(&model));
        Some(model)
    }
}

/// A file of `len` bytes: half incompressible, half source-like text.
fn content(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut data = Vec::with_capacity(len);
    while data.len() < len / 2 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        data.extend_from_slice(&state.to_le_bytes());
    }
    let mut line = 0u64;
    while data.len() < len {
        data.extend_from_slice(format!("fn item_{seed}_{line}() -> u64 {{ {line} }}\n").as_bytes());
        line += 1;
    }
    data.truncate(len);
    data
}

const USAGE: &str = "\
subagent_spawn: time from a parent's spawn turn to every child's first model
call, 1 explore spawn beside 3 in one turn (floor: 3 under 1.5x of 1).

usage: cargo build --release -p paddock-guest &&
       cargo bench -p paddock-runtime --bench subagent_spawn
as root, or with PADDOCK_UNCONFINED=1 against the unconfined guest.
environment: ROUNDS (default 3), MIB (workspace size, default 100),
BREAKDOWN=1 (spawn -> run.started -> sandbox.ready per child)";

/// One parent run that spawns `count` explore children in one turn; the
/// time from its spawn turn to the last child's first model call.
async fn readiness(
    runtime: &Arc<Runtime>,
    tenant: &TenantId,
    workspace: &paddock_core::ids::WorkspaceId,
    count: usize,
    round: usize,
) -> Duration {
    let session = runtime
        .create_session(tenant, workspace, &format!("bench {count} #{round}"))
        .await
        .unwrap();
    let spawns = (0..count)
        .map(|n| {
            (
                "spawn_subagent".to_owned(),
                json!({"task_id": format!("t{n}"), "profile": "explore", "prompt": "look"}),
            )
        })
        .collect();
    let wait = vec![("wait_subagents".to_owned(), json!({}))];
    let parent = Instant_::new(vec![spawns, wait, complete()]);
    let children = Arc::new(Children::default());
    let mut request = StartRun::new("benchmark subagent readiness", parent.clone());
    request.subagent_models = Some(children.clone());
    let run = runtime
        .start_run(tenant, &session.id, request)
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(run.state, RunState::Completed, "{run:?}");
    if std::env::var("BREAKDOWN").is_ok_and(|v| v == "1") {
        breakdown(runtime, tenant, &session.id, &run.id).await;
    }
    let asked = parent.first_call().unwrap();
    let children = children.0.lock().unwrap();
    assert_eq!(children.len(), count);
    children
        .values()
        .map(|child| child.first_call().expect("every child ran") - asked)
        .max()
        .unwrap()
}

/// Where the time went, from the stored events (millisecond timestamps):
/// the spawn call to each child's run row (workspace copy, session, run), and
/// from there to its sandbox being ready.
async fn breakdown(
    runtime: &Arc<Runtime>,
    tenant: &TenantId,
    session: &paddock_core::ids::SessionId,
    run: &paddock_core::ids::RunId,
) {
    let store = runtime.store();
    let at = |events: &[paddock_core::store::RunEvent], kind: &str| {
        events
            .iter()
            .find(|e| e.kind == kind)
            .map_or(-1, |e| e.created_at.as_millis())
    };
    let parent = store.list_events(tenant, session, 0, 10_000).await.unwrap();
    let spawn = at(&parent, "tool.call");
    for child in runtime.list_child_runs(tenant, run).await.unwrap() {
        let events = store
            .list_events(tenant, &child.session, 0, 10_000)
            .await
            .unwrap();
        let started = at(&events, "run.started");
        let ready = at(&events, "sandbox.ready");
        println!(
            "    {}: spawn -> run.started {} ms, -> sandbox.ready {} ms",
            child.task_key.unwrap_or_default(),
            started - spawn,
            ready - started
        );
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    if wants_help() {
        println!("{USAGE}");
        return;
    }
    let rounds: usize = env_or("ROUNDS", 3).unwrap();
    let mib: usize = env_or("MIB", 100).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let stack = Stack::open(&StackConfig::in_dir(dir.path(), "paddock-bench"))
        .await
        .unwrap();
    let tenant = stack.tenant("bench", "bench").await.unwrap();

    let project = dir.path().join("project");
    const FILE: usize = 512 * 1024;
    let files = mib * 1024 * 1024 / FILE;
    for n in 0..files {
        let sub = project.join(format!("src/m{}", n % 16));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("f{n}.rs")), content(n as u64, FILE)).unwrap();
    }
    let workspaces_root = dir.path().join("workspaces");
    let mut config = RuntimeConfig::new("bench", &workspaces_root);
    config.snapshot.limits = Limits {
        max_files: 100_000,
        max_bytes: 4 << 30,
    };
    let runtime = Runtime::new(RuntimeDeps {
        store: stack.store,
        backend: stack.backend,
        blobs: stack.blobs,
        config,
    });
    let workspace = runtime.workspace_for_dir(&tenant, &project).await.unwrap();
    println!(
        "workspace: {files} files, {} MiB; rounds: {rounds} (after one warm-up of each)",
        files * FILE / (1024 * 1024)
    );

    let mut one = Vec::new();
    let mut three = Vec::new();
    for round in 0..=rounds {
        for count in [1, 3] {
            let took = readiness(&runtime, &tenant, &workspace.id, count, round).await;
            // the copies are not needed any more; keep the disk in check
            let _ = std::fs::remove_dir_all(&workspaces_root);
            if round > 0 {
                if count == 1 { &mut one } else { &mut three }.push(took);
            }
        }
    }
    one.sort();
    three.sort();
    let median = |s: &[Duration]| s[s.len() / 2];
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "1 spawn:  all ready in median {:>8.1} ms   (min {:>8.1}, max {:>8.1})",
        ms(median(&one)),
        ms(one[0]),
        ms(one[one.len() - 1])
    );
    println!(
        "3 spawns: all ready in median {:>8.1} ms   (min {:>8.1}, max {:>8.1})",
        ms(median(&three)),
        ms(three[0]),
        ms(three[three.len() - 1])
    );
    let ratio = median(&three).as_secs_f64() / median(&one).as_secs_f64();
    println!(
        "ratio 3/1: {ratio:.2} (floor: under 1.50) {}",
        if ratio < 1.5 { "ok" } else { "MISSED" }
    );
}
