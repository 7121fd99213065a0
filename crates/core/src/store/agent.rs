//! What the agent runtime keeps about a session besides its runs and events:
//! goals with success criteria, the plan and its tasks, the message history,
//! and the per-run settings and results (mode, budgets, usage, review).

use serde::{Deserialize, Serialize};

use super::{NewEvent, RunEvent, Timestamp};
use crate::ids::{GoalId, RunId, SessionId, TenantId};
use crate::model::Message;

text_enum!(
    /// What a run may do. `plan` offers only read-only tools and mounts the
    /// workspace read-only, so no write gets through, not even from a shell.
    RunMode {
        Build => "build",
        Plan => "plan",
    }
);

text_enum!(
    /// What drives a run's agent: Paddock's own loop, or an agent CLI run
    /// inside the run's sandbox as the untrusted process it is.
    #[derive(Default)]
    DriverKind {
        /// Paddock's own loop (the default).
        #[default]
        Builtin => "builtin",
        /// Claude Code (`claude -p`, stream-json).
        #[serde(rename = "claude-code")]
        ClaudeCode => "claude-code",
        /// Codex CLI (`codex exec --json`).
        Codex => "codex",
        /// opencode (`opencode run`, JSON events).
        Opencode => "opencode",
    }
);

text_enum!(
    /// The role of a subagent run; a root run has none.
    SubagentProfile {
        /// Reads the workspace to answer a question (read-only).
        Explore => "explore",
        /// Turns a task into a plan (read-only).
        Plan => "plan",
        /// Reviews a change or a state (read-only).
        Review => "review",
        /// Changes the workspace, optionally inside a write scope.
        Build => "build",
    }
);

impl SubagentProfile {
    /// The mode the profile runs in: everything but `build` is read-only.
    pub fn mode(self) -> RunMode {
        match self {
            SubagentProfile::Build => RunMode::Build,
            SubagentProfile::Explore | SubagentProfile::Plan | SubagentProfile::Review => {
                RunMode::Plan
            }
        }
    }
}

text_enum!(
    /// Why a run stopped. The run's state says whether it completed, failed or
    /// was cancelled; this says what ended it.
    EndReason {
        /// The agent called `complete_task`; the review says whether the goal was met.
        Completed => "completed",
        /// A budget (turns, tokens, tool calls, wall clock) ran out.
        BudgetExceeded => "budget_exceeded",
        /// The same call was repeated after the recovery hint.
        RepeatedCall => "repeated_call",
        /// The agent asked the user a question; a new run carries the answer.
        AwaitingUser => "awaiting_user",
        Cancelled => "cancelled",
        /// The model provider failed (after its retries).
        ModelError => "model_error",
        /// The sandbox or the store failed under the run.
        InfrastructureError => "infrastructure_error",
        /// The process driving the run died; found at the next start.
        Interrupted => "interrupted",
        /// The run waited for a sandbox slot in its tenant's queue longer
        /// than the operator allows (`runs.max_queue_wait_secs`).
        QueueTimeout => "queue_timeout",
    }
);

/// Limits of one run; reaching any of them ends it with `budget_exceeded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct Budgets {
    /// Model calls.
    pub max_turns: u32,
    /// Input plus output tokens over all model calls.
    pub max_tokens: u64,
    pub max_tool_calls: u32,
    pub max_wall_clock_ms: u64,
    /// Most cost of the model calls in micro-dollars (millionths of a
    /// dollar), priced by the runtime's price table; None: no cost limit
    /// (and then left out, as in budgets written before cost limits existed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_micro_usd: Option<u64>,
}

impl Default for Budgets {
    fn default() -> Self {
        Self {
            max_turns: 50,
            max_tokens: 2_000_000,
            max_tool_calls: 200,
            max_wall_clock_ms: 30 * 60 * 1000,
            max_cost_micro_usd: None,
        }
    }
}

impl Budgets {
    /// Each budget as `(name, value)`; an absent cost limit is `None`.
    fn fields(&self) -> [(&'static str, Option<u64>); 5] {
        [
            ("max_turns", Some(u64::from(self.max_turns))),
            ("max_tokens", Some(self.max_tokens)),
            ("max_tool_calls", Some(u64::from(self.max_tool_calls))),
            ("max_wall_clock_ms", Some(self.max_wall_clock_ms)),
            ("max_cost_micro_usd", self.max_cost_micro_usd),
        ]
    }

    /// These budgets held to the operator's bound `max`: a budget left at
    /// its default ([`Budgets::default`]) or a cost limit left out is
    /// lowered to the bound; one asked over it is the error
    /// `(name, asked, most)`. A bound of `None` (cost) bounds nothing.
    pub fn bounded_by(self, max: &Budgets) -> Result<Budgets, (&'static str, u64, u64)> {
        let default = Budgets::default();
        let mut out = self;
        for (((name, asked), (_, most)), (_, by_default)) in self
            .fields()
            .into_iter()
            .zip(max.fields())
            .zip(default.fields())
        {
            let Some(most) = most else { continue };
            match asked {
                Some(asked) if asked <= most => {}
                Some(asked) if Some(asked) != by_default => return Err((name, asked, most)),
                // left at its default, or no cost limit: the bound
                _ => out.set(name, most),
            }
        }
        Ok(out)
    }

    fn set(&mut self, name: &str, value: u64) {
        let narrow = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        match name {
            "max_turns" => self.max_turns = narrow(value),
            "max_tokens" => self.max_tokens = value,
            "max_tool_calls" => self.max_tool_calls = narrow(value),
            "max_wall_clock_ms" => self.max_wall_clock_ms = value,
            _ => self.max_cost_micro_usd = Some(value),
        }
    }
}

/// What a run has spent so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct RunUsage {
    pub turns: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub tool_calls: u32,
    pub wall_clock_ms: u64,
    /// Cost of the model calls in micro-dollars; 0 when the model has no
    /// price (and then left out, as in usage written before prices existed).
    #[serde(skip_serializing_if = "is_zero")]
    pub cost_micro_usd: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl RunUsage {
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// This usage and `other`'s together, field by field (saturating). The
    /// wall clocks add up too: runs side by side count twice.
    pub fn plus(&self, other: &RunUsage) -> RunUsage {
        RunUsage {
            turns: self.turns.saturating_add(other.turns),
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            tool_calls: self.tool_calls.saturating_add(other.tool_calls),
            wall_clock_ms: self.wall_clock_ms.saturating_add(other.wall_clock_ms),
            cost_micro_usd: self.cost_micro_usd.saturating_add(other.cost_micro_usd),
        }
    }
}

text_enum!(
    /// Whether a goal (or one of its criteria) is met. `unsure` is the honest
    /// answer when the run cannot show evidence either way.
    Verdict {
        Met => "met",
        NotMet => "not_met",
        Unsure => "unsure",
    }
);

/// One success criterion as the review judged it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CriterionReview {
    pub criterion: String,
    pub verdict: Verdict,
    pub evidence: Option<String>,
}

/// The structured end of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Review {
    pub verdict: Verdict,
    pub summary: String,
    /// What shows the verdict: commands that passed, files written, ...
    pub evidence: Vec<String>,
    /// What is left to do.
    pub remaining: Vec<String>,
    pub criteria: Vec<CriterionReview>,
}

text_enum!(
    GoalStatus {
        Open => "open",
        Met => "met",
        NotMet => "not_met",
        Unsure => "unsure",
    }
);

impl From<Verdict> for GoalStatus {
    fn from(verdict: Verdict) -> Self {
        match verdict {
            Verdict::Met => GoalStatus::Met,
            Verdict::NotMet => GoalStatus::NotMet,
            Verdict::Unsure => GoalStatus::Unsure,
        }
    }
}

/// What a run sets out to achieve and how to tell it did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Goal {
    pub id: GoalId,
    pub tenant: TenantId,
    pub session: SessionId,
    pub run: RunId,
    pub description: String,
    pub success_criteria: Vec<String>,
    pub status: GoalStatus,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

text_enum!(
    TaskStatus {
        Pending => "pending",
        InProgress => "in_progress",
        Done => "done",
        Blocked => "blocked",
        Cancelled => "cancelled",
    }
);

/// One step of a session's plan. `key` is the id the model uses ("1", "tests", ...);
/// unique within the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub key: String,
    pub title: String,
    pub status: TaskStatus,
    /// The run that last changed it.
    pub run: RunId,
    pub updated_at: Timestamp,
}

/// A version of a session's plan: the ordered task list as `update_plan` last
/// set it. Each save gets the next version; the tasks table holds the latest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub tenant: TenantId,
    pub session: SessionId,
    pub run: RunId,
    /// 1, 2, 3, ... per session; assigned by the store on save.
    pub version: u64,
    pub explanation: Option<String>,
    pub tasks: Vec<Task>,
    pub created_at: Timestamp,
}

/// One entry of a session's conversation history (what the model sees).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMessage {
    pub tenant: TenantId,
    pub session: SessionId,
    pub run: RunId,
    /// 1, 2, 3, ... per session; assigned by the store on append.
    pub seq: u64,
    pub message: Message,
    pub created_at: Timestamp,
}

/// Most characters of one steering message.
pub const STEERING_TEXT_MAX: usize = 32_000;

/// How much steering one run takes in all: every message posted to it
/// counts, delivered or not ([`crate::store::Store::post_steering_message`]
/// refuses one over either cap with [`crate::store::StoreError::Limit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SteeringCaps {
    pub max_messages: u32,
    /// Characters of all its messages together.
    pub max_total_chars: u64,
}

/// A message a user sent to a run in progress ("steering"): the loop driving
/// the run puts it into the history before its next model request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SteeringMessage {
    pub tenant: TenantId,
    pub run: RunId,
    /// Assigned by the store, counted per run (1, 2, ...): later messages
    /// of a run have higher ids, and an id says nothing of other runs.
    pub id: u64,
    pub text: String,
    pub created_at: Timestamp,
    /// When the run's loop took it; None while it waits.
    pub delivered_at: Option<Timestamp>,
}

/// A waiting steering message as its run's loop delivers it
/// ([`Store::deliver_steering_messages`](super::Store::deliver_steering_messages)):
/// the history entry and the `user.message` event that carry it.
#[derive(Debug, Clone, PartialEq)]
pub struct SteeringDelivery {
    /// The steering message's id.
    pub id: u64,
    /// Its entry in the session's history (`seq` is assigned by the store).
    pub message: StoredMessage,
    /// Its `user.message` event.
    pub event: NewEvent,
}

/// A steering message delivered: its history entry and its event as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct SteeringDelivered {
    pub id: u64,
    pub message: StoredMessage,
    pub event: RunEvent,
}

/// How a run's loop closes its steering queue as the run is about to end
/// ([`Store::close_steering`](super::Store::close_steering)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SteeringClose {
    /// The run could go on: with messages waiting the queue stays open and
    /// they are returned undelivered, for the loop to deliver
    /// ([`Store::deliver_steering_messages`](super::Store::deliver_steering_messages))
    /// and answer; with none waiting the queue closes.
    UnlessWaiting,
    /// The run ends whatever waits: the queue closes and the messages
    /// waiting are returned as they are, undelivered.
    Always,
}

/// What closing a run's steering queue did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SteeringClosed {
    /// Whether the queue is closed now (a post is refused from here on).
    pub closed: bool,
    /// The messages that were waiting, oldest first, undelivered (when the
    /// queue stayed open, for the loop to deliver).
    pub messages: Vec<SteeringMessage>,
}

/// A change to a session's title or status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionPatch {
    pub title: Option<String>,
    pub status: Option<super::SessionStatus>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_fill_missing_fields_with_defaults() -> Result<(), serde_json::Error> {
        let budgets: Budgets = serde_json::from_str(r#"{"max_turns": 3}"#)?;
        assert_eq!(budgets.max_turns, 3);
        assert_eq!(budgets.max_tool_calls, Budgets::default().max_tool_calls);
        Ok(())
    }

    /// Issue 27: a budget asked over the operator's bound is refused with
    /// its name and both figures; one left at its default is lowered to
    /// the bound, and a cost bound fills in a cost limit left out.
    #[test]
    fn budgets_are_held_to_the_bound() {
        let max = Budgets {
            max_turns: 100,
            max_tokens: 1_000_000,
            max_tool_calls: 500,
            max_wall_clock_ms: 60_000,
            max_cost_micro_usd: Some(5_000_000),
        };
        let asked = Budgets {
            max_turns: 101,
            ..Budgets::default()
        };
        assert_eq!(asked.bounded_by(&max), Err(("max_turns", 101, 100)));
        let held = Budgets {
            max_turns: 10,
            ..Budgets::default()
        }
        .bounded_by(&max)
        .unwrap_or_default();
        assert_eq!(
            held,
            Budgets {
                max_turns: 10,
                max_tokens: 1_000_000,
                max_tool_calls: 200,
                max_wall_clock_ms: 60_000,
                max_cost_micro_usd: Some(5_000_000),
            }
        );
        let no_cost_bound = Budgets {
            max_cost_micro_usd: None,
            ..max
        };
        assert_eq!(
            Budgets::default()
                .bounded_by(&no_cost_bound)
                .map(|b| b.max_cost_micro_usd),
            Ok(None)
        );
    }

    #[test]
    fn only_build_profile_may_write() {
        let writers: Vec<_> = SubagentProfile::ALL
            .iter()
            .filter(|p| p.mode() == RunMode::Build)
            .collect();
        assert_eq!(writers, [&SubagentProfile::Build]);
    }
}
