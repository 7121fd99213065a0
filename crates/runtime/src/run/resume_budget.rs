//! The budgets a resumed run runs on. A resume continues the interrupted
//! run's family, so it draws from what that family left, not from a fresh
//! copy of its budgets (else kill -9 and resume, again and again, would
//! spend without limit):
//! - turns, tokens, tool calls and cost: the interrupted run's limits less
//!   what it and its subagents spent (as recorded; a run that resumed
//!   another already ran on what that one left, so the chain adds up);
//! - the wall clock: the budget less the time the interrupted run spent
//!   running (its own recorded wall clock, which covers its subagents, as
//!   they run inside it; their own clocks overlap it and are not added).
//!   The time it lay dead is not charged: a budget limits what a run
//!   spends, and a dead run spends nothing, so a run resumed the next
//!   morning still has the running time it had left. What it ran between
//!   its last recorded update and the kill (at most one turn) is not
//!   charged either.
//!
//! A caller may pass budgets of its own: the operator or user raising the
//! limit, said in `run.started` ([`BudgetSource::Given`]).

use paddock_core::store::{Budgets, Run, RunUsage};

use crate::events::{BudgetSource, ResumeBudget};

/// The budgets of the run resuming `interrupted`, whose family spent
/// `spent`; `given`: the caller's own, used as they are.
pub(crate) fn resumed_budgets(
    interrupted: &Run,
    spent: RunUsage,
    given: Option<Budgets>,
) -> (Budgets, ResumeBudget) {
    let (budgets, source) = match given {
        Some(given) => (given, BudgetSource::Given),
        None => (
            left(
                &interrupted.budgets,
                &spent,
                interrupted.usage.wall_clock_ms,
            ),
            BudgetSource::Left,
        ),
    };
    (budgets, ResumeBudget { source, spent })
}

/// What `limits` leave after the family spent `spent` and the
/// interrupted run itself ran for `ran_ms`.
fn left(limits: &Budgets, spent: &RunUsage, ran_ms: u64) -> Budgets {
    Budgets {
        max_turns: limits.max_turns.saturating_sub(spent.turns),
        max_tokens: limits.max_tokens.saturating_sub(spent.tokens()),
        max_tool_calls: limits.max_tool_calls.saturating_sub(spent.tool_calls),
        max_wall_clock_ms: limits.max_wall_clock_ms.saturating_sub(ran_ms),
        max_cost_micro_usd: limits
            .max_cost_micro_usd
            .map(|max| max.saturating_sub(spent.cost_micro_usd)),
    }
}

#[cfg(test)]
mod tests {
    use paddock_core::ids::{SessionId, TenantId};
    use paddock_core::store::Timestamp;

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

    /// The family's spend: its subagents' clocks overlap the run's and add
    /// up to more than the run itself ran.
    fn spent() -> RunUsage {
        RunUsage {
            turns: 4,
            input_tokens: 300,
            output_tokens: 100,
            tool_calls: 7,
            wall_clock_ms: 25_000,
            cost_micro_usd: 1_200,
        }
    }

    /// A run that ran for `ran_ms` before it was killed.
    fn interrupted(ran_ms: u64) -> Run {
        let mut run = Run::new(
            TenantId::parse("acme").unwrap(),
            SessionId::generate(),
            "goal",
            Timestamp::from_millis(1_000_000),
        );
        run.budgets = limits();
        run.usage.wall_clock_ms = ran_ms;
        run
    }

    #[test]
    fn a_resume_draws_from_what_the_family_left_and_the_run_s_own_running_time() {
        let (budgets, budget) = resumed_budgets(&interrupted(9_000), spent(), None);
        assert_eq!(
            budgets,
            Budgets {
                max_turns: 6,
                max_tokens: 600,
                max_tool_calls: 13,
                // 60 s less the 9 s it ran, however long it lay dead, and
                // not less the subagents' overlapping 25 s
                max_wall_clock_ms: 51_000,
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
    fn nothing_is_left_after_everything_was_spent() {
        let over = RunUsage {
            turns: 12,
            input_tokens: 2_000,
            tool_calls: 20,
            cost_micro_usd: 9_000,
            ..RunUsage::default()
        };
        let (budgets, _) = resumed_budgets(&interrupted(61_000), over, None);
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
    }

    #[test]
    fn budgets_the_caller_gives_are_used_as_they_are_and_said_so() {
        let raised = Budgets {
            max_turns: 100,
            ..limits()
        };
        let (budgets, budget) = resumed_budgets(&interrupted(9_000), spent(), Some(raised));
        assert_eq!(budgets, raised);
        assert_eq!(budget.source, BudgetSource::Given);
        assert_eq!(budget.spent, spent());
    }
}
