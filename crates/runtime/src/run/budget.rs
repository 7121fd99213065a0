//! Budget checks: before each model turn and each tool call, what the run has
//! spent is held against its limits.

use std::fmt;

use paddock_core::store::{Budgets, RunUsage};

/// Which budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Budget {
    Turns,
    Tokens,
    ToolCalls,
    WallClock,
    Cost,
}

/// Whose budget: the run's own, or the family's (a root run and all its
/// subagents together, held against the root's limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    Run,
    Family,
}

/// A budget that ran out, with the figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Exceeded {
    pub(crate) budget: Budget,
    pub(crate) scope: Scope,
    pub(crate) used: u64,
    pub(crate) limit: u64,
}

impl fmt::Display for Exceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, unit) = match self.budget {
            Budget::Turns => ("turns", "model turns"),
            Budget::Tokens => ("tokens", "tokens"),
            Budget::ToolCalls => ("tool calls", "tool calls"),
            Budget::WallClock => ("wall clock", "ms"),
            Budget::Cost => ("cost", "micro-dollars"),
        };
        let whose = match self.scope {
            Scope::Run => "",
            Scope::Family => "family ",
        };
        write!(
            f,
            "{whose}{name} budget exceeded: used {} of {} {unit}",
            self.used, self.limit
        )?;
        if self.scope == Scope::Family {
            f.write_str(" (the root run and its subagents together)")?;
        }
        Ok(())
    }
}

fn over(budget: Budget, scope: Scope, used: u64, limit: u64) -> Result<(), Exceeded> {
    if used >= limit {
        Err(Exceeded {
            budget,
            scope,
            used,
            limit,
        })
    } else {
        Ok(())
    }
}

fn shared_limits(budgets: &Budgets, usage: &RunUsage, scope: Scope) -> Result<(), Exceeded> {
    over(Budget::Tokens, scope, usage.tokens(), budgets.max_tokens)?;
    if let Some(limit) = budgets.max_cost_micro_usd {
        over(Budget::Cost, scope, usage.cost_micro_usd, limit)?;
    }
    over(
        Budget::WallClock,
        scope,
        usage.wall_clock_ms,
        budgets.max_wall_clock_ms,
    )
}

/// May the run (or the family, by `scope`) call the model once more?
pub(crate) fn before_model_turn_in(
    budgets: &Budgets,
    usage: &RunUsage,
    scope: Scope,
) -> Result<(), Exceeded> {
    over(
        Budget::Turns,
        scope,
        u64::from(usage.turns),
        u64::from(budgets.max_turns),
    )?;
    shared_limits(budgets, usage, scope)
}

/// May the run (or the family, by `scope`) make one more tool call?
pub(crate) fn before_tool_call_in(
    budgets: &Budgets,
    usage: &RunUsage,
    scope: Scope,
) -> Result<(), Exceeded> {
    over(
        Budget::ToolCalls,
        scope,
        u64::from(usage.tool_calls),
        u64::from(budgets.max_tool_calls),
    )?;
    shared_limits(budgets, usage, scope)
}

/// Is what the run (or the family, by `scope`) spent still within its
/// tokens, cost and wall clock? (A driver that learns what a call cost only
/// after it was made checks this after each report.)
pub(crate) fn within_spending(
    budgets: &Budgets,
    usage: &RunUsage,
    scope: Scope,
) -> Result<(), Exceeded> {
    shared_limits(budgets, usage, scope)
}

/// May the run call the model once more?
pub(crate) fn before_model_turn(budgets: &Budgets, usage: &RunUsage) -> Result<(), Exceeded> {
    before_model_turn_in(budgets, usage, Scope::Run)
}

/// May the run make one more tool call?
pub(crate) fn before_tool_call(budgets: &Budgets, usage: &RunUsage) -> Result<(), Exceeded> {
    before_tool_call_in(budgets, usage, Scope::Run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budgets() -> Budgets {
        Budgets {
            max_turns: 3,
            max_tokens: 1_000,
            max_tool_calls: 2,
            max_wall_clock_ms: 5_000,
            max_cost_micro_usd: Some(10_000),
        }
    }

    #[test]
    fn the_turn_after_the_last_allowed_one_is_refused() {
        let mut usage = RunUsage {
            turns: 2,
            ..RunUsage::default()
        };
        assert_eq!(before_model_turn(&budgets(), &usage), Ok(()));
        usage.turns = 3;
        let exceeded = before_model_turn(&budgets(), &usage).unwrap_err();
        assert_eq!(
            exceeded,
            Exceeded {
                budget: Budget::Turns,
                scope: Scope::Run,
                used: 3,
                limit: 3
            }
        );
        assert_eq!(
            exceeded.to_string(),
            "turns budget exceeded: used 3 of 3 model turns"
        );
        // tool calls are not limited by turns
        assert_eq!(before_tool_call(&budgets(), &usage), Ok(()));
    }

    #[test]
    fn tokens_count_input_and_output() {
        let usage = RunUsage {
            input_tokens: 600,
            output_tokens: 450,
            ..RunUsage::default()
        };
        for check in [before_model_turn, before_tool_call] {
            let exceeded = check(&budgets(), &usage).unwrap_err();
            assert_eq!((exceeded.budget, exceeded.used), (Budget::Tokens, 1_050));
        }
    }

    #[test]
    fn tool_calls_and_wall_clock_are_checked() {
        let usage = RunUsage {
            tool_calls: 2,
            ..RunUsage::default()
        };
        assert_eq!(
            before_tool_call(&budgets(), &usage).unwrap_err().budget,
            Budget::ToolCalls
        );
        assert_eq!(before_model_turn(&budgets(), &usage), Ok(()));
        let usage = RunUsage {
            wall_clock_ms: 5_001,
            ..RunUsage::default()
        };
        let exceeded = before_model_turn(&budgets(), &usage).unwrap_err();
        assert_eq!(
            exceeded.to_string(),
            "wall clock budget exceeded: used 5001 of 5000 ms"
        );
    }

    #[test]
    fn cost_is_limited_only_when_a_limit_is_set() {
        let usage = RunUsage {
            cost_micro_usd: 10_000,
            ..RunUsage::default()
        };
        let exceeded = before_model_turn(&budgets(), &usage).unwrap_err();
        assert_eq!(
            exceeded.to_string(),
            "cost budget exceeded: used 10000 of 10000 micro-dollars"
        );
        let unlimited = Budgets {
            max_cost_micro_usd: None,
            ..budgets()
        };
        assert_eq!(before_tool_call(&unlimited, &usage), Ok(()));
    }

    #[test]
    fn a_family_limit_says_it_is_the_family_s() {
        let usage = RunUsage {
            turns: 3,
            ..RunUsage::default()
        };
        let exceeded = before_model_turn_in(&budgets(), &usage, Scope::Family).unwrap_err();
        assert_eq!(
            exceeded.to_string(),
            "family turns budget exceeded: used 3 of 3 model turns \
             (the root run and its subagents together)"
        );
    }
}
