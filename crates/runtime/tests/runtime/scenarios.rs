//! Runs end to end with a scripted model, a real SQLite store and real
//! native sandboxes: the fix-the-failing-test loop, the review's honesty,
//! plan mode at both layers, every budget, and the repeat guard.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use paddock_core::store::{Budgets, EndReason, GoalStatus, RunMode, RunState, ToolStatus, Verdict};
use paddock_proto::ExecSpec;
use paddock_runtime::StartRun;
use paddock_runtime::tools::{
    Access, Replay, Role, Tool, ToolContext, ToolContract, ToolError, ToolOutput, ToolRegistry,
};
use serde_json::{Value, json};
use support::{Harness, call, complete_met, tool_results, turn};

const BUGGY: &str = "add() { echo $(( $1 - $2 )); }\n";
const TEST: &str = ". ./add.sh\nif [ \"$(add 2 3)\" = 5 ]; then echo PASS; else echo \"FAIL: add 2 3 gave $(add 2 3)\"; exit 1; fi\n";

#[tokio::test]
async fn a_goal_is_coded_tested_fixed_retested_and_met() {
    let h = Harness::new().await;
    let session = h.session("adder").await;
    let model = h.script(
        "fix",
        json!([
            turn(
                "Plan first.",
                vec![call(
                    "update_plan",
                    json!({"steps": [
                        {"id": "1", "title": "write add.sh and its test", "status": "in_progress"},
                        {"id": "2", "title": "make the test pass", "status": "pending"}
                    ]})
                )]
            ),
            turn(
                "Writing code and test.",
                vec![
                    call("write_file", json!({"path": "add.sh", "content": BUGGY})),
                    call("write_file", json!({"path": "test.sh", "content": TEST})),
                ]
            ),
            turn(
                "",
                vec![call("run_command", json!({"command": "sh test.sh"}))]
            ),
            turn(
                "The sign is wrong.",
                vec![call(
                    "edit_file",
                    json!({
                        "path": "add.sh", "old_string": "$1 - $2", "new_string": "$1 + $2"
                    })
                )]
            ),
            turn(
                "",
                vec![call("run_command", json!({"command": "sh test.sh"}))]
            ),
            turn(
                "",
                vec![call("report_progress", json!({"message": "tests pass"}))]
            ),
            turn(
                "Done.",
                vec![complete_met(vec![(
                    "sh test.sh passes",
                    "sh test.sh printed PASS"
                )])]
            ),
        ]),
    );
    let mut request = StartRun::new(
        "Write add.sh with an add function and a test",
        model.clone(),
    );
    request.success_criteria = vec!["sh test.sh passes".into()];
    let handle = h
        .runtime
        .start_run(&h.tenant, &session.id, request)
        .await
        .unwrap();
    assert_eq!(handle.run.state, RunState::Preparing);
    let run = handle.wait().await.unwrap();

    assert_eq!(
        (run.state, run.end_reason, run.error.as_deref()),
        (RunState::Completed, Some(EndReason::Completed), None),
        "{run:?}"
    );
    let review = run.review.clone().unwrap();
    assert_eq!(review.verdict, Verdict::Met, "{review:?}");
    assert_eq!(review.criteria[0].verdict, Verdict::Met);
    assert!(run.end_snapshot.is_some());
    assert_eq!(run.usage.turns, 7);
    assert_eq!(run.usage.tool_calls, 8);

    // the workspace on the host holds the fixed code
    assert_eq!(
        h.read(&h.project, "add.sh").unwrap(),
        "add() { echo $(( $1 + $2 )); }\n"
    );
    // the model saw the failure, then the pass
    let results = tool_results(&h, &session.id).await;
    let outputs: Vec<&str> = results.iter().map(|(c, _)| c.as_str()).collect();
    assert!(outputs[3].contains("FAIL: add 2 3 gave -1"), "{outputs:?}");
    assert!(outputs[5].contains("PASS"), "{outputs:?}");
    // and it saw it in the next request
    let requests = model.requests();
    assert_eq!(requests.len(), 7);
    let fourth = serde_json::to_string(&requests[3].messages).unwrap();
    assert!(fourth.contains("FAIL: add 2 3 gave -1"));

    // every invocation is logged with its result
    let invocations = h
        .store
        .list_tool_invocations(&h.tenant, &run.id)
        .await
        .unwrap();
    let names: Vec<&str> = invocations.iter().map(|i| i.tool.as_str()).collect();
    assert_eq!(
        names,
        [
            "update_plan",
            "write_file",
            "write_file",
            "run_command",
            "edit_file",
            "run_command",
            "report_progress",
            "complete_task"
        ]
    );
    assert!(
        invocations
            .iter()
            .all(|i| i.status == ToolStatus::Succeeded && i.output.is_some())
    );

    // goal, plan and the state machine's path
    let goals = h.store.list_goals(&h.tenant, &session.id).await.unwrap();
    assert_eq!(goals[0].status, GoalStatus::Met);
    let plan = h
        .store
        .get_plan(&h.tenant, &session.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(plan.tasks.len(), 2);
    let states: Vec<String> = h
        .payloads(&session.id, "run.state")
        .await
        .into_iter()
        .map(|p| p["state"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(states.first().map(String::as_str), Some("planning"));
    assert_eq!(&states[states.len() - 2..], ["acting", "verifying"]);
    assert!(states.contains(&"observing".to_owned()));
    let kinds: Vec<String> = h
        .events(&session.id)
        .await
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("run.started"));
    assert_eq!(
        &kinds[kinds.len() - 3..],
        ["sandbox.stopped", "run.review", "run.finished"]
    );
    for kind in [
        "sandbox.ready",
        "model.message",
        "tool.call",
        "tool.result",
        "plan.updated",
        "progress",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "no {kind} in {kinds:?}");
    }
    let finished = h.payloads(&session.id, "run.finished").await;
    assert_eq!(finished[0]["verdict"], "met");
    assert_eq!(finished[0]["state"], "completed");
}

#[tokio::test]
async fn a_met_claim_without_evidence_is_reviewed_as_unsure() {
    let h = Harness::new().await;
    let session = h.session("claims").await;
    let model = h.script(
        "claim",
        json!([
            turn(
                "",
                vec![call(
                    "write_file",
                    json!({"path": "add.sh", "content": BUGGY})
                )]
            ),
            turn(
                "All good!",
                vec![call(
                    "complete_task",
                    json!({
                        "verdict": "met",
                        "summary": "add.sh written",
                        "evidence": ["I wrote the function"],
                    })
                )]
            ),
        ]),
    );
    let mut request = StartRun::new("Write add.sh", model);
    request.success_criteria = vec!["sh test.sh passes".into()];
    let run = h
        .runtime
        .start_run(&h.tenant, &session.id, request)
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(run.state, RunState::Completed);
    let review = run.review.unwrap();
    assert_eq!(review.verdict, Verdict::Unsure);
    assert_eq!(
        review.remaining,
        vec![
            "unverified: no claim or evidence for the criterion \"sh test.sh passes\"".to_owned(),
            "unverified: files changed (add.sh) and no command succeeded after the last change, so nothing shows the final state works".to_owned(),
        ]
    );
    let goals = h.store.list_goals(&h.tenant, &session.id).await.unwrap();
    assert_eq!(goals[0].status, GoalStatus::Unsure);
    assert_eq!(
        h.payloads(&session.id, "run.finished").await[0]["verdict"],
        "unsure"
    );
}

/// A tool that claims to be read-only but runs a shell command: what the
/// second layer (the read-only sandbox) is for.
#[derive(Debug)]
struct ShellProbe(ToolContract);

impl ShellProbe {
    fn new() -> Self {
        Self(ToolContract {
            name: "shell_probe",
            description: "Runs a shell command (declared read-only).",
            parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
            role: Role::Workspace,
            access: Access::ReadOnly,
            replay: Replay::Safe,
            timeout: Duration::from_secs(10),
            path_argument: None,
        })
    }
}

#[async_trait]
impl Tool for ShellProbe {
    fn contract(&self) -> &ToolContract {
        &self.0
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let command = arguments["command"].as_str().unwrap_or_default().to_owned();
        let spec = ExecSpec {
            argv: vec!["sh".into(), "-c".into(), command],
            ..ExecSpec::default()
        };
        let out = ctx
            .guest
            .exec_output(spec, &[])
            .await
            .map_err(|source| ToolError::Guest {
                tool: "shell_probe".into(),
                source,
            })?;
        let mut output = ToolOutput::text(format!(
            "exit {:?}\n{}",
            out.exit.code,
            String::from_utf8_lossy(&out.stderr)
        ));
        output.is_error = out.exit.code != Some(0);
        Ok(output)
    }
}

#[tokio::test]
async fn plan_mode_refuses_writes_at_the_tool_layer_and_in_the_sandbox() {
    let mut registry = ToolRegistry::builtin();
    registry.register(Arc::new(ShellProbe::new()));
    let h = Harness::with_registry(registry).await;
    std::fs::write(h.project.join("f"), "original\n").unwrap();
    let session = h.session("plan").await;
    let model = h.script(
        "plan",
        json!([
            turn(
                "",
                vec![
                    call("write_file", json!({"path": "f", "content": "changed"})),
                    call("run_command", json!({"command": "echo x > f"})),
                    call("read_file", json!({"path": "f"})),
                ]
            ),
            turn(
                "",
                vec![call("shell_probe", json!({"command": "echo x > f"}))]
            ),
            turn(
                "",
                vec![call(
                    "complete_task",
                    json!({
                        "verdict": "not_met", "summary": "plan mode cannot write"
                    })
                )]
            ),
        ]),
    );
    let mut request = StartRun::new("Change f", model.clone());
    request.mode = RunMode::Plan;
    let run = h
        .runtime
        .start_run(&h.tenant, &session.id, request)
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(
        (run.state, run.mode),
        (RunState::Completed, RunMode::Plan),
        "{run:?}"
    );

    // only read-only tools were offered
    let offered: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(
        !offered
            .iter()
            .any(|t| t == "write_file" || t == "run_command"),
        "{offered:?}"
    );
    assert!(offered.iter().any(|t| t == "read_file"));

    let results = tool_results(&h, &session.id).await;
    // tool layer: both writers denied, the read ran
    assert!(
        results[0].1 && results[0].0.contains("plan mode"),
        "{results:?}"
    );
    assert!(
        results[1].1 && results[1].0.contains("plan mode"),
        "{results:?}"
    );
    assert_eq!(
        (results[2].1, results[2].0.contains("original")),
        (false, true),
        "{results:?}"
    );
    // sandbox layer: the shell write that got past the tool layer failed in the kernel
    assert!(results[3].1, "{results:?}");
    assert!(
        results[3].0.contains("Read-only file system"),
        "{results:?}"
    );
    assert_eq!(h.read(&h.project, "f").unwrap(), "original\n");

    let statuses: Vec<Value> = h
        .payloads(&session.id, "tool.result")
        .await
        .into_iter()
        .map(|p| p["status"].clone())
        .collect();
    assert_eq!(&statuses[..2], [json!("denied"), json!("denied")]);
    assert_eq!(
        h.payloads(&session.id, "sandbox.ready").await[0]["read_only"],
        true
    );
}

async fn run_with_budgets(h: &Harness, turns: Value, budgets: Budgets) -> paddock_core::store::Run {
    let session = h.session("budget").await;
    let mut request = StartRun::new("Spend", h.script("budget", turns));
    request.budgets = budgets;
    h.runtime
        .start_run(&h.tenant, &session.id, request)
        .await
        .unwrap()
        .wait()
        .await
        .unwrap()
}

fn read(path: &str) -> Value {
    call("read_file", json!({ "path": path }))
}

#[tokio::test]
async fn each_budget_ends_the_run_as_budget_exceeded() {
    let h = Harness::new().await;
    std::fs::write(h.project.join("a"), "a\n").unwrap();
    let generous = Budgets::default();

    let run = run_with_budgets(
        &h,
        json!([
            turn("", vec![read("a")]),
            turn("", vec![read("a")]),
            turn("", vec![read("b")])
        ]),
        Budgets {
            max_turns: 2,
            ..generous
        },
    )
    .await;
    assert_eq!(
        (run.state, run.end_reason, run.error.as_deref()),
        (
            RunState::Failed,
            Some(EndReason::BudgetExceeded),
            Some("turns budget exceeded: used 2 of 2 model turns")
        )
    );
    assert_eq!(run.usage.turns, 2);

    let run = run_with_budgets(
        &h,
        json!([turn("", vec![read("a"), read("b"), read("c")])]),
        Budgets {
            max_tool_calls: 2,
            ..generous
        },
    )
    .await;
    assert_eq!(
        (run.state, run.end_reason, run.error.as_deref()),
        (
            RunState::Failed,
            Some(EndReason::BudgetExceeded),
            Some("tool calls budget exceeded: used 2 of 2 tool calls")
        )
    );
    let results = tool_results(&h, &run.session).await;
    assert_eq!(results.len(), 3, "every call of the turn has a result");
    assert_eq!(
        results[2],
        ("Not run: the run ended before this call.".to_owned(), true)
    );

    let run = run_with_budgets(
        &h,
        json!([{"text": "", "tool_calls": [read("a")], "usage": {"input_tokens": 600, "output_tokens": 500}}]),
        Budgets { max_tokens: 1_000, ..generous },
    )
    .await;
    assert_eq!(
        (run.state, run.end_reason, run.error.as_deref()),
        (
            RunState::Failed,
            Some(EndReason::BudgetExceeded),
            Some("tokens budget exceeded: used 1100 of 1000 tokens")
        )
    );
    assert_eq!(run.usage.tokens(), 1_100);

    let started = Instant::now();
    let run = run_with_budgets(
        &h,
        json!([turn(
            "",
            vec![call("run_command", json!({"command": "sleep 30"}))]
        )]),
        Budgets {
            max_wall_clock_ms: 1_500,
            ..generous
        },
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        (run.state, run.end_reason),
        (RunState::Failed, Some(EndReason::BudgetExceeded))
    );
    let error = run.error.unwrap();
    assert!(
        error.starts_with("wall clock budget exceeded: used 1"),
        "{error}"
    );
    assert!(error.ends_with("of 1500 ms"), "{error}");
}

#[tokio::test]
async fn the_third_identical_call_gets_a_hint_and_the_fourth_ends_the_run() {
    let h = Harness::new().await;
    std::fs::write(h.project.join("a"), "a\n").unwrap();
    let session = h.session("loop").await;
    let same = || turn("", vec![read("a")]);
    let request = StartRun::new(
        "Loop",
        h.script("loop", json!([same(), same(), same(), same(), same()])),
    );
    let run = h
        .runtime
        .start_run(&h.tenant, &session.id, request)
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(
        (run.state, run.end_reason),
        (RunState::Failed, Some(EndReason::RepeatedCall))
    );
    assert_eq!(
        run.error.as_deref(),
        Some(
            "read_file was called 4 times with identical arguments without a workspace change in between"
        )
    );
    assert_eq!(run.usage.turns, 4);
    let results = tool_results(&h, &session.id).await;
    assert_eq!(results.len(), 4);
    assert!(!results[0].1 && !results[1].1);
    assert!(
        results[2].1 && results[2].0.contains("third identical read_file call"),
        "{results:?}"
    );
    assert!(
        results[3].1 && results[3].0.contains("The run ends"),
        "{results:?}"
    );
    let statuses: Vec<Value> = h
        .payloads(&session.id, "tool.result")
        .await
        .into_iter()
        .map(|p| p["status"].clone())
        .collect();
    assert_eq!(
        statuses,
        [
            json!("succeeded"),
            json!("succeeded"),
            json!("hint"),
            json!("failed")
        ]
    );
}
