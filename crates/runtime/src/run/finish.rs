//! The end of a run, however it ended: the workspace is snapshotted (so a
//! fork can start from here), the steering queue closes (what still waits
//! is reported undelivered), the review and final state are written, the
//! goal follows the verdict, and `run.review` and `run.finished` close the
//! run's events. Failures here are logged, never raised: the run is over.

use std::path::PathBuf;

use paddock_core::sandbox::SandboxId;
use paddock_core::store::{
    EndReason, Goal, GoalStatus, Review, Run, RunState, RunUpdate, RunUsage, Workspace,
};

use super::driver::Ending;
use super::review::without_completion;
use crate::events::RunFinished;
use crate::events::journal::{Encoded, Journal};
use crate::runtime::Shared;
use crate::util::error_chain;
use crate::workspace::{self, SnapshotSource};

/// Where the end snapshot is taken from.
#[derive(Debug)]
pub(crate) struct SnapshotPlace {
    pub(crate) workspace: Workspace,
    pub(crate) dir: PathBuf,
    pub(crate) sandbox: Option<SandboxId>,
    /// The run's snapshot limits.
    pub(crate) limits: paddock_snapshot::Limits,
}

/// The recorded end of a run.
#[derive(Debug, Clone, PartialEq)]
struct Outcome {
    state: RunState,
    end_reason: EndReason,
    error: Option<String>,
    review: Review,
    /// The goal's new status; None leaves it open.
    goal_status: Option<GoalStatus>,
    question: Option<String>,
}

impl Outcome {
    fn of(ending: Ending, goal: &str) -> Self {
        let left = || vec![goal.to_owned()];
        match ending {
            Ending::Completed(review) => Self {
                state: RunState::Completed,
                end_reason: EndReason::Completed,
                error: None,
                goal_status: Some(review.verdict.into()),
                review,
                question: None,
            },
            Ending::Stopped { text } => Self {
                state: RunState::Completed,
                end_reason: EndReason::Completed,
                error: None,
                review: without_completion(
                    if text.trim().is_empty() {
                        "The agent stopped without a summary.".to_owned()
                    } else {
                        text
                    },
                    vec![
                        "unverified: the agent ended without complete_task, so nothing \
                         confirms the goal"
                            .to_owned(),
                    ],
                ),
                goal_status: Some(GoalStatus::Unsure),
                question: None,
            },
            Ending::AwaitingUser { question } => Self {
                state: RunState::AwaitingUser,
                end_reason: EndReason::AwaitingUser,
                error: None,
                review: without_completion(
                    format!("Waiting for the user's answer: {question}"),
                    vec![question.clone()],
                ),
                goal_status: None,
                question: Some(question),
            },
            Ending::Failed { reason, error } => Self {
                state: RunState::Failed,
                end_reason: reason,
                review: without_completion(
                    format!("The run ended ({reason}) before the goal was completed: {error}"),
                    left(),
                ),
                error: Some(error),
                goal_status: None,
                question: None,
            },
            Ending::Cancelled => Self {
                state: RunState::Cancelled,
                end_reason: EndReason::Cancelled,
                error: None,
                review: without_completion(
                    "The run was cancelled before the goal was completed.".to_owned(),
                    left(),
                ),
                goal_status: None,
                question: None,
            },
        }
    }
}

pub(crate) async fn finish(
    shared: &Shared,
    journal: &Journal,
    run: Run,
    goal: &Goal,
    ending: Ending,
    usage: RunUsage,
    place: SnapshotPlace,
) -> Run {
    // the end is recorded even when a cancel cut a wait for space short
    journal.ending();
    let source = SnapshotSource {
        tenant: run.tenant.clone(),
        workspace: place.workspace,
        dir: place.dir,
        session: Some(run.session.clone()),
        sandbox: place.sandbox,
    };
    let (end_snapshot, snapshot_error, snapshot_limit) = match workspace::snapshot_dir(
        &shared.store,
        &shared.blobs,
        &shared.config,
        place.limits,
        source,
    )
    .await
    {
        Ok(record) => (Some(record.id), None, None),
        Err(err) => {
            let error = error_chain(&err);
            tracing::warn!(%error, "end-of-run snapshot failed; a fork from this run is not possible");
            let hit = match err {
                crate::RuntimeError::SnapshotLimit { hit, .. } => Some(hit),
                _ => None,
            };
            (None, Some(error), hit)
        }
    };

    // posts end here; what waits was accepted and is reported, not lost
    let undelivered = crate::steering::close_for_end(journal).await;
    let outcome = Outcome::of(ending, &goal.description);
    if let Some(status) = outcome.goal_status
        && let Err(err) = journal.set_goal_status(&goal.id, status).await
    {
        tracing::warn!(error = %error_chain(&err), "recording the goal's status");
    }
    let update = RunUpdate {
        state: outcome.state,
        error: outcome.error.clone(),
        usage: Some(usage),
        end_reason: Some(outcome.end_reason),
        review: Some(outcome.review.clone()),
        end_snapshot: end_snapshot.clone(),
    };
    let ended = Run {
        state: update.state,
        error: update.error.clone(),
        usage,
        end_reason: update.end_reason,
        review: update.review.clone(),
        end_snapshot: end_snapshot.clone(),
        ..run
    };
    // The children ended (and were recorded) before the parent finishes.
    let total_usage = match crate::usage::total(&*shared.store, &ended).await {
        Ok(total) => Some(total),
        Err(err) => {
            tracing::warn!(error = %error_chain(&err), "reading the subagents' usage");
            None
        }
    };
    let event = RunFinished {
        state: outcome.state,
        end_reason: outcome.end_reason,
        usage,
        total_usage,
        error: outcome.error,
        verdict: Some(outcome.review.verdict).filter(|_| outcome.state != RunState::AwaitingUser),
        question: outcome.question,
        end_snapshot,
        snapshot_error,
        snapshot_limit,
        undelivered,
    };
    // the end, its review and its run.finished in one write: a reader who
    // sees the run ended finds both events
    let recorded = async {
        let events = vec![Encoded::of(&outcome.review)?, Encoded::of(&event)?];
        journal.update_run_emitting(&update, events).await
    };
    match recorded.await {
        Ok(finished) => finished,
        Err(err) => {
            tracing::error!(error = %error_chain(&err), "recording the end of the run");
            ended
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_core::store::Verdict;

    #[test]
    fn only_a_completed_run_moves_the_goal() {
        let review = without_completion("x".into(), vec![]);
        let completed = Outcome::of(
            Ending::Completed(Review {
                verdict: Verdict::Met,
                ..review
            }),
            "g",
        );
        assert_eq!(
            (completed.state, completed.goal_status),
            (RunState::Completed, Some(GoalStatus::Met))
        );
        let failed = Outcome::of(
            Ending::Failed {
                reason: EndReason::BudgetExceeded,
                error: "turns budget exceeded: used 2 of 2 model turns".into(),
            },
            "g",
        );
        assert_eq!(failed.goal_status, None);
        assert_eq!(failed.review.verdict, Verdict::Unsure);
        assert_eq!(failed.review.remaining, vec!["g"]);
        assert!(failed.review.summary.contains("budget_exceeded"));
    }

    #[test]
    fn a_run_that_stops_talking_is_never_met() {
        let outcome = Outcome::of(
            Ending::Stopped {
                text: "All done!".into(),
            },
            "g",
        );
        assert_eq!(outcome.review.verdict, Verdict::Unsure);
        assert_eq!(outcome.goal_status, Some(GoalStatus::Unsure));
        assert_eq!(outcome.review.summary, "All done!");
    }

    #[test]
    fn asking_the_user_keeps_the_question() {
        let outcome = Outcome::of(
            Ending::AwaitingUser {
                question: "Which port?".into(),
            },
            "g",
        );
        assert_eq!(
            (outcome.state, outcome.end_reason),
            (RunState::AwaitingUser, EndReason::AwaitingUser)
        );
        assert_eq!(outcome.question.as_deref(), Some("Which port?"));
        assert_eq!(outcome.review.remaining, vec!["Which port?"]);
    }
}
