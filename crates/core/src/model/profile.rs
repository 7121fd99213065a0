//! How much of a model's context a run may fill, and where compaction starts.

use serde::{Deserialize, Serialize};

/// A model's context budget in tokens. The request a run sends must leave
/// room for the answer (`output_budget`) and for estimate error
/// (`safety_buffer`); what is left is the effective window. A compaction's
/// summary call answers within `summary_reserve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ContextProfile {
    pub context_window: u32,
    pub output_budget: u32,
    pub summary_reserve: u32,
    pub safety_buffer: u32,
}

/// Compaction starts when the estimated request passes this share (percent)
/// of the effective window.
pub const COMPACT_AT_PERCENT: u64 = 90;
/// The recent tail kept verbatim by a compaction, as a share (percent) of the
/// context window.
pub const TAIL_PERCENT: u64 = 10;
/// A compacted request aims under this share (percent) of the context window.
pub const AFTER_COMPACTION_PERCENT: u64 = 50;

impl ContextProfile {
    /// The profile of a model known only by its window: an eighth of it (at
    /// most 8k) for the answer, as much for a summary (at most 4k), and 5% as
    /// a margin for the token estimate.
    pub fn for_window(context_window: u32) -> Self {
        Self {
            context_window,
            output_budget: (context_window / 8).min(8_192),
            summary_reserve: (context_window / 8).min(4_096),
            safety_buffer: context_window / 20,
        }
    }

    /// The same model with another window: the output budget is kept if it
    /// still fits, the rest derived from the new window.
    pub fn with_window(self, context_window: u32) -> Self {
        let derived = Self::for_window(context_window);
        Self {
            output_budget: self.output_budget.min(derived.output_budget.max(1)),
            ..derived
        }
    }

    /// The window less the output budget and the safety buffer.
    pub fn effective_window(&self) -> u64 {
        u64::from(self.context_window)
            .saturating_sub(u64::from(self.output_budget))
            .saturating_sub(u64::from(self.safety_buffer))
    }

    /// The estimated request size above which history is compacted.
    pub fn compaction_threshold(&self) -> u64 {
        self.effective_window() * COMPACT_AT_PERCENT / 100
    }

    /// Tokens of recent history a compaction keeps verbatim.
    pub fn tail_budget(&self) -> u64 {
        u64::from(self.context_window) * TAIL_PERCENT / 100
    }

    /// The tail budget when `fixed` tokens (system prompt, tool schemas) come
    /// with every request: smaller where needed so that the fixed part, half
    /// a summary reserve and the tail stay under
    /// [`AFTER_COMPACTION_PERCENT`] of the window (a small model with many
    /// tools keeps only its last turn).
    pub fn tail_budget_with(&self, fixed: u64) -> u64 {
        let target = u64::from(self.context_window) * AFTER_COMPACTION_PERCENT / 100;
        let room = target.saturating_sub(fixed + u64::from(self.summary_reserve) / 2);
        self.tail_budget().min(room)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_alone_derives_the_budgets() {
        let p = ContextProfile::for_window(8_192);
        assert_eq!(p.output_budget, 1_024);
        assert_eq!(p.summary_reserve, 1_024);
        assert_eq!(p.safety_buffer, 409);
        assert_eq!(p.effective_window(), 8_192 - 1_024 - 409);
        assert_eq!(p.compaction_threshold(), (8_192 - 1_024 - 409) * 90 / 100);
        assert_eq!(p.tail_budget(), 819);
        assert_eq!(p.tail_budget_with(1_000), 819);
        assert_eq!(p.tail_budget_with(3_000), 4_096 - 3_000 - 512);
        assert_eq!(p.tail_budget_with(5_000), 0);
        let big = ContextProfile::for_window(200_000);
        assert_eq!(big.output_budget, 8_192);
        assert_eq!(big.summary_reserve, 4_096);
    }

    #[test]
    fn a_smaller_window_caps_the_output_budget() {
        let known = ContextProfile {
            context_window: 128_000,
            output_budget: 16_384,
            summary_reserve: 4_096,
            safety_buffer: 6_400,
        };
        let small = known.with_window(8_000);
        assert_eq!(small.context_window, 8_000);
        assert_eq!(small.output_budget, 1_000);
        let bigger = ContextProfile {
            output_budget: 2_000,
            ..known
        }
        .with_window(64_000);
        assert_eq!(bigger.output_budget, 2_000);
    }
}
