//! The stored form of run events is pinned: events as they were written
//! before readers decoded them into `Event` (the `kind` column and the exact
//! payload JSON of every kind) still decode, into the values they were
//! written from, and encode back to the same bytes; a store holding them,
//! and a kind this version does not know, reads back through the runtime's
//! event stream.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeSet;
use std::time::Duration;

use futures_util::StreamExt;
use paddock_core::ids::{CheckpointId, RunId, SessionId, SnapshotId, ToolInvocationId};
use paddock_core::model::{ToolCall, Usage};
use paddock_core::sandbox::SandboxId;
use paddock_core::store::{
    Budgets, CheckpointReason, CriterionReview, EndReason, Lease, NewEvent, Review, RunMode,
    RunState, RunUsage, SubagentProfile, TaskStatus, Verdict,
};
use paddock_proto::EgressDecision;
use paddock_runtime::events::{
    BudgetSource, CallStatus, CheckpointCreated, CheckpointFailed, CheckpointsPruned,
    ContextCompacted, ContextCompacting, EgressDecisionEvent, Event, EventPayload, ModelDelta,
    ModelMessage, OtherEvent, ParentMessage, PlanTask, PlanUpdated, Progress, ResumeBudget,
    RunFinished, RunQueued, RunStarted, RunStateChanged, SandboxReady, SandboxStopped,
    SnapshotLimitHit, SnapshotLimitKind, StoreWaiting, SubagentPhase, SubagentStatus,
    ToolCallEvent, ToolOutputChunk, ToolResultEvent, UserMessage,
};
use serde_json::json;
use support::Harness;

const RUN: &str = "run_0193a1b2c3d47e5f8a9b0c1d2e3f4a5b";
const CHILD_RUN: &str = "run_0193a1b2c3d47e5f8a9b0c1d2e3f4a6c";
const CHILD_SESSION: &str = "ses_0193a1b2c3d47e5f8a9b0c1d2e3f4a70";
const INVOCATION: &str = "tool_0193a1b2c3d47e5f8a9b0c1d2e3f4a81";
const SNAPSHOT: &str = "snap_0193a1b2c3d47e5f8a9b0c1d2e3f4a92";
const SANDBOX: &str = "sb-0193a1b2c3d47e5f8a9b0c1d2e3f4aa3";

/// `(kind, payload)` exactly as the runtime stored them before the change;
/// every kind at least once, optional fields both set and null.
const STORED: &[(&str, &str)] = &[
    (
        "run.started",
        r#"{"goal":"Make the tests pass","success_criteria":["sh test.sh exits 0"],"mode":"build","budgets":{"max_turns":50,"max_tokens":2000000,"max_tool_calls":200,"max_wall_clock_ms":1800000},"model":"scripted:inline","parent_run":null,"profile":null,"task_key":null,"backend":"native"}"#,
    ),
    (
        "run.started",
        r#"{"goal":"Task api: Add the route\nand its tests","success_criteria":[],"mode":"plan","budgets":{"max_turns":10,"max_tokens":50000,"max_tool_calls":20,"max_wall_clock_ms":60000},"model":"openai:gpt-4o","parent_run":"run_0193a1b2c3d47e5f8a9b0c1d2e3f4a5b","profile":"explore","task_key":"api","backend":"docker","image":"paddock-sandbox:bookworm"}"#,
    ),
    (
        "run.started",
        r#"{"goal":"Make the tests pass","success_criteria":[],"mode":"build","budgets":{"max_turns":50,"max_tokens":2000000,"max_tool_calls":200,"max_wall_clock_ms":1800000},"model":"scripted:inline","parent_run":null,"profile":null,"task_key":null,"resumed_from":"run_0193a1b2c3d47e5f8a9b0c1d2e3f4a5b"}"#,
    ),
    (
        "run.state",
        r#"{"state":"awaiting_user","usage":{"turns":3,"input_tokens":1200,"output_tokens":340,"tool_calls":5,"wall_clock_ms":8123}}"#,
    ),
    (
        "run.queued",
        r#"{"reason":"tenant quota runs exceeded: 1 in use of 1, 1 asked","ahead":0,"max_wait_ms":900000,"request":{"goal":"Make the tests pass","model":{"spec":"openai:gpt-4o"}}}"#,
    ),
    (
        "run.queued",
        r#"{"reason":"1 earlier run(s) of tenant acme wait for a slot","ahead":1,"max_wait_ms":60000}"#,
    ),
    (
        "sandbox.ready",
        r#"{"sandbox_id":"sb-0193a1b2c3d47e5f8a9b0c1d2e3f4aa3","backend":"native","read_only":true}"#,
    ),
    (
        "sandbox.stopped",
        r#"{"sandbox_id":"sb-0193a1b2c3d47e5f8a9b0c1d2e3f4aa3","error":null}"#,
    ),
    (
        "sandbox.stopped",
        r#"{"sandbox_id":"sb-0193a1b2c3d47e5f8a9b0c1d2e3f4aa3","error":"destroying the sandbox: the guest did not answer"}"#,
    ),
    (
        "model.message",
        r#"{"turn":2,"text":"Running the tests.","tool_calls":[{"id":"call_1","name":"run_command","arguments":{"command":"sh test.sh","timeout_secs":60}}],"usage":{"input_tokens":900,"output_tokens":42},"compacted":false}"#,
    ),
    (
        "model.message",
        r#"{"turn":1,"text":"","tool_calls":[],"usage":null,"compacted":true}"#,
    ),
    (
        "context.compacting",
        r#"{"tokens_before":6400,"context_window":8192,"threshold":6083,"messages_replaced":41}"#,
    ),
    (
        "context.compacted",
        r#"{"seq":1,"tokens_before":6400,"tokens_after":2100,"messages_replaced":41,"messages_kept":6,"fallback":false,"error":null,"summary_tokens":380}"#,
    ),
    (
        "context.compacted",
        r#"{"seq":2,"tokens_before":6300,"tokens_after":2500,"messages_replaced":40,"messages_kept":5,"fallback":true,"error":"model endpoint answered HTTP 503: overloaded","summary_tokens":610}"#,
    ),
    (
        "tool.call",
        r#"{"call_id":"call_1","tool":"run_command","arguments":{"command":"sh test.sh","timeout_secs":60},"invocation_id":"tool_0193a1b2c3d47e5f8a9b0c1d2e3f4a81"}"#,
    ),
    (
        "tool.result",
        r#"{"call_id":"call_1","tool":"run_command","invocation_id":"tool_0193a1b2c3d47e5f8a9b0c1d2e3f4a81","status":"succeeded","is_error":false,"content":"ok 1 - héllo ✓\n[exit code 0 after 0.2s]","truncated":false,"duration_ms":214}"#,
    ),
    (
        "tool.result",
        r#"{"call_id":"call_2","tool":"write_file","invocation_id":null,"status":"denied","is_error":true,"content":"write_file is not allowed: plan mode","truncated":false,"duration_ms":0}"#,
    ),
    (
        "tool.result",
        r#"{"call_id":"call_3","tool":"read_file","invocation_id":null,"status":"hint","is_error":true,"content":"\"a.txt\" was read already","truncated":true,"duration_ms":3}"#,
    ),
    (
        "plan.updated",
        r#"{"version":2,"explanation":"Tests first","tasks":[{"key":"1","title":"Read the code","status":"done"},{"key":"2","title":"Fix the bug","status":"in_progress"},{"key":"3","title":"Run the tests","status":"pending"},{"key":"4","title":"Ask","status":"blocked"},{"key":"5","title":"Docs","status":"cancelled"}]}"#,
    ),
    (
        "plan.updated",
        r#"{"version":1,"explanation":null,"tasks":[]}"#,
    ),
    ("progress", r#"{"message":"Half way: \"parser\" done"}"#),
    (
        "run.review",
        r#"{"verdict":"met","summary":"The tests pass.","evidence":["sh test.sh exited 0"],"remaining":[],"criteria":[{"criterion":"sh test.sh exits 0","verdict":"met","evidence":"exit code 0"}]}"#,
    ),
    (
        "run.review",
        r#"{"verdict":"unsure","summary":"","evidence":[],"remaining":["no command exited 0 after the last change"],"criteria":[{"criterion":"docs updated","verdict":"not_met","evidence":null}]}"#,
    ),
    (
        "run.finished",
        r#"{"state":"completed","end_reason":"completed","usage":{"turns":4,"input_tokens":5000,"output_tokens":600,"tool_calls":6,"wall_clock_ms":12500},"error":null,"verdict":"met","question":null,"end_snapshot":"snap_0193a1b2c3d47e5f8a9b0c1d2e3f4a92","snapshot_error":null}"#,
    ),
    (
        "run.finished",
        r#"{"state":"awaiting_user","end_reason":"awaiting_user","usage":{"turns":1,"input_tokens":10,"output_tokens":2,"tool_calls":1,"wall_clock_ms":40},"error":null,"verdict":null,"question":"Which database?","end_snapshot":null,"snapshot_error":"packing the workspace: disk full"}"#,
    ),
    (
        "run.finished",
        r#"{"state":"failed","end_reason":"budget_exceeded","usage":{"turns":50,"input_tokens":0,"output_tokens":0,"tool_calls":0,"wall_clock_ms":0},"error":"budget exceeded: 50 model turns","verdict":"unsure","question":null,"end_snapshot":null,"snapshot_error":null}"#,
    ),
    (
        "run.finished",
        r#"{"state":"completed","end_reason":"completed","usage":{"turns":2,"input_tokens":300,"output_tokens":40,"tool_calls":3,"wall_clock_ms":900},"total_usage":{"turns":8,"input_tokens":1500,"output_tokens":200,"tool_calls":9,"wall_clock_ms":2700},"error":null,"verdict":"met","question":null,"end_snapshot":null,"snapshot_error":null}"#,
    ),
    (
        "run.finished",
        r#"{"state":"completed","end_reason":"completed","usage":{"turns":1,"input_tokens":0,"output_tokens":0,"tool_calls":0,"wall_clock_ms":0},"error":null,"verdict":"met","question":null,"end_snapshot":null,"snapshot_error":"snapshotting /ws: over max_files","snapshot_limit":{"limit":"max_files","value":10000,"message":"over max_files"}}"#,
    ),
    (
        "subagent.status",
        r#"{"run_id":"run_0193a1b2c3d47e5f8a9b0c1d2e3f4a6c","session_id":"ses_0193a1b2c3d47e5f8a9b0c1d2e3f4a70","task_id":"api","profile":"build","status":"spawned","state":null,"verdict":null,"summary":null,"changed_paths":null}"#,
    ),
    (
        "subagent.status",
        r#"{"run_id":"run_0193a1b2c3d47e5f8a9b0c1d2e3f4a6c","session_id":"ses_0193a1b2c3d47e5f8a9b0c1d2e3f4a70","task_id":"api","profile":"build","status":"finished","state":"completed","verdict":"met","summary":"added the route","changed_paths":2}"#,
    ),
    (
        "parent.message",
        r#"{"message":"Also cover the error path."}"#,
    ),
    (
        "checkpoint.created",
        r#"{"checkpoint_id":"ckpt_0193a1b2c3d47e5f8a9b0c1d2e3f4ab4","reason":"tool_batch","files":120,"bytes":52000,"new_blobs":1,"new_bytes":812,"hashed_files":1,"duration_ms":4}"#,
    ),
    (
        "user.message",
        r#"{"message":"Use the v2 API instead.","steering_id":7}"#,
    ),
    (
        "model.delta",
        r#"{"part":"text","turn":2,"text":"Running the "}"#,
    ),
    (
        "model.delta",
        r#"{"part":"tool_call","turn":2,"call_id":"call_1","tool":"run_command"}"#,
    ),
    (
        "model.delta",
        r#"{"part":"tool_arguments","turn":2,"call_id":"call_1","json":"{\"command\":\"sh te"}"#,
    ),
    (
        "tool.output",
        r#"{"call_id":"call_1","tool":"run_command","stream":"stdout","text":"ok 1 - héllo\n","truncated":false}"#,
    ),
    (
        "store.waiting",
        r#"{"operation":"append_event","waiting":true,"error":"no space left to write during append_event: database or disk is full","waited_ms":0}"#,
    ),
    (
        "store.waiting",
        r#"{"operation":"append_event","waiting":false,"waited_ms":2150}"#,
    ),
    (
        "checkpoints.pruned",
        r#"{"checkpoints":["ckpt_0193a1b2c3d47e5f8a9b0c1d2e3f4ab4"],"kept":50,"max_per_session":50,"blobs_removed":3,"bytes_freed":61440}"#,
    ),
    (
        "run.started",
        r#"{"goal":"Spend little","success_criteria":[],"mode":"build","budgets":{"max_turns":10,"max_tokens":50000,"max_tool_calls":20,"max_wall_clock_ms":60000,"max_cost_micro_usd":500000},"model":"openai:gpt-4o","parent_run":null,"profile":null,"task_key":null}"#,
    ),
    (
        "run.finished",
        r#"{"state":"completed","end_reason":"completed","usage":{"turns":2,"input_tokens":300,"output_tokens":40,"tool_calls":1,"wall_clock_ms":900,"cost_micro_usd":1150},"total_usage":{"turns":7,"input_tokens":2100,"output_tokens":280,"tool_calls":9,"wall_clock_ms":1500,"cost_micro_usd":8050},"error":null,"verdict":"met","question":null,"end_snapshot":null,"snapshot_error":null}"#,
    ),
    (
        "run.started",
        r#"{"goal":"Fetch the package","success_criteria":[],"mode":"build","budgets":{"max_turns":10,"max_tokens":50000,"max_tool_calls":20,"max_wall_clock_ms":60000},"model":"openai:gpt-4o","parent_run":null,"profile":null,"task_key":null,"network":{"allowlist":["pypi.org","*.pythonhosted.org:443"]}}"#,
    ),
    (
        "run.started",
        r#"{"goal":"Call the API","success_criteria":[],"mode":"build","budgets":{"max_turns":10,"max_tokens":50000,"max_tool_calls":20,"max_wall_clock_ms":60000},"model":"openai:gpt-4o","parent_run":null,"profile":null,"task_key":null,"network":{"allowlist":["api.test"]},"secrets":[{"name":"API_KEY","hosts":["api.test","*.api.test:8443"]}]}"#,
    ),
    (
        "egress.decision",
        r#"{"sandbox_id":"sb-0193a1b2c3d47e5f8a9b0c1d2e3f4aa3","allowed":true,"host":"pypi.org","port":443,"via":"connect","bytes_out":2100,"bytes_in":880000,"duration_ms":420,"count":3}"#,
    ),
    (
        "egress.decision",
        r#"{"sandbox_id":"sb-0193a1b2c3d47e5f8a9b0c1d2e3f4aa3","allowed":false,"host":"169.254.169.254","port":80,"via":"transparent","reason":"169.254.169.254 is 169.254.169.254, the cloud metadata address","bytes_out":0,"bytes_in":0,"duration_ms":0,"count":1,"omitted":12}"#,
    ),
    (
        "checkpoint.failed",
        r#"{"reason":"tool_batch","error":"checkpoint of /ws: over max_files"}"#,
    ),
    (
        "run.started",
        r#"{"goal":"Call the API","success_criteria":[],"mode":"build","budgets":{"max_turns":10,"max_tokens":50000,"max_tool_calls":20,"max_wall_clock_ms":60000},"model":"openai:gpt-4o","parent_run":null,"profile":null,"task_key":null,"backend":"docker","image":"paddock-sandbox:bookworm","network":"full","secrets":[{"name":"API_TOKEN","hosts":["api.test"]}],"resumed_from":"run_0193a1b2c3d47e5f8a9b0c1d2e3f4a5b","restored_checkpoint":"ckpt_0193a1b2c3d47e5f8a9b0c1d2e3f4ab4","resume_budget":{"source":"left","spent":{"turns":3,"input_tokens":900,"output_tokens":120,"tool_calls":4,"wall_clock_ms":5000}}}"#,
    ),
    (
        "run.finished",
        r#"{"state":"cancelled","end_reason":"cancelled","usage":{"turns":1,"input_tokens":10,"output_tokens":2,"tool_calls":0,"wall_clock_ms":40},"error":null,"verdict":null,"question":null,"end_snapshot":null,"snapshot_error":null,"undelivered":[{"message":"Stop after the tests.","steering_id":9}]}"#,
    ),
];

fn usage(turns: u32, input: u64, output: u64, calls: u32, ms: u64) -> RunUsage {
    RunUsage {
        turns,
        input_tokens: input,
        output_tokens: output,
        tool_calls: calls,
        wall_clock_ms: ms,
        cost_micro_usd: 0,
    }
}

/// What each of [`STORED`] was written from, in the same order.
fn written() -> Vec<Event> {
    let run = RunId::parse(RUN).unwrap();
    let child = RunId::parse(CHILD_RUN).unwrap();
    let child_session = SessionId::parse(CHILD_SESSION).unwrap();
    let invocation = ToolInvocationId::parse(INVOCATION).unwrap();
    let sandbox = SandboxId::parse(SANDBOX).unwrap();
    let arguments = json!({"command": "sh test.sh", "timeout_secs": 60});
    let task = |key: &str, title: &str, status| PlanTask {
        key: key.into(),
        title: title.into(),
        status,
    };
    let subagent = |status, state, verdict, summary: Option<&str>, changed_paths| SubagentStatus {
        run_id: child.clone(),
        session_id: child_session.clone(),
        task_id: "api".into(),
        profile: SubagentProfile::Build,
        status,
        state,
        verdict,
        summary: summary.map(str::to_owned),
        changed_paths,
    };
    vec![
        RunStarted {
            goal: "Make the tests pass".into(),
            success_criteria: vec!["sh test.sh exits 0".into()],
            mode: RunMode::Build,
            budgets: Budgets {
                max_turns: 50,
                max_tokens: 2_000_000,
                max_tool_calls: 200,
                max_wall_clock_ms: 1_800_000,
                max_cost_micro_usd: None,
            },
            model: "scripted:inline".into(),
            driver: None,
            parent_run: None,
            profile: None,
            task_key: None,
            backend: Some("native".into()),
            image: None,
            network: None,
            secrets: vec![],
            resumed_from: None,
            restored_checkpoint: None,
            resume_budget: None,
        }
        .into(),
        RunStarted {
            goal: "Task api: Add the route\nand its tests".into(),
            success_criteria: vec![],
            mode: RunMode::Plan,
            budgets: Budgets {
                max_turns: 10,
                max_tokens: 50_000,
                max_tool_calls: 20,
                max_wall_clock_ms: 60_000,
                max_cost_micro_usd: None,
            },
            model: "openai:gpt-4o".into(),
            driver: None,
            parent_run: Some(run.clone()),
            profile: Some(SubagentProfile::Explore),
            task_key: Some("api".into()),
            backend: Some("docker".into()),
            image: Some("paddock-sandbox:bookworm".into()),
            network: None,
            secrets: vec![],
            resumed_from: None,
            restored_checkpoint: None,
            resume_budget: None,
        }
        .into(),
        RunStarted {
            goal: "Make the tests pass".into(),
            success_criteria: vec![],
            mode: RunMode::Build,
            budgets: Budgets {
                max_turns: 50,
                max_tokens: 2_000_000,
                max_tool_calls: 200,
                max_wall_clock_ms: 1_800_000,
                max_cost_micro_usd: None,
            },
            model: "scripted:inline".into(),
            driver: None,
            parent_run: None,
            profile: None,
            task_key: None,
            backend: None,
            image: None,
            network: None,
            secrets: vec![],
            resumed_from: Some(run.clone()),
            restored_checkpoint: None,
            resume_budget: None,
        }
        .into(),
        RunStateChanged {
            state: RunState::AwaitingUser,
            usage: usage(3, 1200, 340, 5, 8123),
        }
        .into(),
        RunQueued {
            reason: "tenant quota runs exceeded: 1 in use of 1, 1 asked".into(),
            ahead: 0,
            max_wait_ms: 900_000,
            request: Some(
                json!({"goal": "Make the tests pass", "model": {"spec": "openai:gpt-4o"}}),
            ),
        }
        .into(),
        RunQueued {
            reason: "1 earlier run(s) of tenant acme wait for a slot".into(),
            ahead: 1,
            max_wait_ms: 60_000,
            request: None,
        }
        .into(),
        SandboxReady {
            sandbox_id: sandbox.clone(),
            backend: "native".into(),
            read_only: true,
        }
        .into(),
        SandboxStopped {
            sandbox_id: sandbox.clone(),
            error: None,
        }
        .into(),
        SandboxStopped {
            sandbox_id: sandbox.clone(),
            error: Some("destroying the sandbox: the guest did not answer".into()),
        }
        .into(),
        ModelMessage {
            turn: 2,
            text: "Running the tests.".into(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "run_command".into(),
                arguments: arguments.clone(),
            }],
            usage: Some(Usage {
                input_tokens: 900,
                output_tokens: 42,
            }),
            compacted: false,
        }
        .into(),
        ModelMessage {
            turn: 1,
            text: String::new(),
            tool_calls: vec![],
            usage: None,
            compacted: true,
        }
        .into(),
        ContextCompacting {
            tokens_before: 6_400,
            context_window: 8_192,
            threshold: 6_083,
            messages_replaced: 41,
        }
        .into(),
        ContextCompacted {
            seq: 1,
            tokens_before: 6_400,
            tokens_after: 2_100,
            messages_replaced: 41,
            messages_kept: 6,
            fallback: false,
            error: None,
            summary_tokens: 380,
        }
        .into(),
        ContextCompacted {
            seq: 2,
            tokens_before: 6_300,
            tokens_after: 2_500,
            messages_replaced: 40,
            messages_kept: 5,
            fallback: true,
            error: Some("model endpoint answered HTTP 503: overloaded".into()),
            summary_tokens: 610,
        }
        .into(),
        ToolCallEvent {
            call_id: "call_1".into(),
            tool: "run_command".into(),
            arguments,
            invocation_id: invocation.clone(),
            idempotency_key: None,
        }
        .into(),
        ToolResultEvent {
            call_id: "call_1".into(),
            tool: "run_command".into(),
            invocation_id: Some(invocation),
            status: CallStatus::Succeeded,
            is_error: false,
            content: "ok 1 - héllo ✓\n[exit code 0 after 0.2s]".into(),
            truncated: false,
            duration_ms: 214,
        }
        .into(),
        ToolResultEvent {
            call_id: "call_2".into(),
            tool: "write_file".into(),
            invocation_id: None,
            status: CallStatus::Denied,
            is_error: true,
            content: "write_file is not allowed: plan mode".into(),
            truncated: false,
            duration_ms: 0,
        }
        .into(),
        ToolResultEvent {
            call_id: "call_3".into(),
            tool: "read_file".into(),
            invocation_id: None,
            status: CallStatus::Hint,
            is_error: true,
            content: "\"a.txt\" was read already".into(),
            truncated: true,
            duration_ms: 3,
        }
        .into(),
        PlanUpdated {
            version: 2,
            explanation: Some("Tests first".into()),
            tasks: vec![
                task("1", "Read the code", TaskStatus::Done),
                task("2", "Fix the bug", TaskStatus::InProgress),
                task("3", "Run the tests", TaskStatus::Pending),
                task("4", "Ask", TaskStatus::Blocked),
                task("5", "Docs", TaskStatus::Cancelled),
            ],
        }
        .into(),
        PlanUpdated {
            version: 1,
            explanation: None,
            tasks: vec![],
        }
        .into(),
        Progress {
            message: "Half way: \"parser\" done".into(),
        }
        .into(),
        Review {
            verdict: Verdict::Met,
            summary: "The tests pass.".into(),
            evidence: vec!["sh test.sh exited 0".into()],
            remaining: vec![],
            criteria: vec![CriterionReview {
                criterion: "sh test.sh exits 0".into(),
                verdict: Verdict::Met,
                evidence: Some("exit code 0".into()),
            }],
        }
        .into(),
        Review {
            verdict: Verdict::Unsure,
            summary: String::new(),
            evidence: vec![],
            remaining: vec!["no command exited 0 after the last change".into()],
            criteria: vec![CriterionReview {
                criterion: "docs updated".into(),
                verdict: Verdict::NotMet,
                evidence: None,
            }],
        }
        .into(),
        RunFinished {
            state: RunState::Completed,
            end_reason: EndReason::Completed,
            usage: usage(4, 5000, 600, 6, 12_500),
            total_usage: None,
            error: None,
            verdict: Some(Verdict::Met),
            question: None,
            end_snapshot: Some(SnapshotId::parse(SNAPSHOT).unwrap()),
            snapshot_error: None,
            snapshot_limit: None,
            undelivered: vec![],
        }
        .into(),
        RunFinished {
            state: RunState::AwaitingUser,
            end_reason: EndReason::AwaitingUser,
            usage: usage(1, 10, 2, 1, 40),
            total_usage: None,
            error: None,
            verdict: None,
            question: Some("Which database?".into()),
            end_snapshot: None,
            snapshot_error: Some("packing the workspace: disk full".into()),
            snapshot_limit: None,
            undelivered: vec![],
        }
        .into(),
        RunFinished {
            state: RunState::Failed,
            end_reason: EndReason::BudgetExceeded,
            usage: usage(50, 0, 0, 0, 0),
            total_usage: None,
            error: Some("budget exceeded: 50 model turns".into()),
            verdict: Some(Verdict::Unsure),
            question: None,
            end_snapshot: None,
            snapshot_error: None,
            snapshot_limit: None,
            undelivered: vec![],
        }
        .into(),
        RunFinished {
            state: RunState::Completed,
            end_reason: EndReason::Completed,
            usage: usage(2, 300, 40, 3, 900),
            total_usage: Some(usage(8, 1500, 200, 9, 2700)),
            error: None,
            verdict: Some(Verdict::Met),
            question: None,
            end_snapshot: None,
            snapshot_error: None,
            snapshot_limit: None,
            undelivered: vec![],
        }
        .into(),
        RunFinished {
            state: RunState::Completed,
            end_reason: EndReason::Completed,
            usage: usage(1, 0, 0, 0, 0),
            total_usage: None,
            error: None,
            verdict: Some(Verdict::Met),
            question: None,
            end_snapshot: None,
            snapshot_error: Some("snapshotting /ws: over max_files".into()),
            snapshot_limit: Some(SnapshotLimitHit {
                limit: SnapshotLimitKind::MaxFiles,
                value: 10_000,
                message: "over max_files".into(),
            }),
            undelivered: vec![],
        }
        .into(),
        subagent(SubagentPhase::Spawned, None, None, None, None).into(),
        subagent(
            SubagentPhase::Finished,
            Some(RunState::Completed),
            Some(Verdict::Met),
            Some("added the route"),
            Some(2),
        )
        .into(),
        ParentMessage {
            message: "Also cover the error path.".into(),
        }
        .into(),
        CheckpointCreated {
            checkpoint_id: CheckpointId::parse("ckpt_0193a1b2c3d47e5f8a9b0c1d2e3f4ab4").unwrap(),
            reason: CheckpointReason::ToolBatch,
            files: 120,
            bytes: 52_000,
            new_blobs: 1,
            new_bytes: 812,
            hashed_files: 1,
            duration_ms: 4,
        }
        .into(),
        UserMessage {
            message: "Use the v2 API instead.".into(),
            steering_id: 7,
        }
        .into(),
        ModelDelta::Text {
            turn: 2,
            text: "Running the ".into(),
        }
        .into(),
        ModelDelta::ToolCall {
            turn: 2,
            call_id: "call_1".into(),
            tool: "run_command".into(),
        }
        .into(),
        ModelDelta::ToolArguments {
            turn: 2,
            call_id: "call_1".into(),
            json: "{\"command\":\"sh te".into(),
        }
        .into(),
        ToolOutputChunk {
            call_id: "call_1".into(),
            tool: "run_command".into(),
            stream: "stdout".into(),
            text: "ok 1 - héllo\n".into(),
            truncated: false,
        }
        .into(),
        StoreWaiting {
            operation: "append_event".into(),
            waiting: true,
            error: Some(
                "no space left to write during append_event: database or disk is full".into(),
            ),
            waited_ms: 0,
        }
        .into(),
        StoreWaiting {
            operation: "append_event".into(),
            waiting: false,
            error: None,
            waited_ms: 2150,
        }
        .into(),
        CheckpointsPruned {
            checkpoints: vec![
                CheckpointId::parse("ckpt_0193a1b2c3d47e5f8a9b0c1d2e3f4ab4").unwrap(),
            ],
            kept: 50,
            max_per_session: 50,
            blobs_removed: 3,
            bytes_freed: 61_440,
        }
        .into(),
        RunStarted {
            goal: "Spend little".into(),
            success_criteria: vec![],
            mode: RunMode::Build,
            budgets: Budgets {
                max_turns: 10,
                max_tokens: 50_000,
                max_tool_calls: 20,
                max_wall_clock_ms: 60_000,
                max_cost_micro_usd: Some(500_000),
            },
            model: "openai:gpt-4o".into(),
            driver: None,
            parent_run: None,
            profile: None,
            task_key: None,
            // written before runs named their backend
            backend: None,
            image: None,
            network: None,
            secrets: vec![],
            resumed_from: None,
            restored_checkpoint: None,
            resume_budget: None,
        }
        .into(),
        RunFinished {
            state: RunState::Completed,
            end_reason: EndReason::Completed,
            usage: RunUsage {
                cost_micro_usd: 1_150,
                ..usage(2, 300, 40, 1, 900)
            },
            total_usage: Some(RunUsage {
                cost_micro_usd: 8_050,
                ..usage(7, 2_100, 280, 9, 1_500)
            }),
            error: None,
            verdict: Some(Verdict::Met),
            question: None,
            end_snapshot: None,
            snapshot_error: None,
            snapshot_limit: None,
            undelivered: vec![],
        }
        .into(),
        RunStarted {
            goal: "Fetch the package".into(),
            success_criteria: vec![],
            mode: RunMode::Build,
            budgets: Budgets {
                max_turns: 10,
                max_tokens: 50_000,
                max_tool_calls: 20,
                max_wall_clock_ms: 60_000,
                max_cost_micro_usd: None,
            },
            model: "openai:gpt-4o".into(),
            driver: None,
            parent_run: None,
            profile: None,
            task_key: None,
            backend: None,
            image: None,
            network: Some("allow:pypi.org,*.pythonhosted.org:443".parse().unwrap()),
            secrets: vec![],
            resumed_from: None,
            restored_checkpoint: None,
            resume_budget: None,
        }
        .into(),
        RunStarted {
            goal: "Call the API".into(),
            success_criteria: vec![],
            mode: RunMode::Build,
            budgets: Budgets {
                max_turns: 10,
                max_tokens: 50_000,
                max_tool_calls: 20,
                max_wall_clock_ms: 60_000,
                max_cost_micro_usd: None,
            },
            model: "openai:gpt-4o".into(),
            driver: None,
            parent_run: None,
            profile: None,
            task_key: None,
            backend: None,
            image: None,
            network: Some("allow:api.test".parse().unwrap()),
            // names and hosts only: a value is never in an event
            secrets: vec![paddock_proto::SecretNotice {
                name: "API_KEY".into(),
                hosts: vec![
                    "api.test".parse().unwrap(),
                    "*.api.test:8443".parse().unwrap(),
                ],
            }],
            resumed_from: None,
            restored_checkpoint: None,
            resume_budget: None,
        }
        .into(),
        EgressDecisionEvent {
            sandbox_id: sandbox.clone(),
            decision: EgressDecision {
                allowed: true,
                host: "pypi.org".into(),
                port: 443,
                via: "connect".into(),
                reason: None,
                bytes_out: 2100,
                bytes_in: 880_000,
                duration_ms: 420,
            },
            count: 3,
            omitted: 0,
        }
        .into(),
        EgressDecisionEvent {
            sandbox_id: sandbox,
            decision: EgressDecision {
                allowed: false,
                host: "169.254.169.254".into(),
                port: 80,
                via: "transparent".into(),
                reason: Some(
                    "169.254.169.254 is 169.254.169.254, the cloud metadata address".into(),
                ),
                bytes_out: 0,
                bytes_in: 0,
                duration_ms: 0,
            },
            count: 1,
            omitted: 12,
        }
        .into(),
        CheckpointFailed {
            reason: CheckpointReason::ToolBatch,
            error: "checkpoint of /ws: over max_files".into(),
        }
        .into(),
        RunStarted {
            goal: "Call the API".into(),
            success_criteria: vec![],
            mode: RunMode::Build,
            budgets: Budgets {
                max_turns: 10,
                max_tokens: 50_000,
                max_tool_calls: 20,
                max_wall_clock_ms: 60_000,
                max_cost_micro_usd: None,
            },
            model: "openai:gpt-4o".into(),
            driver: None,
            parent_run: None,
            profile: None,
            task_key: None,
            backend: Some("docker".into()),
            image: Some("paddock-sandbox:bookworm".into()),
            network: Some(paddock_proto::NetworkPolicy::Full),
            secrets: vec![paddock_proto::SecretNotice {
                name: "API_TOKEN".into(),
                hosts: vec!["api.test".parse().unwrap()],
            }],
            resumed_from: Some(run.clone()),
            restored_checkpoint: Some(
                CheckpointId::parse("ckpt_0193a1b2c3d47e5f8a9b0c1d2e3f4ab4").unwrap(),
            ),
            resume_budget: Some(ResumeBudget {
                source: BudgetSource::Left,
                spent: usage(3, 900, 120, 4, 5_000),
            }),
        }
        .into(),
        RunFinished {
            state: RunState::Cancelled,
            end_reason: EndReason::Cancelled,
            usage: usage(1, 10, 2, 0, 40),
            total_usage: None,
            error: None,
            verdict: None,
            question: None,
            end_snapshot: None,
            snapshot_error: None,
            snapshot_limit: None,
            undelivered: vec![UserMessage {
                message: "Stop after the tests.".into(),
                steering_id: 9,
            }],
        }
        .into(),
    ]
}

#[test]
fn every_kind_has_a_stored_fixture() {
    let stored: BTreeSet<&str> = STORED.iter().map(|(kind, _)| *kind).collect();
    let typed: BTreeSet<&str> = Event::KINDS.iter().copied().collect();
    assert_eq!(stored, typed);
    assert_eq!(Event::KINDS.len(), 24);
}

#[test]
fn stored_events_decode_to_what_was_written_and_encode_to_the_same_bytes() {
    let written = written();
    assert_eq!(written.len(), STORED.len());
    for ((kind, payload), event) in STORED.iter().zip(&written) {
        let decoded = Event::decode(kind, payload);
        assert_eq!(&decoded, event, "{kind} {payload}");
        assert_eq!(decoded.kind(), *kind);
        assert_eq!(decoded.encode().unwrap(), *payload, "{kind}");
        assert_eq!(event.encode().unwrap(), *payload, "{kind}");
    }
}

#[test]
fn payload_types_name_their_stored_kinds() {
    let kinds = [
        RunStarted::KIND,
        RunStateChanged::KIND,
        RunQueued::KIND,
        SandboxReady::KIND,
        SandboxStopped::KIND,
        EgressDecisionEvent::KIND,
        ModelMessage::KIND,
        ContextCompacting::KIND,
        ContextCompacted::KIND,
        ToolCallEvent::KIND,
        ToolResultEvent::KIND,
        PlanUpdated::KIND,
        Progress::KIND,
        Review::KIND,
        RunFinished::KIND,
        SubagentStatus::KIND,
        ParentMessage::KIND,
        CheckpointCreated::KIND,
        CheckpointFailed::KIND,
        UserMessage::KIND,
        ModelDelta::KIND,
        ToolOutputChunk::KIND,
        StoreWaiting::KIND,
        CheckpointsPruned::KIND,
    ];
    assert_eq!(
        kinds,
        [
            "run.started",
            "run.state",
            "run.queued",
            "sandbox.ready",
            "sandbox.stopped",
            "egress.decision",
            "model.message",
            "context.compacting",
            "context.compacted",
            "tool.call",
            "tool.result",
            "plan.updated",
            "progress",
            "run.review",
            "run.finished",
            "subagent.status",
            "parent.message",
            "checkpoint.created",
            "checkpoint.failed",
            "user.message",
            "model.delta",
            "tool.output",
            "store.waiting",
            "checkpoints.pruned",
        ]
    );
}

/// Rows as an earlier version wrote them, an unknown kind among them, read
/// back through the runtime's live stream: each decodes, none stops it.
#[tokio::test]
async fn a_store_of_earlier_events_reads_back_typed_through_the_stream() {
    let h = Harness::new().await;
    let session = h.session("legacy").await;
    let lease = h
        .store
        .acquire_lease(
            &Lease::session_resource(&session.id),
            "earlier-version",
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    let unknown = ("child.spawned", r#"{"run_id":"run_x","note":"newer"}"#);
    let mut rows: Vec<(&str, &str)> = STORED.to_vec();
    rows.insert(3, unknown);
    let new_events: Vec<NewEvent> = rows
        .iter()
        .map(|(kind, payload)| NewEvent {
            session: session.id.clone(),
            run: None,
            kind: (*kind).to_owned(),
            payload: (*payload).to_owned(),
        })
        .collect();
    h.store
        .append_events(&lease, &h.tenant, &new_events)
        .await
        .unwrap();

    let stream = h
        .runtime
        .event_stream(&h.tenant, &session.id, 0)
        .await
        .unwrap();
    let read: Vec<_> = tokio::time::timeout(
        Duration::from_secs(10),
        stream.take(rows.len()).collect::<Vec<_>>(),
    )
    .await
    .expect("every stored event is streamed");
    let read: Vec<_> = read.into_iter().map(Result::unwrap).collect();
    let seqs: Vec<u64> = read.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=rows.len() as u64).collect::<Vec<_>>());

    let mut expected = written();
    expected.insert(
        3,
        Event::Other(OtherEvent {
            kind: unknown.0.into(),
            payload: unknown.1.into(),
            error: None,
        }),
    );
    let decoded: Vec<Event> = read.iter().map(Event::of).collect();
    assert_eq!(decoded, expected);
    for (event, (kind, payload)) in read.iter().zip(&rows) {
        assert_eq!(event.kind, *kind);
        assert_eq!(event.payload, *payload);
    }
}
