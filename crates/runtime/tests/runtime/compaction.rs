//! Long runs against a small context window, end to end with a scripted
//! model, a real SQLite store and real native sandboxes: a 60-turn run on an
//! 8k window compacts (the summary requests are the script's summary steps),
//! continues and completes without losing a stored tool result; a failing
//! summary call falls back to a summary built from the history; a new run of
//! the session starts from the latest compaction, in this process and in a
//! new one over the same database.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use paddock_core::model::{
    ContentPart, ContextProfile, Message, ModelRequest, RequestPurpose, Role,
};
use paddock_core::store::{Budgets, RunState};
use paddock_runtime::tools::ToolRegistry;
use paddock_runtime::{Runtime, RuntimeConfig, RuntimeDeps, StartRun};
use paddock_test_support::{Stack, StackConfig};
use serde_json::{Value, json};
use support::{Harness, call, complete_met, turn};

const WINDOW: u32 = 8_192;
const TURNS: usize = 60;

/// 59 commands with ~1k characters of output each, then `complete_task`;
/// `summaries` summary steps in between.
fn long_script(summaries: Vec<Value>) -> Vec<Value> {
    let mut turns: Vec<Value> = (0..TURNS - 1)
        .map(|n| {
            let from = n * 1_000;
            turn(
                &format!("Step {n}: listing block {from}."),
                vec![call(
                    "run_command",
                    json!({"command": format!("seq {from} {}", from + 150)}),
                )],
            )
        })
        .collect();
    turns.extend(summaries);
    turns.push(turn("All blocks listed.", vec![complete_met(vec![])]));
    turns
}

fn summary_step(n: usize) -> Value {
    json!({
        "summary": true,
        "text": format!(
            "Goal:\n- list every block\nDone:\n- listed the blocks up to summary {n}\nTo do:\n- \
             list the rest\nConstraints:\n- none\nDecisions:\n- use seq\nFiles touched:\n- none\n\
             Open risks and questions:\n- none"
        ),
    })
}

fn budgets() -> Budgets {
    Budgets {
        max_turns: 100,
        max_tool_calls: 200,
        ..Budgets::default()
    }
}

fn is_summary(message: &Message) -> bool {
    message.role == Role::User && message.joined_text().starts_with("[Summary of the earlier")
}

/// Every tool call in `messages` has its result in the next message.
fn assert_paired(messages: &[Message]) {
    for (i, message) in messages.iter().enumerate() {
        let calls: Vec<&str> = message.tool_calls().map(|c| c.id.as_str()).collect();
        if calls.is_empty() {
            continue;
        }
        let next = messages
            .get(i + 1)
            .expect("a call is followed by its results");
        let answered: Vec<&str> = next
            .content
            .iter()
            .filter_map(|p| match p {
                ContentPart::ToolResult(r) => Some(r.call_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(calls, answered, "message {i}");
    }
    // and no result without its call before it
    if let Some(first) = messages.first() {
        assert_ne!(first.role, Role::Tool, "a result separated from its call");
    }
}

fn agent_requests(requests: &[ModelRequest]) -> Vec<&ModelRequest> {
    requests
        .iter()
        .filter(|r| r.purpose == RequestPurpose::Turn)
        .collect()
}

#[tokio::test]
async fn a_60_turn_run_on_an_8k_window_compacts_continues_and_completes() {
    let h = Harness::new().await;
    let session = h.session("long").await;
    let model = h.script_with_window(
        "long",
        json!(long_script((0..30).map(summary_step).collect())),
        WINDOW,
    );
    let mut request = StartRun::new("List every block of numbers", model.clone());
    request.budgets = budgets();
    let run = h
        .runtime
        .start_run(&h.tenant, &session.id, request)
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(run.state, RunState::Completed, "{run:?}");
    assert_eq!(run.usage.turns, TURNS as u32);

    let compacted = h.payloads(&session.id, "context.compacted").await;
    let compacting = h.payloads(&session.id, "context.compacting").await;
    assert!(compacted.len() >= 2, "{compacted:?}");
    assert_eq!(compacting.len(), compacted.len());
    let profile = ContextProfile::for_window(WINDOW);
    for c in &compacted {
        assert_eq!(c["fallback"], false, "{c}");
        let after = c["tokens_after"].as_u64().unwrap();
        assert!(after < u64::from(WINDOW) / 2, "after compaction: {c}");
        assert!(c["tokens_before"].as_u64().unwrap() > profile.compaction_threshold());
    }

    // one summary call per compaction, each answered by a summary step
    let requests = model.requests();
    let summaries = requests
        .iter()
        .filter(|r| r.purpose == RequestPurpose::Summary)
        .count();
    assert_eq!(summaries, compacted.len());
    for r in requests
        .iter()
        .filter(|r| r.purpose == RequestPurpose::Summary)
    {
        assert!(
            r.estimate_tokens() < u64::from(WINDOW),
            "a summary request fits"
        );
        assert!(r.tools.is_empty());
    }
    // every agent request fits the window less the answer's budget, and
    // those after a compaction open with its summary
    let agent = agent_requests(&requests);
    assert_eq!(agent.len(), TURNS);
    for r in &agent {
        assert!(
            r.estimate_tokens() <= profile.effective_window(),
            "{}",
            r.estimate_tokens()
        );
        assert_paired(&r.messages);
    }
    assert!(is_summary(&agent.last().unwrap().messages[0]));
    assert!(
        agent.last().unwrap().messages[0]
            .joined_text()
            .contains(&format!("up to summary {}", compacted.len() - 1))
    );

    // the stored history keeps every message and every result
    let stored: Vec<Message> = h
        .store
        .list_messages(&h.tenant, &session.id, None)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    assert_paired(&stored);
    let results = stored
        .iter()
        .flat_map(|m| &m.content)
        .filter(|p| matches!(p, ContentPart::ToolResult(_)))
        .count();
    assert_eq!(results, TURNS);
    assert!(!stored.iter().any(is_summary), "summaries are not history");

    // the compactions are stored, in order, each naming what it replaced
    let stored_compactions = h
        .store
        .list_compactions(&h.tenant, &session.id)
        .await
        .unwrap();
    assert_eq!(stored_compactions.len(), compacted.len());
    for pair in stored_compactions.windows(2) {
        assert!(pair[0].through_seq < pair[1].through_seq);
        assert_eq!(pair[0].seq + 1, pair[1].seq);
    }
    let latest = stored_compactions.last().unwrap();
    assert!(latest.summary.contains("Files touched"));
    assert!(latest.tokens_after < latest.tokens_before);

    // a new run of the session starts from the latest compaction
    let next = h.script_with_window(
        "next",
        json!([turn("Nothing left.", vec![complete_met(vec![])])]),
        WINDOW,
    );
    let run2 = h
        .runtime
        .start_run(
            &h.tenant,
            &session.id,
            StartRun::new("Check the list", next.clone()),
        )
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(run2.state, RunState::Completed, "{run2:?}");
    let first = &next.requests()[0];
    assert!(is_summary(&first.messages[0]));
    assert_eq!(
        first.messages[0].joined_text().lines().nth(1),
        latest.summary.lines().next()
    );
    let after_latest = stored.len() as u64 - latest.through_seq;
    // the summary, the messages after the compaction, the new goal
    assert_eq!(first.messages.len() as u64, 1 + after_latest + 1);
    assert_paired(&first.messages);

    // a run of the session in a new process over the same database starts
    // from the summary too: nothing the summary replaced is sent again
    let stack = Stack::open(&StackConfig::in_dir(h.dir.path(), "paddock-test"))
        .await
        .unwrap();
    let restarted = Runtime::with_registry(
        RuntimeDeps {
            store: stack.store,
            backend: stack.backend,
            blobs: stack.blobs,
            config: RuntimeConfig::new(support::NODE, h.dir.path().join("workspaces")),
        },
        ToolRegistry::builtin(),
    );
    let before_run3 = h
        .store
        .list_messages(&h.tenant, &session.id, None)
        .await
        .unwrap()
        .len() as u64;
    assert!(
        before_run3 > stored.len() as u64,
        "the second run's messages"
    );
    let again = h.script_with_window(
        "again",
        json!([turn("Still nothing left.", vec![complete_met(vec![])])]),
        WINDOW,
    );
    let run3 = restarted
        .start_run(
            &h.tenant,
            &session.id,
            StartRun::new("Check the list once more", again.clone()),
        )
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(run3.state, RunState::Completed, "{run3:?}");
    let first = &again.requests()[0];
    assert!(is_summary(&first.messages[0]));
    assert_eq!(
        first.messages[0].joined_text().lines().nth(1),
        latest.summary.lines().next()
    );
    for early in ["Step 0: listing block 0.", "List every block of numbers"] {
        assert!(
            first
                .messages
                .iter()
                .all(|m| !m.joined_text().contains(early)),
            "{early:?} was replaced by the summary"
        );
    }
    assert_eq!(
        first.messages.len() as u64,
        1 + (before_run3 - latest.through_seq) + 1,
        "the summary, what followed it (the second run's messages too), the new goal"
    );
    assert!(
        first
            .messages
            .last()
            .unwrap()
            .joined_text()
            .starts_with("Goal: Check the list once more")
    );
    assert_paired(&first.messages);
}

#[tokio::test]
async fn a_failing_summary_call_falls_back_and_the_run_completes() {
    let h = Harness::new().await;
    let session = h.session("fallback").await;
    let failing: Vec<Value> = (0..30)
        .map(|_| json!({"summary": true, "error": "overloaded"}))
        .collect();
    let model = h.script_with_window("fallback", json!(long_script(failing)), WINDOW);
    let mut request = StartRun::new("List every block of numbers", model.clone());
    request.budgets = budgets();
    let run = h
        .runtime
        .start_run(&h.tenant, &session.id, request)
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(run.state, RunState::Completed, "{run:?}");

    let compacted = h.payloads(&session.id, "context.compacted").await;
    assert!(!compacted.is_empty());
    for c in &compacted {
        assert_eq!(c["fallback"], true, "{c}");
        assert!(c["error"].as_str().unwrap().contains("overloaded"), "{c}");
        // a fallback summary is longer than the script's: it fits the
        // effective window, not always half of it (the tool schemas alone
        // take ~3.6k tokens of the 8k)
        let after = c["tokens_after"].as_u64().unwrap();
        assert!(after < c["tokens_before"].as_u64().unwrap(), "{c}");
        assert!(
            after <= ContextProfile::for_window(WINDOW).compaction_threshold(),
            "{c}"
        );
    }
    let latest = h
        .store
        .latest_compaction(&h.tenant, &session.id)
        .await
        .unwrap()
        .unwrap();
    assert!(latest.fallback);
    assert!(
        latest
            .summary
            .starts_with("Goal:\n- List every block of numbers\n")
    );
    assert!(latest.summary.contains("seq"), "{}", latest.summary);
    let agent = agent_requests(&model.requests()).len();
    assert_eq!(agent, TURNS);
}
