//! What `paddock run` exits with.

use paddock_api::service::RunView;
use paddock_core::store::{EndReason, RunState, Verdict};

/// The goal is met (the review's verdict, checked against what the run did).
pub const EXIT_MET: u8 = 0;
/// The run completed but the goal is not met, or not shown to be met
/// (`unsure`), or the agent stopped to ask a question.
pub const EXIT_NOT_MET: u8 = 1;
/// The command line was wrong (also clap's code for its own usage errors).
pub const EXIT_USAGE: u8 = 2;
/// The run failed (model or sandbox error, repeated calls, interrupted) or a
/// budget ran out.
pub const EXIT_FAILED: u8 = 3;
/// The run was cancelled (Ctrl-C): 128 + SIGINT, as shells report it.
pub const EXIT_CANCELLED: u8 = 130;

/// The exit code for a run that ended.
pub fn for_run(run: &RunView) -> u8 {
    match (run.end_reason, run.state) {
        (Some(EndReason::Cancelled), _) | (_, RunState::Cancelled | RunState::Cancelling) => {
            EXIT_CANCELLED
        }
        (Some(EndReason::BudgetExceeded), _) => EXIT_FAILED,
        (_, RunState::Completed) => match run.review.as_ref().map(|r| r.verdict) {
            Some(Verdict::Met) => EXIT_MET,
            _ => EXIT_NOT_MET,
        },
        (_, RunState::AwaitingUser) => EXIT_NOT_MET,
        _ => EXIT_FAILED,
    }
}

#[cfg(test)]
mod tests {
    use paddock_core::ids::{SessionId, TenantId};
    use paddock_core::store::{Review, Run, Timestamp};

    use super::*;

    fn run(state: RunState, end: Option<EndReason>, verdict: Option<Verdict>) -> Run {
        let mut run = Run::new(
            TenantId::parse("t").unwrap(),
            SessionId::generate(),
            "goal",
            Timestamp::from_millis(0),
        );
        run.state = state;
        run.end_reason = end;
        run.review = verdict.map(|verdict| Review {
            verdict,
            summary: String::new(),
            evidence: vec![],
            remaining: vec![],
            criteria: vec![],
        });
        run
    }

    #[test]
    fn only_a_met_verdict_exits_zero() {
        use EndReason as E;
        use RunState as S;
        let cases = [
            (
                run(S::Completed, Some(E::Completed), Some(Verdict::Met)),
                EXIT_MET,
            ),
            (
                run(S::Completed, Some(E::Completed), Some(Verdict::Unsure)),
                EXIT_NOT_MET,
            ),
            (
                run(S::Completed, Some(E::Completed), Some(Verdict::NotMet)),
                EXIT_NOT_MET,
            ),
            (run(S::Completed, Some(E::Completed), None), EXIT_NOT_MET),
            (
                run(S::AwaitingUser, Some(E::AwaitingUser), None),
                EXIT_NOT_MET,
            ),
            (
                run(S::Failed, Some(E::BudgetExceeded), Some(Verdict::Met)),
                EXIT_FAILED,
            ),
            (
                run(S::Completed, Some(E::BudgetExceeded), Some(Verdict::Unsure)),
                EXIT_FAILED,
            ),
            (run(S::Failed, Some(E::ModelError), None), EXIT_FAILED),
            (run(S::Interrupted, Some(E::Interrupted), None), EXIT_FAILED),
            (run(S::Cancelled, Some(E::Cancelled), None), EXIT_CANCELLED),
        ];
        for (run, code) in cases {
            assert_eq!(
                for_run(&RunView::new(&run, run.usage)),
                code,
                "{:?} {:?}",
                run.state,
                run.end_reason
            );
        }
    }
}
