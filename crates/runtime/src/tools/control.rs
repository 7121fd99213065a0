//! Control tools: they do no work in the sandbox, only hand the run loop an
//! [`Effect`] and answer with a short confirmation. All are read-only (they
//! are offered in plan mode too). `update_plan` and `report_progress` are
//! replay safe (the plan is sent whole each time; a repeated progress note is
//! harmless); `ask_user` and `complete_task` are not: replaying them would
//! ask the user twice or end a run on a claim made before a crash.

use std::collections::HashSet;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::{contract_for, invalid, non_empty, parse_args};
use super::{
    Access, Completion, CriterionClaim, Effect, PlanStep, Replay, Role, TaskStatusArg, Tool,
    ToolContext, ToolContract, ToolError, ToolOutput, VerdictArg,
};

pub(crate) const UPDATE_PLAN: &str = "update_plan";
pub(crate) const REPORT_PROGRESS: &str = "report_progress";
pub(crate) const ASK_USER: &str = "ask_user";
pub(crate) const COMPLETE_TASK: &str = "complete_task";

/// Nothing here waits on anything.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(5);

/// Replace the plan.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PlanArgs {
    /// Why the plan changed, if it did.
    #[serde(default)]
    explanation: Option<String>,
    /// The whole plan, in order. At most one step may be in_progress.
    steps: Vec<PlanStep>,
}

/// Tell the user what is happening.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ProgressArgs {
    /// One or two sentences: what was done, what comes next.
    message: String,
}

/// Ask the user.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AskArgs {
    /// The question; say what you need and why you cannot decide it yourself.
    question: String,
}

/// Finish the task with an honest account. Mirrors [`Completion`], refusing
/// unknown fields.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CompleteArgs {
    /// met only when evidence shows every criterion is met; unsure when it
    /// could not be shown; not_met otherwise.
    verdict: VerdictArg,
    /// What was done.
    summary: String,
    /// What shows the result: commands run and their outcome, files written.
    #[serde(default)]
    evidence: Vec<String>,
    /// What is still left to do.
    #[serde(default)]
    remaining: Vec<String>,
    /// A verdict per success criterion of the goal, each named by its id (c1, c2, ...).
    #[serde(default)]
    criteria: Vec<CriterionClaim>,
}

macro_rules! control_tool {
    ($ty:ident, $args:ty, $name:expr, $replay:expr, $description:literal) => {
        #[derive(Debug)]
        pub struct $ty {
            contract: ToolContract,
        }

        impl $ty {
            pub fn new() -> Self {
                Self {
                    contract: contract_for::<$args>(
                        $name,
                        $description,
                        Role::Control,
                        Access::ReadOnly,
                        $replay,
                        CONTROL_TIMEOUT,
                    ),
                }
            }
        }

        impl Default for $ty {
            fn default() -> Self {
                Self::new()
            }
        }
    };
}

control_tool!(
    UpdatePlan,
    PlanArgs,
    UPDATE_PLAN,
    Replay::Safe,
    "Set the plan: the whole list of steps with their status (pending, in_progress, done, \
     blocked, cancelled). Keep a step's id when it changes. At most one step is in_progress."
);
control_tool!(
    ReportProgress,
    ProgressArgs,
    REPORT_PROGRESS,
    Replay::Safe,
    "Send the user a short progress note. Does not pause the work."
);
control_tool!(
    AskUser,
    AskArgs,
    ASK_USER,
    Replay::Never,
    "Ask the user a question you cannot answer from the workspace. The run pauses until \
     the user answers."
);
control_tool!(
    CompleteTask,
    CompleteArgs,
    COMPLETE_TASK,
    Replay::Never,
    "Finish: report the verdict (met, not_met or unsure), a summary, the evidence, what \
     remains, and a verdict per success criterion (named by its id). Say unsure rather than claim success \
     you cannot show. Ends the run."
);

fn confirm(content: String, effect: Effect) -> ToolOutput {
    ToolOutput {
        content,
        is_error: false,
        data: Value::Null,
        effects: vec![effect],
    }
}

fn check_plan(steps: &[PlanStep]) -> Result<(), ToolError> {
    if steps.is_empty() {
        return Err(invalid(UPDATE_PLAN, "steps must not be empty"));
    }
    let mut ids = HashSet::new();
    for step in steps {
        non_empty(UPDATE_PLAN, "a step's id", &step.id)?;
        non_empty(UPDATE_PLAN, "a step's title", &step.title)?;
        if !ids.insert(step.id.as_str()) {
            return Err(invalid(
                UPDATE_PLAN,
                format!("step id {:?} is used twice; ids must be unique", step.id),
            ));
        }
    }
    let active: Vec<&str> = steps
        .iter()
        .filter(|s| s.status == TaskStatusArg::InProgress)
        .map(|s| s.id.as_str())
        .collect();
    if active.len() > 1 {
        return Err(invalid(
            UPDATE_PLAN,
            format!(
                "{} steps are in_progress ({}); at most one may be",
                active.len(),
                active.join(", ")
            ),
        ));
    }
    Ok(())
}

#[async_trait]
impl Tool for UpdatePlan {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, _ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let args: PlanArgs = parse_args(UPDATE_PLAN, arguments)?;
        check_plan(&args.steps)?;
        let count = |status| args.steps.iter().filter(|s| s.status == status).count();
        let content = format!(
            "plan updated: {} steps ({} done, {} in progress, {} pending)",
            args.steps.len(),
            count(TaskStatusArg::Done),
            count(TaskStatusArg::InProgress),
            count(TaskStatusArg::Pending),
        );
        Ok(confirm(
            content,
            Effect::PlanUpdated {
                explanation: args.explanation.filter(|e| !e.trim().is_empty()),
                steps: args.steps,
            },
        ))
    }
}

#[async_trait]
impl Tool for ReportProgress {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, _ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let args: ProgressArgs = parse_args(REPORT_PROGRESS, arguments)?;
        non_empty(REPORT_PROGRESS, "message", &args.message)?;
        Ok(confirm(
            "progress noted".to_owned(),
            Effect::Progress {
                message: args.message,
            },
        ))
    }
}

#[async_trait]
impl Tool for AskUser {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, _ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let args: AskArgs = parse_args(ASK_USER, arguments)?;
        non_empty(ASK_USER, "question", &args.question)?;
        Ok(confirm(
            "question sent; the run waits for the user's answer".to_owned(),
            Effect::AskUser {
                question: args.question,
            },
        ))
    }
}

#[async_trait]
impl Tool for CompleteTask {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, _ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let args: CompleteArgs = parse_args(COMPLETE_TASK, arguments)?;
        non_empty(COMPLETE_TASK, "summary", &args.summary)?;
        // A claim that contradicts itself is sent back rather than recorded:
        // "met" cannot stand beside a criterion that is not.
        let contradiction = args
            .criteria
            .iter()
            .find(|c| args.verdict == VerdictArg::Met && c.verdict != VerdictArg::Met);
        if let Some(claim) = contradiction {
            return Err(invalid(
                COMPLETE_TASK,
                format!(
                    "verdict is met but criterion {:?} is {}; use not_met or unsure",
                    claim.criterion,
                    json!(claim.verdict).as_str().unwrap_or("not met")
                ),
            ));
        }
        let completion = Completion {
            verdict: args.verdict,
            summary: args.summary,
            evidence: args.evidence,
            remaining: args.remaining,
            criteria: args.criteria,
        };
        Ok(confirm(
            "completion recorded".to_owned(),
            Effect::Complete(completion),
        ))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testing::offline_context;

    #[tokio::test]
    async fn a_plan_becomes_an_effect_with_its_steps() {
        let out = UpdatePlan::new()
            .call(
                &offline_context(),
                json!({
                    "explanation": "tests first",
                    "steps": [
                        {"id": "1", "title": "write tests", "status": "done"},
                        {"id": "2", "title": "fix", "status": "in_progress"},
                    ]
                }),
            )
            .await
            .unwrap();
        assert_eq!(
            out.content,
            "plan updated: 2 steps (1 done, 1 in progress, 0 pending)"
        );
        assert_eq!(
            out.effects,
            [Effect::PlanUpdated {
                explanation: Some("tests first".into()),
                steps: vec![
                    PlanStep {
                        id: "1".into(),
                        title: "write tests".into(),
                        status: TaskStatusArg::Done
                    },
                    PlanStep {
                        id: "2".into(),
                        title: "fix".into(),
                        status: TaskStatusArg::InProgress
                    },
                ]
            }]
        );
    }

    #[tokio::test]
    async fn plans_with_duplicate_ids_or_two_active_steps_are_refused() {
        let tool = UpdatePlan::new();
        let ctx = offline_context();
        for (steps, says) in [
            (
                json!([{"id": "a", "title": "x", "status": "pending"},
                       {"id": "a", "title": "y", "status": "pending"}]),
                "used twice",
            ),
            (
                json!([{"id": "a", "title": "x", "status": "in_progress"},
                       {"id": "b", "title": "y", "status": "in_progress"}]),
                "2 steps are in_progress (a, b)",
            ),
            (json!([]), "must not be empty"),
            (
                json!([{"id": "a", "title": "x", "status": "started"}]),
                "unknown variant",
            ),
        ] {
            let err = tool
                .call(&ctx, json!({ "steps": steps }))
                .await
                .unwrap_err();
            assert!(err.to_string().contains(says), "{err}");
        }
    }

    #[tokio::test]
    async fn completion_that_contradicts_its_criteria_is_sent_back() {
        let tool = CompleteTask::new();
        let ctx = offline_context();
        let err = tool
            .call(
                &ctx,
                json!({
                    "verdict": "met",
                    "summary": "done",
                    "criteria": [{"criterion": "tests pass", "verdict": "unsure", "evidence": null}]
                }),
            )
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("criterion \"tests pass\" is unsure"),
            "{err}"
        );

        let out = tool
            .call(
                &ctx,
                json!({"verdict": "unsure", "summary": "could not run tests", "remaining": ["run tests"]}),
            )
            .await
            .unwrap();
        assert_eq!(
            out.effects,
            [Effect::Complete(Completion {
                verdict: VerdictArg::Unsure,
                summary: "could not run tests".into(),
                evidence: vec![],
                remaining: vec!["run tests".into()],
                criteria: vec![],
            })]
        );
    }

    #[tokio::test]
    async fn questions_and_progress_need_text() {
        let ctx = offline_context();
        assert!(
            AskUser::new()
                .call(&ctx, json!({"question": " "}))
                .await
                .is_err()
        );
        let out = ReportProgress::new()
            .call(&ctx, json!({"message": "tests pass"}))
            .await
            .unwrap();
        assert_eq!(
            out.effects,
            [Effect::Progress {
                message: "tests pass".into()
            }]
        );
    }

    #[test]
    fn control_tools_are_read_only_and_only_the_final_ones_never_replay() {
        let replays: Vec<(&str, Replay)> = [
            UpdatePlan::new().contract().clone(),
            ReportProgress::new().contract().clone(),
            AskUser::new().contract().clone(),
            CompleteTask::new().contract().clone(),
        ]
        .iter()
        .inspect(|c| assert_eq!(c.access, Access::ReadOnly))
        .map(|c| (c.name, c.replay))
        .collect();
        assert_eq!(
            replays,
            [
                ("update_plan", Replay::Safe),
                ("report_progress", Replay::Safe),
                ("ask_user", Replay::Never),
                ("complete_task", Replay::Never),
            ]
        );
    }
}
