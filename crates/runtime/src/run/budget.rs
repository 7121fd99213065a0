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
}

/// A budget that ran out, with the figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Exceeded {
    pub(crate) budget: Budget,
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
        };
        write!(
            f,
            "{name} budget exceeded: used {} of {} {unit}",
            self.used, self.limit
        )
    }
}

fn over(budget: Budget, used: u64, limit: u64) -> Result<(), Exceeded> {
    if used >= limit {
        Err(Exceeded {
            budget,
            used,
            limit,
        })
    } else {
        Ok(())
    }
}

fn tokens_and_clock(budgets: &Budgets, usage: &RunUsage) -> Result<(), Exceeded> {
    over(Budget::Tokens, usage.tokens(), budgets.max_tokens)?;
    over(
        Budget::WallClock,
        usage.wall_clock_ms,
        budgets.max_wall_clock_ms,
    )
}

/// May the run call the model once more?
pub(crate) fn before_model_turn(budgets: &Budgets, usage: &RunUsage) -> Result<(), Exceeded> {
    over(
        Budget::Turns,
        u64::from(usage.turns),
        u64::from(budgets.max_turns),
    )?;
    tokens_and_clock(budgets, usage)
}

/// May the run make one more tool call?
pub(crate) fn before_tool_call(budgets: &Budgets, usage: &RunUsage) -> Result<(), Exceeded> {
    over(
        Budget::ToolCalls,
        u64::from(usage.tool_calls),
        u64::from(budgets.max_tool_calls),
    )?;
    tokens_and_clock(budgets, usage)
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
}
