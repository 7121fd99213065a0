//! The budgets a resumed run runs on. A resume continues the interrupted
//! run's family, so it draws from what that family left, not from a fresh
//! copy of its budgets (else kill -9 and resume, again and again, would
//! spend without limit):
//! - turns, tokens, tool calls and cost: the interrupted run's limits less
//!   what it and its subagents spent (as recorded; a run that resumed
//!   another already ran on what that one left, so the chain adds up);
//! - the wall clock: the time left to the family's deadline, the
//!   interrupted run's start plus its wall-clock budget. A deadline is
//!   absolute: the time the run lay dead counts, and a resume after it has
//!   none left.
//!
//! A caller may pass budgets of its own: the operator or user raising the
//! limit, said in `run.started` ([`BudgetSource::Given`]).

use paddock_core::store::{Budgets, Run, RunUsage, Timestamp};

use crate::events::{BudgetSource, ResumeBudget};

/// The budgets of the run resuming `interrupted`, whose family spent
/// `spent`, at `now`; `given`: the caller's own, used as they are.
pub(crate) fn resumed_budgets(
    interrupted: &Run,
    spent: RunUsage,
    given: Option<Budgets>,
    now: Timestamp,
) -> (Budgets, ResumeBudget) {
    let (budgets, source) = match given {
        Some(given) => (given, BudgetSource::Given),
        None => (
            left(&interrupted.budgets, &spent, interrupted.created_at, now),
            BudgetSource::Left,
        ),
    };
    (budgets, ResumeBudget { source, spent })
}

/// What `limits` leave after `spent`, with the time left to the deadline
/// `limits.max_wall_clock_ms` after `started`.
fn left(limits: &Budgets, spent: &RunUsage, started: Timestamp, now: Timestamp) -> Budgets {
    let deadline = started
        .as_millis()
        .saturating_add(i64::try_from(limits.max_wall_clock_ms).unwrap_or(i64::MAX));
    let wall_clock_left = u64::try_from(deadline.saturating_sub(now.as_millis())).unwrap_or(0);
    Budgets {
        max_turns: limits.max_turns.saturating_sub(spent.turns),
        max_tokens: limits.max_tokens.saturating_sub(spent.tokens()),
        max_tool_calls: limits.max_tool_calls.saturating_sub(spent.tool_calls),
        max_wall_clock_ms: wall_clock_left.min(limits.max_wall_clock_ms),
        max_cost_micro_usd: limits
            .max_cost_micro_usd
            .map(|max| max.saturating_sub(spent.cost_micro_usd)),
    }
}

#[cfg(test)]
mod tests {
    use paddock_core::ids::{SessionId, TenantId};

    use super::*;

    fn limits() -> Budgets {
        Budgets {
            max_turns: 10,
            max_tokens: 1_000,
            max_tool_calls: 20,
            max_wall_clock_ms: 60_000,
            max_cost_micro_usd: Some(5_000),
        }
    }

    fn spent() -> RunUsage {
        RunUsage {
            turns: 4,
            input_tokens: 300,
            output_tokens: 100,
            tool_calls: 7,
            wall_clock_ms: 9_000,
            cost_micro_usd: 1_200,
        }
    }

    fn interrupted(started: Timestamp) -> Run {
        let mut run = Run::new(
            TenantId::parse("acme").unwrap(),
            SessionId::generate(),
            "goal",
            started,
        );
        run.budgets = limits();
        run
    }

    #[test]
    fn a_resume_draws_from_what_the_family_left_and_keeps_the_deadline() {
        let started = Timestamp::from_millis(1_000_000);
        // it lay dead 20 s after it spent 9 s: 31 s of the 60 s are left
        let now = Timestamp::from_millis(1_029_000);
        let (budgets, budget) = resumed_budgets(&interrupted(started), spent(), None, now);
        assert_eq!(
            budgets,
            Budgets {
                max_turns: 6,
                max_tokens: 600,
                max_tool_calls: 13,
                max_wall_clock_ms: 31_000,
                max_cost_micro_usd: Some(3_800),
            }
        );
        assert_eq!(
            budget,
            ResumeBudget {
                source: BudgetSource::Left,
                spent: spent(),
            }
        );
    }

    #[test]
    fn nothing_is_left_past_the_deadline_or_after_everything_was_spent() {
        let started = Timestamp::from_millis(1_000_000);
        let over = RunUsage {
            turns: 12,
            input_tokens: 2_000,
            tool_calls: 20,
            cost_micro_usd: 9_000,
            ..RunUsage::default()
        };
        let late = Timestamp::from_millis(1_000_000 + 61_000);
        let (budgets, _) = resumed_budgets(&interrupted(started), over, None, late);
        assert_eq!(
            budgets,
            Budgets {
                max_turns: 0,
                max_tokens: 0,
                max_tool_calls: 0,
                max_wall_clock_ms: 0,
                max_cost_micro_usd: Some(0),
            }
        );
        // a clock that went back never gives more than the budget
        let early = Timestamp::from_millis(900_000);
        let (budgets, _) = resumed_budgets(&interrupted(started), spent(), None, early);
        assert_eq!(budgets.max_wall_clock_ms, 60_000);
    }

    #[test]
    fn budgets_the_caller_gives_are_used_as_they_are_and_said_so() {
        let raised = Budgets {
            max_turns: 100,
            ..limits()
        };
        let now = Timestamp::from_millis(5_000_000);
        let (budgets, budget) = resumed_budgets(
            &interrupted(Timestamp::from_millis(0)),
            spent(),
            Some(raised),
            now,
        );
        assert_eq!(budgets, raised);
        assert_eq!(budget.source, BudgetSource::Given);
        assert_eq!(budget.spent, spent());
    }
}
