//! `[runs]`: the bound on a run request's budgets and the caps on a run's
//! steering messages.

use anyhow::bail;
use paddock_runtime::{QueueSettings, SteeringSettings};
use serde::Deserialize;

use super::in_section;

/// `[runs]`: the most budgets a run request may ask (`max_turns`, default
/// 500; `max_tokens`, 20,000,000; `max_tool_calls`, 2,000;
/// `max_wall_clock_secs`, 21,600; `max_cost_micro_usd`, none), a request
/// over one refused with 400 and a budget left at its default lowered to
/// the bound; and the caps on one run's steering messages
/// (`max_steering_messages`, default 50; `max_steering_message_chars`,
/// 32,000, the most there is; `max_steering_total_chars`, 100,000), a
/// message over one refused (429 `steering_limit`, or 400 for one
/// message's size). `when_full`: what a run whose sandbox finds no slot
/// does, `refuse` (429, the default) or `queue` (recorded `queued`, started
/// first in first out per tenant when a slot frees), with
/// `max_queued_per_tenant` (default 16, at most 10,000; past it 429
/// `queue_full`) and `max_queue_wait_secs` (default 900, 1 to 86,400;
/// past it the run fails, `queue_timeout`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunsSection {
    // The bound on a request's budgets is read key by key: `Budgets` is the
    // API's wire type (milliseconds, per-run defaults), not this section's.
    pub max_turns: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_tool_calls: Option<u32>,
    pub max_wall_clock_secs: Option<u64>,
    pub max_cost_micro_usd: Option<u64>,
    /// `max_steering_messages`, `max_steering_message_chars`,
    /// `max_steering_total_chars`.
    #[serde(flatten)]
    pub steering: SteeringSettings,
    /// `when_full`, `max_queued_per_tenant`, `max_queue_wait_secs`.
    #[serde(flatten)]
    pub queue: QueueSettings,
}

impl RunsSection {
    /// The bound on a run request's budgets; every field above 0.
    pub fn budget_max(&self) -> anyhow::Result<paddock_core::store::Budgets> {
        let d = paddock_runtime::DEFAULT_BUDGET_MAX;
        for (field, value) in [
            ("max_turns", self.max_turns.map(u64::from)),
            ("max_tokens", self.max_tokens),
            ("max_tool_calls", self.max_tool_calls.map(u64::from)),
            ("max_wall_clock_secs", self.max_wall_clock_secs),
            ("max_cost_micro_usd", self.max_cost_micro_usd),
        ] {
            if value == Some(0) {
                bail!("runs.{field} must be more than 0");
            }
        }
        Ok(paddock_core::store::Budgets {
            max_turns: self.max_turns.unwrap_or(d.max_turns),
            max_tokens: self.max_tokens.unwrap_or(d.max_tokens),
            max_tool_calls: self.max_tool_calls.unwrap_or(d.max_tool_calls),
            max_wall_clock_ms: self
                .max_wall_clock_secs
                .map_or(d.max_wall_clock_ms, |s| s.saturating_mul(1000)),
            max_cost_micro_usd: self.max_cost_micro_usd.or(d.max_cost_micro_usd),
        })
    }

    /// What a run that finds no slot does, and the queue's bounds, checked.
    pub fn queue(&self) -> anyhow::Result<QueueSettings> {
        self.queue.validate().map_err(in_section("runs"))?;
        Ok(self.queue)
    }

    /// The caps on one run's steering, checked.
    pub fn steering(&self) -> anyhow::Result<SteeringSettings> {
        self.steering.validate().map_err(in_section("runs"))?;
        Ok(self.steering)
    }
}
