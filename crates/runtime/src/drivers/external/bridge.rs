//! What an agent CLI reports, recorded as a built-in run's: `model.message`
//! per model turn, `tool.call`/`tool.result` with invocation records, the
//! messages of the session's history, a checkpoint after each tool batch
//! that changed the workspace, the run's usage, and the budgets held
//! against each report (a budget that runs out stops the CLI).

use std::collections::HashMap;
use std::sync::Arc;

use paddock_core::ids::ToolInvocationId;
use paddock_core::model::{Message, Price, ToolCall, ToolResult, Usage};
use paddock_core::store::{
    CheckpointReason, Run, RunState, RunUpdate, RunUsage, ToolInvocation, ToolOutcome, ToolStatus,
};
use serde_json::json;
use tokio::time::Instant;

use super::bridged::{Bridged, Spent};
use crate::checkpoints::Checkpointer;
use crate::error::RuntimeError;
use crate::events::journal::Journal;
use crate::events::pipeline::Pipeline;
use crate::events::{
    CallStatus, CheckpointFailed, ModelDelta, ModelMessage, RESULT_EVENT_CAP, RunStateChanged,
    ToolCallEvent, ToolResultEvent, cap_text,
};
use crate::run::{Evidence, Exceeded, FamilyBudget, ReviewedCall, append_with_checkpoint};
use crate::tools::{Access, Effect, Role};
use crate::util::error_chain;

/// Why bridging stopped the CLI.
#[derive(Debug)]
pub(crate) enum Halt {
    Budget(Exceeded),
    Record(RuntimeError),
}

impl From<RuntimeError> for Halt {
    fn from(err: RuntimeError) -> Self {
        Halt::Record(err)
    }
}

/// A call recorded and not answered yet.
#[derive(Debug)]
struct Open {
    invocation: ToolInvocationId,
    tool: String,
    started: Instant,
    step: u64,
}

/// What the bridge is built from.
#[derive(Debug)]
pub(crate) struct BridgeParts {
    pub(crate) journal: Arc<Journal>,
    pub(crate) run: Run,
    pub(crate) family: Arc<FamilyBudget>,
    pub(crate) started: Instant,
    pub(crate) checkpoints: Option<Checkpointer>,
    /// What the CLI's model costs, for a CLI that reports no cost.
    pub(crate) price: Option<Price>,
}

#[derive(Debug)]
pub(crate) struct Bridge {
    pipe: Pipeline,
    journal: Arc<Journal>,
    run: Run,
    family: Arc<FamilyBudget>,
    started: Instant,
    checkpoints: Option<Checkpointer>,
    price: Option<Price>,
    usage: RunUsage,
    evidence: Evidence,
    /// Calls counted so far (a call's step).
    steps: u64,
    /// The model message being read: its text and calls, not yet recorded.
    text: String,
    calls: Vec<ToolCall>,
    open: HashMap<String, Open>,
    /// The current batch's results, and whether it changed anything.
    results: Vec<ToolResult>,
    changed: bool,
    /// The CLI's session, once it named one.
    pub(crate) session: Option<String>,
    /// The CLI's own end: its final text and whether it reports failure.
    pub(crate) finished: Option<(String, bool)>,
    /// The last text the model wrote.
    pub(crate) last_text: String,
    /// The last error the CLI reported.
    pub(crate) last_error: Option<String>,
}

impl Bridge {
    pub(crate) fn new(parts: BridgeParts) -> Self {
        Self {
            pipe: Pipeline::spawn(Arc::clone(&parts.journal)),
            journal: parts.journal,
            usage: parts.run.usage,
            run: parts.run,
            family: parts.family,
            started: parts.started,
            checkpoints: parts.checkpoints,
            price: parts.price,
            evidence: Evidence::default(),
            steps: 0,
            text: String::new(),
            calls: Vec::new(),
            open: HashMap::new(),
            results: Vec::new(),
            changed: false,
            session: None,
            finished: None,
            last_text: String::new(),
            last_error: None,
        }
    }

    pub(crate) fn usage(&self) -> RunUsage {
        let mut usage = self.usage;
        usage.wall_clock_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        usage
    }

    pub(crate) fn evidence(&self) -> &Evidence {
        &self.evidence
    }

    /// Records one report; a budget it exhausts halts the CLI.
    pub(crate) async fn apply(&mut self, report: Bridged) -> Result<(), Halt> {
        match report {
            Bridged::Session(id) => self.session = Some(id),
            Bridged::Turn => self.turn().await?,
            Bridged::Delta(text) => {
                let delta = ModelDelta::Text {
                    turn: self.usage.turns,
                    text,
                };
                self.journal.publish_transient(&delta)?;
            }
            Bridged::Text(text) => {
                if !self.text.is_empty() {
                    self.text.push('\n');
                }
                self.text.push_str(&text);
                self.last_text = text;
            }
            Bridged::ToolCall {
                id,
                tool,
                arguments,
            } => self.calls.push(ToolCall {
                id,
                name: tool,
                arguments,
            }),
            Bridged::ToolResult {
                id,
                content,
                is_error,
                effects,
            } => self.result(id, content, is_error, &effects).await?,
            Bridged::Spent(spent) => self.spend(spent)?,
            Bridged::Finished { text, is_error } => {
                self.finished = Some((text, is_error));
            }
            Bridged::Error(message) => self.last_error = Some(message),
        }
        Ok(())
    }

    /// A new model turn: what the last one left is recorded first.
    async fn turn(&mut self) -> Result<(), Halt> {
        self.flush().await?;
        self.family
            .reserve_turn((&self.run.budgets, &self.usage()))
            .map_err(Halt::Budget)?;
        self.usage.turns = self.usage.turns.saturating_add(1);
        self.set_state(RunState::Planning).await?;
        Ok(())
    }

    fn spend(&mut self, spent: Spent) -> Result<(), Halt> {
        let usage = Usage {
            input_tokens: spent.input_tokens,
            output_tokens: spent.output_tokens,
        };
        let cost = match (spent.cost_micro_usd, &self.price) {
            (0, Some(price)) => price.cost(&usage),
            (reported, _) => reported,
        };
        self.usage.input_tokens = self.usage.input_tokens.saturating_add(usage.input_tokens);
        self.usage.output_tokens = self.usage.output_tokens.saturating_add(usage.output_tokens);
        self.usage.cost_micro_usd = self.usage.cost_micro_usd.saturating_add(cost);
        self.family.charge(&usage, cost);
        self.family
            .within_spending((&self.run.budgets, &self.usage()))
            .map_err(Halt::Budget)
    }

    /// The model message read so far (`model.message`, the history), then
    /// its calls (`tool.call`, their invocations).
    async fn record_message(&mut self) -> Result<(), Halt> {
        if self.text.is_empty() && self.calls.is_empty() {
            return Ok(());
        }
        let text = std::mem::take(&mut self.text);
        let calls = std::mem::take(&mut self.calls);
        let event = ModelMessage {
            turn: self.usage.turns,
            text: text.clone(),
            tool_calls: calls.clone(),
            usage: None,
            compacted: false,
        };
        self.pipe
            .append_message(Message::assistant(text, calls.clone()))
            .await?;
        self.pipe.emit(&event).await?;
        if !calls.is_empty() {
            self.set_state(RunState::Acting).await?;
        }
        let mut exceeded = None;
        for call in calls {
            if exceeded.is_none()
                && let Err(over) = self
                    .family
                    .reserve_tool_call((&self.run.budgets, &self.usage()))
            {
                exceeded = Some(over);
            }
            self.steps += 1;
            self.usage.tool_calls = self.usage.tool_calls.saturating_add(1);
            let now = self.journal.store().now();
            let invocation = ToolInvocation::start(
                &self.run,
                call.name.as_str(),
                call.arguments.to_string(),
                now,
            );
            let event = ToolCallEvent {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
                invocation_id: invocation.id.clone(),
                idempotency_key: None,
            };
            self.open.insert(
                call.id,
                Open {
                    invocation: invocation.id.clone(),
                    tool: call.name,
                    started: Instant::now(),
                    step: self.steps,
                },
            );
            self.pipe.record_invocation(invocation).await?;
            self.pipe.emit(&event).await?;
        }
        match exceeded {
            Some(over) => Err(Halt::Budget(over)),
            None => Ok(()),
        }
    }

    async fn result(
        &mut self,
        id: String,
        content: String,
        is_error: bool,
        effects: &[Effect],
    ) -> Result<(), Halt> {
        self.record_message().await?;
        let Some(open) = self.open.remove(&id) else {
            tracing::debug!(call_id = %id, "a tool result for no call the CLI reported");
            return Ok(());
        };
        let status = if is_error {
            CallStatus::Failed
        } else {
            CallStatus::Succeeded
        };
        let outcome = ToolOutcome {
            status: if is_error {
                ToolStatus::Failed
            } else {
                ToolStatus::Succeeded
            },
            output: json!({ "content": content }).to_string(),
        };
        let (capped, truncated) = cap_text(&content, RESULT_EVENT_CAP);
        let event = ToolResultEvent {
            call_id: id.clone(),
            tool: open.tool.clone(),
            invocation_id: Some(open.invocation.clone()),
            status,
            is_error,
            content: capped,
            truncated,
            duration_ms: u64::try_from(open.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        };
        let now = self.journal.store().now();
        self.pipe
            .finish_invocation(open.invocation, outcome, now)
            .await?;
        self.pipe.emit(&event).await?;
        self.evidence.record(&ReviewedCall {
            step: open.step,
            tool: &open.tool,
            access: Some(access_of(&open.tool, effects)),
            role: Some(Role::Workspace),
            status,
            effects,
        });
        self.changed |= effects.iter().any(|e| {
            matches!(
                e,
                Effect::FilesChanged { .. } | Effect::CommandFinished { .. }
            )
        });
        self.results.push(ToolResult {
            call_id: id,
            content,
            is_error,
        });
        Ok(())
    }

    /// What is read and not recorded: the model message, and the batch's
    /// results with a checkpoint when the batch could have changed files.
    pub(crate) async fn flush(&mut self) -> Result<(), Halt> {
        self.record_message().await?;
        if self.results.is_empty() {
            return Ok(());
        }
        let message = Message::tool_results(std::mem::take(&mut self.results));
        if std::mem::take(&mut self.changed) {
            append_with_checkpoint(
                &self.pipe,
                &self.journal,
                self.checkpoints.as_mut(),
                message,
            )
            .await?;
        } else {
            self.pipe.append_message(message).await?;
        }
        Ok(())
    }

    /// Calls the CLI never answered (it was stopped) are closed as not run.
    pub(crate) async fn abandon_open(&mut self) -> Result<(), Halt> {
        let open: Vec<(String, Open)> = self.open.drain().collect();
        for (id, call) in open {
            let event = ToolResultEvent {
                call_id: id.clone(),
                tool: call.tool.clone(),
                invocation_id: Some(call.invocation.clone()),
                status: CallStatus::Skipped,
                is_error: true,
                content: "Not finished: the run ended before this call did.".to_owned(),
                truncated: false,
                duration_ms: u64::try_from(call.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            };
            let outcome = ToolOutcome {
                status: ToolStatus::Failed,
                output: json!({ "content": event.content }).to_string(),
            };
            let now = self.journal.store().now();
            self.pipe
                .finish_invocation(call.invocation, outcome, now)
                .await?;
            self.pipe.emit(&event).await?;
            self.results.push(ToolResult {
                call_id: id,
                content: event.content,
                is_error: true,
            });
        }
        Ok(())
    }

    /// A checkpoint of what the CLI left besides its tool batches (its own
    /// state, written as it ends), so the last checkpoint is the workspace
    /// as the run left it and a rewind needs no force. Failures are
    /// reported (`checkpoint.failed`), not fatal.
    pub(crate) async fn checkpoint_end(&mut self) -> Result<(), RuntimeError> {
        let Some(checkpoints) = self.checkpoints.as_mut() else {
            return Ok(());
        };
        self.pipe.barrier().await?;
        match checkpoints
            .take(self.journal.lease(), CheckpointReason::ToolBatch)
            .await
        {
            Ok(Some((_, created))) => self.pipe.emit(&created).await,
            Ok(None) => Ok(()),
            Err(err) => {
                tracing::warn!(error = %error_chain(&err), "checkpointing what the agent CLI left");
                self.pipe
                    .emit(&CheckpointFailed {
                        reason: CheckpointReason::ToolBatch,
                        error: error_chain(&err),
                    })
                    .await
            }
        }
    }

    pub(crate) async fn set_state(&mut self, state: RunState) -> Result<(), RuntimeError> {
        let usage = self.usage();
        self.pipe
            .update_run(RunUpdate {
                usage: Some(usage),
                ..RunUpdate::state(state)
            })
            .await?;
        self.pipe.emit(&RunStateChanged { state, usage }).await
    }

    /// Every write done; the run's usage.
    pub(crate) async fn close(self) -> Result<RunUsage, RuntimeError> {
        let usage = self.usage();
        self.pipe.close().await?;
        Ok(usage)
    }
}

/// How a CLI's tool weighs in the review: a shell command or a file write
/// may change the workspace; a tool that reported no effect only read.
fn access_of(tool: &str, effects: &[Effect]) -> Access {
    const READERS: &[&str] = &[
        "Read", "Glob", "Grep", "LS", "read", "glob", "grep", "list", "WebFetch", "webfetch",
    ];
    if READERS.contains(&tool) && effects.is_empty() {
        Access::ReadOnly
    } else {
        Access::Mutating
    }
}
