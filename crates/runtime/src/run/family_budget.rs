//! The budget a root run shares with its subagents. The root's limits hold
//! for the whole family: every member reserves each model turn and each tool
//! call here before making it and charges its tokens and cost after, so six
//! children draw from one pool instead of getting a copy each, and the
//! family's wall clock runs from the root's start.
//!
//! Turns and tool calls are reserved under the lock, so they never go over.
//! Tokens and cost are only known after a call: the family can go over them
//! by what the calls already under way spend (at most one model turn per
//! running member), never by a further turn.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use paddock_core::model::Usage;
use paddock_core::store::{Budgets, RunUsage};
use tokio::time::Instant;

use super::budget::{self, Exceeded, Scope};

/// The deadline `limit_ms` after `started`; an absurd budget that overflows
/// the clock means no deadline in practice.
pub(crate) fn deadline_after(started: Instant, limit_ms: u64) -> Instant {
    started
        .checked_add(Duration::from_millis(limit_ms))
        .unwrap_or_else(|| started + Duration::from_secs(100 * 365 * 86_400))
}

#[derive(Debug)]
pub(crate) struct FamilyBudget {
    limits: Budgets,
    started: Instant,
    spent: Mutex<RunUsage>,
    /// A subagent joined: a limit reached is then the family's, not the root's alone.
    shared: AtomicBool,
}

impl FamilyBudget {
    /// The pool of a root run with `limits`, whose clock started at `started`.
    pub(crate) fn new(limits: Budgets, started: Instant) -> Arc<Self> {
        Arc::new(Self {
            limits,
            started,
            spent: Mutex::new(RunUsage::default()),
            shared: AtomicBool::new(false),
        })
    }

    /// A subagent starts drawing from this budget.
    pub(crate) fn join(&self) {
        self.shared.store(true, Ordering::SeqCst);
    }

    fn scope(&self) -> Scope {
        if self.shared.load(Ordering::SeqCst) {
            Scope::Family
        } else {
            Scope::Run
        }
    }

    pub(crate) fn limits(&self) -> &Budgets {
        &self.limits
    }

    /// When the family's wall clock runs out.
    pub(crate) fn deadline(&self) -> Instant {
        deadline_after(self.started, self.limits.max_wall_clock_ms)
    }

    fn lock(&self) -> MutexGuard<'_, RunUsage> {
        // the usage is plain counters: a panic elsewhere cannot leave it torn
        self.spent.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn clocked(&self, spent: &RunUsage) -> RunUsage {
        RunUsage {
            wall_clock_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            ..*spent
        }
    }

    /// What the family spent so far, with its wall clock.
    pub(crate) fn spent(&self) -> RunUsage {
        let spent = *self.lock();
        self.clocked(&spent)
    }

    /// Reserves one model turn of a member whose own budgets and usage are
    /// `own`, or says which limit is reached: the family's first (a member's
    /// own share is what the family had left when it started, so the
    /// family's is the reason), then the member's.
    pub(crate) fn reserve_turn(&self, own: (&Budgets, &RunUsage)) -> Result<(), Exceeded> {
        let mut spent = self.lock();
        budget::before_model_turn_in(&self.limits, &self.clocked(&spent), self.scope())?;
        budget::before_model_turn(own.0, own.1)?;
        spent.turns = spent.turns.saturating_add(1);
        Ok(())
    }

    /// Whether [`Self::reserve_turn`] would pass now; reserves nothing.
    pub(crate) fn has_turn(&self, own: (&Budgets, &RunUsage)) -> bool {
        let spent = self.lock();
        budget::before_model_turn_in(&self.limits, &self.clocked(&spent), self.scope()).is_ok()
            && budget::before_model_turn(own.0, own.1).is_ok()
    }

    /// Reserves one tool call, as [`Self::reserve_turn`] a turn.
    pub(crate) fn reserve_tool_call(&self, own: (&Budgets, &RunUsage)) -> Result<(), Exceeded> {
        let mut spent = self.lock();
        budget::before_tool_call_in(&self.limits, &self.clocked(&spent), self.scope())?;
        budget::before_tool_call(own.0, own.1)?;
        spent.tool_calls = spent.tool_calls.saturating_add(1);
        Ok(())
    }

    /// Whether the family and the member (`own`) are still within their
    /// tokens, cost and wall clock.
    pub(crate) fn within_spending(&self, own: (&Budgets, &RunUsage)) -> Result<(), Exceeded> {
        let spent = self.lock();
        budget::within_spending(&self.limits, &self.clocked(&spent), self.scope())?;
        budget::within_spending(own.0, own.1, Scope::Run)
    }

    /// Gives back a reserved turn whose model call gave no answer
    /// (cancelled, failed, out of time).
    pub(crate) fn release_turn(&self) {
        let mut spent = self.lock();
        spent.turns = spent.turns.saturating_sub(1);
    }

    /// Counts a model call's tokens and cost (its turn was reserved).
    pub(crate) fn charge(&self, usage: &Usage, cost_micro_usd: u64) {
        let mut spent = self.lock();
        spent.input_tokens = spent.input_tokens.saturating_add(usage.input_tokens);
        spent.output_tokens = spent.output_tokens.saturating_add(usage.output_tokens);
        spent.cost_micro_usd = spent.cost_micro_usd.saturating_add(cost_micro_usd);
    }

    /// What a new member may spend at most: what the family has left (its
    /// run's own budgets, so its events and row show the share it started with).
    pub(crate) fn remaining(&self) -> Budgets {
        let spent = self.spent();
        let limits = &self.limits;
        Budgets {
            max_turns: limits.max_turns.saturating_sub(spent.turns),
            max_tokens: limits.max_tokens.saturating_sub(spent.tokens()),
            max_tool_calls: limits.max_tool_calls.saturating_sub(spent.tool_calls),
            max_wall_clock_ms: limits.max_wall_clock_ms.saturating_sub(spent.wall_clock_ms),
            max_cost_micro_usd: limits
                .max_cost_micro_usd
                .map(|max| max.saturating_sub(spent.cost_micro_usd)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::budget::Budget;

    fn unlimited() -> (&'static Budgets, &'static RunUsage) {
        static OWN: (Budgets, RunUsage) = (
            Budgets {
                max_turns: u32::MAX,
                max_tokens: u64::MAX,
                max_tool_calls: u32::MAX,
                max_wall_clock_ms: u64::MAX,
                max_cost_micro_usd: None,
            },
            RunUsage {
                turns: 0,
                input_tokens: 0,
                output_tokens: 0,
                tool_calls: 0,
                wall_clock_ms: 0,
                cost_micro_usd: 0,
            },
        );
        (&OWN.0, &OWN.1)
    }

    #[test]
    fn a_member_refused_by_its_own_share_reserves_nothing() {
        let family = FamilyBudget::new(limits(), Instant::now());
        let own = Budgets {
            max_turns: 1,
            ..limits()
        };
        let used = RunUsage {
            turns: 1,
            ..RunUsage::default()
        };
        let err = family.reserve_turn((&own, &used)).unwrap_err();
        assert_eq!((err.budget, err.scope), (Budget::Turns, Scope::Run));
        assert_eq!(family.spent().turns, 0);
    }

    fn limits() -> Budgets {
        Budgets {
            max_turns: 3,
            max_tokens: 1_000,
            max_tool_calls: 2,
            max_wall_clock_ms: 60_000,
            max_cost_micro_usd: Some(500),
        }
    }

    #[test]
    fn turns_are_reserved_so_members_never_take_more_than_the_limit() {
        let family = FamilyBudget::new(limits(), Instant::now());
        family.join();
        let taken = (0..10)
            .filter(|_| family.reserve_turn(unlimited()).is_ok())
            .count();
        assert_eq!(taken, 3);
        let err = family.reserve_turn(unlimited()).unwrap_err();
        assert_eq!(
            (err.budget, err.scope, err.used, err.limit),
            (Budget::Turns, Scope::Family, 3, 3)
        );
        assert_eq!(family.spent().turns, 3);
        assert_eq!(family.remaining().max_turns, 0);
    }

    #[test]
    fn a_root_alone_reports_its_own_limit() {
        let family = FamilyBudget::new(limits(), Instant::now());
        for _ in 0..3 {
            family.reserve_turn(unlimited()).unwrap();
        }
        assert_eq!(
            family.reserve_turn(unlimited()).unwrap_err().scope,
            Scope::Run
        );
    }

    #[test]
    fn tokens_and_cost_charged_by_one_member_limit_the_others() {
        let family = FamilyBudget::new(limits(), Instant::now());
        family.reserve_turn(unlimited()).unwrap();
        family.charge(
            &Usage {
                input_tokens: 300,
                output_tokens: 100,
            },
            200,
        );
        let left = family.remaining();
        assert_eq!(
            (left.max_tokens, left.max_cost_micro_usd, left.max_turns),
            (600, Some(300), 2)
        );
        family.charge(
            &Usage {
                input_tokens: 1,
                output_tokens: 1,
            },
            300,
        );
        let err = family.reserve_tool_call(unlimited()).unwrap_err();
        assert_eq!((err.budget, err.used, err.limit), (Budget::Cost, 500, 500));
    }

    #[test]
    fn the_family_clock_runs_from_the_root_start() {
        let started = Instant::now().checked_sub(Duration::from_secs(61)).unwrap();
        let family = FamilyBudget::new(limits(), started);
        assert_eq!(family.deadline(), started + Duration::from_secs(60));
        let err = family.reserve_turn(unlimited()).unwrap_err();
        assert_eq!(err.budget, Budget::WallClock);
        assert_eq!(family.remaining().max_wall_clock_ms, 0);
    }
}
