//! Budgets that hold, end to end with scripted models, a real SQLite store
//! and real native sandboxes: model calls are priced, a cost limit needs a
//! price, and a root run's subagents draw from the root's remaining budget,
//! so a fan-out of six children cannot spend six copies of it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use paddock_core::model::{ModelProvider, Price, Prices};
use paddock_core::store::{Budgets, EndReason, RunState, RunUsage, SubagentProfile};
use paddock_runtime::subagents::SubagentModels;
use paddock_runtime::tools::ToolRegistry;
use paddock_runtime::{RuntimeError, StartRun};
use serde_json::{Value, json};
use support::{Harness, Recording, call};

/// Every scripted turn reports 1000 input tokens; at $1 per million that is
/// 1000 micro-dollars a turn.
const TURN_COST: u64 = 1_000;

#[derive(Debug, Default)]
struct Models(HashMap<String, Arc<Recording>>);

impl SubagentModels for Models {
    fn model(&self, _profile: SubagentProfile, task_id: &str) -> Option<Arc<dyn ModelProvider>> {
        self.0
            .get(task_id)
            .map(|m| Arc::clone(m) as Arc<dyn ModelProvider>)
    }
}

fn priced(calls: Vec<Value>) -> Value {
    json!({
        "text": "",
        "tool_calls": calls,
        "usage": {"input_tokens": 1000, "output_tokens": 0},
    })
}

async fn priced_harness() -> Harness {
    Harness::configured(ToolRegistry::builtin(), |config| {
        let mut prices = Prices::default();
        prices.insert(
            "scripted:*",
            Price {
                input_per_mtok: 1_000_000,
                output_per_mtok: 0,
            },
        );
        config.prices = prices;
    })
    .await
}

#[tokio::test]
async fn a_fan_out_of_six_children_cannot_spend_more_than_the_family_budget() {
    let h = priced_harness().await;
    std::fs::write(h.project.join("notes.txt"), "alpha\nbeta\n").unwrap();
    let session = h.session("fan-out").await;
    let mut models = Models::default();
    for n in 1..=6 {
        let task = format!("t{n}");
        // eight turns each: alone, the six would spend 48 turns' worth
        let turns: Vec<Value> = (0..8)
            .map(|i| priced(vec![call("search", json!({"text": format!("{task}-{i}")}))]))
            .collect();
        models.0.insert(task.clone(), h.script(&task, json!(turns)));
    }
    let spawns: Vec<Value> = (1..=6)
        .map(|n| {
            call(
                "spawn_subagent",
                json!({"task_id": format!("t{n}"), "profile": "explore", "prompt": "look"}),
            )
        })
        .collect();
    let parent = h.script(
        "parent",
        json!([
            priced(spawns),
            priced(vec![call("wait_subagents", json!({"timeout": 120}))]),
            priced(vec![call(
                "complete_task",
                json!({"verdict": "met", "summary": "done", "evidence": ["scripted"]}),
            )]),
        ]),
    );
    let limit = 10 * TURN_COST;
    let mut request = StartRun::new("Fan out", parent);
    request.budgets = Budgets {
        max_cost_micro_usd: Some(limit),
        ..Budgets::default()
    };
    request.subagent_models = Some(Arc::new(models));
    let handle = h
        .runtime
        .start_run(&h.tenant, &session.id, request)
        .await
        .unwrap();
    let root = tokio::time::timeout(Duration::from_secs(240), handle.wait())
        .await
        .expect("the root run ends")
        .unwrap();

    let kids = h
        .runtime
        .list_child_runs(&h.tenant, &root.id)
        .await
        .unwrap();
    assert_eq!(kids.len(), 6, "{kids:?}");
    let mut total = root.usage;
    for kid in &kids {
        assert!(kid.state.is_terminal(), "{kid:?}");
        // a child starts with what the family had left, never a full copy
        let share = kid.budgets.max_cost_micro_usd.unwrap();
        assert!(share < limit, "{kid:?}");
        assert_eq!(
            kid.usage.cost_micro_usd,
            u64::from(kid.usage.turns) * TURN_COST
        );
        total.turns += kid.usage.turns;
        total.tool_calls += kid.usage.tool_calls;
        total.cost_micro_usd += kid.usage.cost_micro_usd;
        total.input_tokens += kid.usage.input_tokens;
    }
    eprintln!(
        "family: {} turns, {} of {limit} micro-dollars; root {:?} ({:?})",
        total.turns, total.cost_micro_usd, root.state, root.error
    );
    // Reserved before it starts, a turn is refused once the family spent the
    // limit; only turns already under way (one per running member: the root
    // and three children) can add to it.
    assert!(
        total.cost_micro_usd <= limit + 4 * TURN_COST,
        "the family spent {} of {limit}",
        total.cost_micro_usd
    );
    assert!(total.turns >= 10, "the budget was not used: {total:?}");
    let refused = kids
        .iter()
        .filter(|k| k.end_reason == Some(EndReason::BudgetExceeded))
        .collect::<Vec<_>>();
    assert!(!refused.is_empty(), "{kids:?}");
    for kid in &refused {
        let error = kid.error.as_deref().unwrap();
        assert!(error.contains("family cost budget exceeded"), "{error}");
    }
    assert_eq!(
        root.usage.cost_micro_usd,
        u64::from(root.usage.turns) * TURN_COST
    );

    // run.finished carries the run's own usage and the family's
    let finished = h.payloads(&session.id, "run.finished").await;
    let family: RunUsage = serde_json::from_value(finished[0]["total_usage"].clone()).unwrap();
    assert_eq!(
        (
            family.turns,
            family.tool_calls,
            family.cost_micro_usd,
            family.input_tokens
        ),
        (
            total.turns,
            total.tool_calls,
            total.cost_micro_usd,
            total.input_tokens
        ),
        "{family:?} {total:?}"
    );
    let own: RunUsage = serde_json::from_value(finished[0]["usage"].clone()).unwrap();
    assert_eq!(own.cost_micro_usd, root.usage.cost_micro_usd);
}

#[tokio::test]
async fn a_cost_limit_on_a_model_without_a_price_is_refused() {
    let h = Harness::new().await;
    let session = h.session("unpriced").await;
    let model = h.script("m", json!([priced(vec![])]));
    let mut request = StartRun::new("Spend", model);
    request.budgets.max_cost_micro_usd = Some(5_000);
    let err = h
        .runtime
        .start_run(&h.tenant, &session.id, request)
        .await
        .unwrap_err();
    assert!(matches!(err, RuntimeError::Invalid { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("needs the price of model scripted:"),
        "{err}"
    );
    // nothing was recorded
    assert!(
        h.runtime
            .list_runs(&h.tenant, &session.id)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_priced_run_reports_its_cost_and_stops_at_its_limit() {
    let h = priced_harness().await;
    let session = h.session("cost").await;
    let turns: Vec<Value> = (0..6)
        .map(|i| priced(vec![call("workspace_tree", json!({"max_depth": i + 1}))]))
        .collect();
    let model = h.script("m", json!(turns));
    let mut request = StartRun::new("Spend", model);
    request.budgets.max_cost_micro_usd = Some(3 * TURN_COST);
    let run = h
        .runtime
        .start_run(&h.tenant, &session.id, request)
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(run.state, RunState::Failed, "{run:?}");
    assert_eq!(run.end_reason, Some(EndReason::BudgetExceeded));
    assert_eq!(
        run.error.as_deref(),
        Some("cost budget exceeded: used 3000 of 3000 micro-dollars")
    );
    assert_eq!(
        (run.usage.turns, run.usage.cost_micro_usd),
        (3, 3 * TURN_COST)
    );
    let finished = h.payloads(&session.id, "run.finished").await;
    assert_eq!(finished[0]["usage"]["cost_micro_usd"], 3 * TURN_COST);
    let total: RunUsage = serde_json::from_value(finished[0]["total_usage"].clone()).unwrap();
    assert_eq!(total.cost_micro_usd, 3 * TURN_COST, "{finished:?}");
}
