//! The run loop: check budgets, ask the model, run the tools it asked for,
//! feed the results back, until the agent completes, asks the user, runs out
//! of budget, repeats itself, fails or is cancelled. Every state change,
//! message, tool invocation and event is handed to the run's [`Pipeline`]:
//! one writer task performs them in order through the [`Journal`] while the
//! loop goes on, and a call that changes the workspace waits until its
//! invocation record is written (see pipeline.rs).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::future::join_all;
use paddock_core::ids::ToolInvocationId;
use paddock_core::model::{
    Message, ModelError, ModelProvider, ModelRequest, ModelResponse, Price, ToolCall, ToolResult,
    ToolSchema, Usage, estimate_tokens,
};
use paddock_core::store::{
    EndReason, Plan, Review, Run, RunState, RunUpdate, RunUsage, SteeringClose, SteeringMessage,
    Task, ToolInvocation, ToolOutcome,
};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::budget::{Budget, Exceeded, Scope};
use super::checkpointed;
use super::compact;
use super::family_budget::{FamilyBudget, deadline_after};
use super::live;
use super::repeat::{Repeat, RepeatGuard};
use super::resume::{self, Answer, ResumeTail};
use super::review::{self, Evidence};
use super::settled::Settled;
use crate::checkpoints::Checkpointer;
use crate::config::MemoryReview;
use crate::context::ContextBase;
use crate::context::compactor::{self, Compactor};
use crate::error::RuntimeError;
use crate::events::journal::Journal;
use crate::events::pipeline::Pipeline;
use crate::events::{
    CallStatus, ModelMessage, ParentMessage, Progress, RESULT_EVENT_CAP, RunStateChanged,
    ToolCallEvent, ToolResultEvent, cap_text,
};
use crate::memory::MemoryPlace;
use crate::tools::{Access, Completion, Effect, PlanStep, Tool, ToolContext, ToolRegistry};
use crate::util::error_chain;

/// How a run's loop ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ending {
    /// `complete_task`, with the checked review.
    Completed(Review),
    /// The model answered without any tool call (and without `complete_task`).
    Stopped {
        text: String,
    },
    AwaitingUser {
        question: String,
    },
    Failed {
        reason: EndReason,
        error: String,
    },
    Cancelled,
}

impl Ending {
    fn budget(exceeded: Exceeded) -> Self {
        Ending::Failed {
            reason: EndReason::BudgetExceeded,
            error: exceeded.to_string(),
        }
    }
}

/// What stopped the loop early.
#[derive(Debug)]
enum Stop {
    End(Ending),
    Interrupted(Interrupt),
    Error(RuntimeError),
}

impl From<RuntimeError> for Stop {
    fn from(err: RuntimeError) -> Self {
        Stop::Error(err)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interrupt {
    Cancelled,
    WallClock,
}

/// Runs `fut` unless the run is cancelled or its wall clock runs out first.
async fn guarded<F: Future>(
    cancel: &CancellationToken,
    deadline: Instant,
    fut: F,
) -> Result<F::Output, Interrupt> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(Interrupt::Cancelled),
        () = tokio::time::sleep_until(deadline) => Err(Interrupt::WallClock),
        out = fut => Ok(out),
    }
}

/// Everything a driver is built from.
#[derive(Debug)]
pub(crate) struct DriverParts {
    pub(crate) journal: Arc<Journal>,
    pub(crate) registry: Arc<ToolRegistry>,
    pub(crate) provider: Arc<dyn ModelProvider>,
    pub(crate) run: Run,
    pub(crate) criteria: Vec<String>,
    pub(crate) ctx: ToolContext,
    pub(crate) system: String,
    pub(crate) schemas: Vec<ToolSchema>,
    pub(crate) history: Vec<Message>,
    /// Where `history` sits in the stored messages.
    pub(crate) context: ContextBase,
    pub(crate) started: Instant,
    pub(crate) lease_lost: Arc<AtomicBool>,
    /// A subagent's messages from its parent.
    pub(crate) inbox: Option<mpsc::UnboundedReceiver<String>>,
    /// The budget the run shares with its family (its own when it has none).
    pub(crate) family: Arc<FamilyBudget>,
    /// What the run's model costs; None: unknown (no cost is counted).
    pub(crate) price: Option<Price>,
    /// Where a root run leaves what it learned; None for a subagent.
    pub(crate) memory: Option<(MemoryPlace, MemoryReview)>,
    /// A writing root run's checkpoints; None: it takes none.
    pub(crate) checkpoints: Option<Checkpointer>,
    /// A resumed run's calls its predecessor left without results.
    pub(crate) resume: Option<ResumeTail>,
}

/// A call admitted to run, and what its result is recorded against.
#[derive(Debug)]
struct CallRecord {
    index: usize,
    call_id: String,
    tool: String,
    invocation: ToolInvocationId,
    /// The idempotency key its command sees: `invocation`, or the key of the
    /// call a resume runs again.
    key: ToolInvocationId,
    started: Instant,
    /// 1-based position among the run's calls (for the review's evidence).
    step: u64,
}

#[derive(Debug)]
struct Pending {
    record: CallRecord,
    tool: Arc<dyn Tool>,
    arguments: Value,
}

enum Admit {
    Settled(ToolResult),
    Run(Pending),
    /// The call was refused and the run ends with it.
    End(ToolResult, Ending),
}

/// Where the loop records: the run's journal, the pipeline that writes
/// through it in order, and whether a lease was lost (which stops the run).
#[derive(Debug)]
struct Output {
    journal: Arc<Journal>,
    pipe: Pipeline,
    lease_lost: Arc<AtomicBool>,
}

/// What the model is asked with: the provider, the system prompt, the
/// tool schemas, the history and its compactor, the price of its usage and
/// a subagent's messages from its parent.
#[derive(Debug)]
struct ModelSide {
    provider: Arc<dyn ModelProvider>,
    system: String,
    schemas: Vec<ToolSchema>,
    history: Vec<Message>,
    compactor: Compactor,
    price: Option<Price>,
    inbox: Option<mpsc::UnboundedReceiver<String>>,
}

/// How the model's calls run: the tools and their context, the repeat
/// guard, the count of calls, checkpoints after a batch, and what a resume
/// runs again.
#[derive(Debug)]
struct ToolSide {
    registry: Arc<ToolRegistry>,
    ctx: ToolContext,
    guard: RepeatGuard,
    calls: u64,
    checkpoints: Option<Checkpointer>,
    resume: Option<ResumeTail>,
    /// The keys of the calls a resume runs again, by call id, taken as
    /// each is admitted.
    replay_keys: HashMap<String, ToolInvocationId>,
}

/// What the run spends: its usage, its clock and deadline, and the budget
/// it shares with its family.
#[derive(Debug)]
struct Spend {
    usage: RunUsage,
    started: Instant,
    deadline: Instant,
    family: Arc<FamilyBudget>,
}

/// What the run is for and what it has shown: the run and its criteria,
/// the evidence its review reads, how it completed or what it asked, and
/// where a root run leaves what it learned.
#[derive(Debug)]
struct GoalSide {
    run: Run,
    criteria: Vec<String>,
    evidence: Evidence,
    completion: Option<Completion>,
    question: Option<String>,
    memory: Option<(MemoryPlace, MemoryReview)>,
}

#[derive(Debug)]
pub(crate) struct Driver {
    out: Output,
    model: ModelSide,
    tools: ToolSide,
    spend: Spend,
    goal: GoalSide,
}

impl Driver {
    pub(crate) fn new(parts: DriverParts) -> Self {
        let own = deadline_after(parts.started, parts.run.budgets.max_wall_clock_ms);
        let deadline = own.min(parts.family.deadline());
        Self {
            out: Output {
                pipe: Pipeline::spawn(Arc::clone(&parts.journal)),
                journal: parts.journal,
                lease_lost: parts.lease_lost,
            },
            model: ModelSide {
                compactor: Compactor::new(parts.provider.context_profile(), parts.context),
                provider: parts.provider,
                system: parts.system,
                schemas: parts.schemas,
                history: parts.history,
                price: parts.price,
                inbox: parts.inbox,
            },
            tools: ToolSide {
                registry: parts.registry,
                ctx: parts.ctx,
                guard: RepeatGuard::default(),
                calls: 0,
                checkpoints: parts.checkpoints,
                resume: parts.resume,
                replay_keys: HashMap::new(),
            },
            spend: Spend {
                usage: parts.run.usage,
                started: parts.started,
                deadline,
                family: parts.family,
            },
            goal: GoalSide {
                run: parts.run,
                criteria: parts.criteria,
                evidence: Evidence::default(),
                completion: None,
                question: None,
                memory: parts.memory,
            },
        }
    }

    pub(super) fn history(&self) -> &[Message] {
        &self.model.history
    }

    pub(super) fn run_goal(&self) -> String {
        self.goal.run.goal.clone()
    }

    pub(super) fn journal(&self) -> &Journal {
        &self.out.journal
    }

    pub(super) fn memory(&self) -> Option<(MemoryPlace, MemoryReview)> {
        self.goal.memory.clone()
    }

    /// Drives the run to its end; never fails (failures are endings). Every
    /// write of the loop is done when this returns.
    pub(crate) async fn run(mut self) -> (Ending, RunUsage) {
        let ending = self.drive().await;
        // what follows records the end: a cancel no longer cuts its waits for space
        self.out.journal.ending();
        self.leave_memory(&ending).await;
        let usage = self.spend.usage;
        let ending = match self.out.pipe.close().await {
            Ok(()) => ending,
            Err(err) => match ending {
                failed @ Ending::Failed { .. } => failed,
                // the cancel cut a write short (see events/store_wait.rs)
                Ending::Cancelled if matches!(err, RuntimeError::Journal { .. }) => {
                    Ending::Cancelled
                }
                _ => Ending::Failed {
                    reason: EndReason::InfrastructureError,
                    error: error_chain(&err),
                },
            },
        };
        (ending, usage)
    }

    async fn drive(&mut self) -> Ending {
        let resumed = match self.tools.resume.take() {
            Some(tail) => self.answer_unanswered(tail).await,
            None => Ok(()),
        };
        let outcome = match resumed {
            Ok(()) => self.turns().await,
            Err(stop) => Err(stop),
        };
        let stop = match outcome {
            Ok(ending) => return ending,
            Err(stop) => stop,
        };
        self.tick();
        match stop {
            Stop::End(ending) => ending,
            Stop::Interrupted(Interrupt::WallClock) => Ending::budget(self.wall_clock_exceeded()),
            Stop::Interrupted(Interrupt::Cancelled) => self.cancelling().await,
            // A write the cancel cut short (a full store's wait ends at a
            // cancel): the run was cancelled, not failed.
            Stop::Error(RuntimeError::Journal { .. }) if self.tools.ctx.cancel.is_cancelled() => {
                self.cancelling().await
            }
            Stop::Error(err) => Ending::Failed {
                reason: EndReason::InfrastructureError,
                error: error_chain(&err),
            },
        }
    }

    async fn cancelling(&mut self) -> Ending {
        if self.out.lease_lost.load(Ordering::SeqCst) {
            return Ending::Failed {
                reason: EndReason::InfrastructureError,
                error: "the session lease was taken over by another driver".to_owned(),
            };
        }
        if let Err(err) = self.set_state(RunState::Cancelling).await {
            tracing::warn!(error = %error_chain(&err), "recording the cancelling state");
        }
        Ending::Cancelled
    }

    fn tick(&mut self) {
        self.spend.usage.wall_clock_ms =
            u64::try_from(self.spend.started.elapsed().as_millis()).unwrap_or(u64::MAX);
    }

    fn wall_clock_exceeded(&self) -> Exceeded {
        let own = deadline_after(self.spend.started, self.goal.run.budgets.max_wall_clock_ms);
        if self.spend.family.deadline() < own {
            return Exceeded {
                budget: Budget::WallClock,
                scope: Scope::Family,
                used: self.spend.family.spent().wall_clock_ms,
                limit: self.spend.family.limits().max_wall_clock_ms,
            };
        }
        Exceeded {
            budget: Budget::WallClock,
            scope: Scope::Run,
            used: self.spend.usage.wall_clock_ms,
            limit: self.goal.run.budgets.max_wall_clock_ms,
        }
    }

    async fn set_state(&mut self, state: RunState) -> Result<(), RuntimeError> {
        self.tick();
        let update = RunUpdate {
            usage: Some(self.spend.usage),
            ..RunUpdate::state(state)
        };
        let changed = RunStateChanged {
            state,
            usage: self.spend.usage,
        };
        self.out.pipe.update_run(update).await?;
        self.out.pipe.emit(&changed).await?;
        Ok(())
    }

    async fn turns(&mut self) -> Result<Ending, Stop> {
        loop {
            if self.tools.ctx.cancel.is_cancelled() {
                return Err(Stop::Interrupted(Interrupt::Cancelled));
            }
            self.tick();
            self.spend
                .family
                .reserve_turn((&self.goal.run.budgets, &self.spend.usage))
                .map_err(|e| Stop::End(Ending::budget(e)))?;
            self.set_state(RunState::Planning).await?;
            self.read_inbox().await?;
            self.read_steering().await?;

            let (response, compacted) = self.model_turn().await?;
            let message = response.to_message();
            self.model.history.push(message.clone());
            let event = ModelMessage {
                turn: self.spend.usage.turns,
                text: response.text.clone(),
                tool_calls: response.tool_calls.clone(),
                usage: response.usage,
                compacted,
            };
            self.out.pipe.append_message(message).await?;
            self.out.pipe.emit(&event).await?;
            if response.tool_calls.is_empty() {
                let stopped = Ending::Stopped {
                    text: response.text,
                };
                match self.end_unless_spoken_to(stopped).await? {
                    Some(ending) => return Ok(ending),
                    None => continue,
                }
            }

            self.set_state(RunState::Acting).await?;
            let mutating = self.any_mutating(&response.tool_calls);
            let (results, stop) = self.act(&response.tool_calls).await;
            let message = Message::tool_results(results);
            self.model.history.push(message.clone());
            if mutating {
                self.append_with_checkpoint(message).await?;
            } else {
                self.out.pipe.append_message(message).await?;
            }
            if let Some(stop) = stop {
                return Err(stop);
            }
            let ending = if let Some(completion) = self.goal.completion.take() {
                self.set_state(RunState::Verifying).await?;
                let review = review::review(&completion, &self.goal.criteria, &self.goal.evidence);
                Some(Ending::Completed(review))
            } else {
                self.goal
                    .question
                    .take()
                    .map(|question| Ending::AwaitingUser { question })
            };
            if let Some(ending) = ending {
                match self.end_unless_spoken_to(ending).await? {
                    Some(ending) => return Ok(ending),
                    None => continue,
                }
            }
            self.set_state(RunState::Observing).await?;
        }
    }

    /// Whether any of `calls` is of a tool that may change the workspace.
    fn any_mutating(&self, calls: &[ToolCall]) -> bool {
        calls.iter().any(|call| {
            self.tools
                .registry
                .get(&call.name)
                .is_some_and(|tool| tool.contract().access == Access::Mutating)
        })
    }

    /// After a tool batch that could change the workspace: its results
    /// and a checkpoint (see [`checkpointed::append`]).
    async fn append_with_checkpoint(&mut self, message: Message) -> Result<(), RuntimeError> {
        checkpointed::append(
            &self.out.pipe,
            &self.out.journal,
            self.tools.checkpoints.as_mut(),
            message,
        )
        .await
    }

    /// A resumed run first answers the calls its predecessor left without
    /// results, by their tools' replay policy (run/resume.rs).
    async fn answer_unanswered(&mut self, tail: ResumeTail) -> Result<(), Stop> {
        let registry = Arc::clone(&self.tools.registry);
        let answers = resume::plan(tail, |name| registry.get(name).map(|t| t.contract()));
        if answers.is_empty() {
            return Ok(());
        }
        let rerun: Vec<ToolCall> = answers
            .iter()
            .filter_map(|a| match a {
                Answer::Rerun(call, key) => {
                    if let Some(key) = key {
                        self.tools.replay_keys.insert(call.id.clone(), key.clone());
                    }
                    Some(call.clone())
                }
                Answer::Given(..) => None,
            })
            .collect();
        let (ran, stop) = self.act(&rerun).await;
        let mut ran = ran.into_iter();
        let mut results = Vec::with_capacity(answers.len());
        for answer in answers {
            match answer {
                Answer::Rerun(..) => results.extend(ran.next()),
                Answer::Given(result, event) => {
                    if let Some(event) = event {
                        self.out.pipe.emit(&event).await?;
                    }
                    results.push(result);
                }
            }
        }
        let mutating = self.any_mutating(&rerun);
        let message = Message::tool_results(results);
        self.model.history.push(message.clone());
        if mutating {
            // what was done again is checkpointed with its results, as any batch
            self.append_with_checkpoint(message).await?;
        } else {
            self.out.pipe.append_message(message).await?;
        }
        match stop {
            Some(stop) => Err(stop),
            None => Ok(()),
        }
    }

    /// Messages the parent sent since the last turn join the history.
    async fn read_inbox(&mut self) -> Result<(), RuntimeError> {
        while let Some(text) = self.model.inbox.as_mut().and_then(|rx| rx.try_recv().ok()) {
            let message = Message::user(format!("Message from your parent agent:\n{text}"));
            self.model.history.push(message.clone());
            self.out.pipe.append_message(message).await?;
            self.out.pipe.emit(&ParentMessage { message: text }).await?;
        }
        Ok(())
    }

    /// Steering messages the user sent since the last turn join the history.
    async fn read_steering(&mut self) -> Result<(), RuntimeError> {
        let waiting = self.out.journal.waiting_steering().await?;
        self.deliver(waiting).await.map(drop)
    }

    /// Steering messages join the history, each with its `user.message`,
    /// marked delivered in the same store write after what the pipeline
    /// holds is written (`Journal::deliver_steering`); answers whether any
    /// was delivered.
    async fn deliver(&mut self, waiting: Vec<SteeringMessage>) -> Result<bool, RuntimeError> {
        if waiting.is_empty() {
            return Ok(false);
        }
        self.out.pipe.barrier().await?;
        let delivered = self.out.journal.deliver_steering(waiting).await?;
        let any = !delivered.is_empty();
        self.model.history.extend(delivered);
        Ok(any)
    }

    /// The loop is about to end with `ending`, an ending after which the run
    /// could go on (it completed, stopped or asked the user). Its steering
    /// queue closes in the store unless a message waits; what waits is
    /// delivered instead and the loop goes on so the model answers it
    /// (None). A run without a turn left (cancelled, out of time, turns or
    /// another budget) ends as it is: its finish closes the queue and
    /// reports what waits undelivered (steering.rs).
    async fn end_unless_spoken_to(&mut self, ending: Ending) -> Result<Option<Ending>, Stop> {
        self.tick();
        let can_go_on = !self.tools.ctx.cancel.is_cancelled()
            && Instant::now() < self.spend.deadline
            && self
                .spend
                .family
                .has_turn((&self.goal.run.budgets, &self.spend.usage));
        if !can_go_on {
            return Ok(Some(ending));
        }
        let closed = self
            .out
            .journal
            .close_steering(SteeringClose::UnlessWaiting)
            .await?;
        if closed.closed {
            return Ok(Some(ending));
        }
        let count = closed.messages.len();
        if !self.deliver(closed.messages).await? {
            // taken by another close meanwhile: its finish reports them
            return Ok(Some(ending));
        }
        tracing::info!(
            count,
            "steering messages came as the run was ending: it goes on to answer them"
        );
        Ok(None)
    }

    /// One model call on the history (compacted if it grew too large).
    async fn model_turn(&mut self) -> Result<(ModelResponse, bool), Stop> {
        let summarised = self.summarise_if_needed().await?;
        let mut request = ModelRequest {
            system: Some(self.model.system.clone()),
            messages: self.model.history.clone(),
            tools: self.model.schemas.clone(),
            max_tokens: None,
            temperature: None,
            purpose: Default::default(),
        };
        let limit = self.model.compactor.profile().compaction_threshold();
        let compaction = compact::compact(&mut request, limit);
        if compaction.shortened > 0 {
            tracing::debug!(
                before = compaction.tokens_before,
                after = compaction.tokens_after,
                shortened = compaction.shortened,
                "compacted the model request"
            );
        }
        let model_cancel = self.tools.ctx.cancel.child_token();
        let stream = self.model.provider.stream(&request, model_cancel.clone());
        let turn = self.spend.usage.turns + 1;
        let collected = live::collect(stream, &self.out.journal, turn);
        let outcome = guarded(&self.tools.ctx.cancel, self.spend.deadline, collected).await;
        model_cancel.cancel();
        if !matches!(outcome, Ok(Ok(_))) {
            // no answer, no turn: the family counts what its members count
            self.spend.family.release_turn();
        }
        let response = match outcome {
            Err(interrupt) => return Err(Stop::Interrupted(interrupt)),
            Ok(Err(ModelError::Cancelled)) if self.tools.ctx.cancel.is_cancelled() => {
                return Err(Stop::Interrupted(Interrupt::Cancelled));
            }
            Ok(Err(err)) => {
                return Err(Stop::End(Ending::Failed {
                    reason: EndReason::ModelError,
                    error: error_chain(&err),
                }));
            }
            Ok(Ok(response)) => response,
        };
        let usage = response.usage.unwrap_or_else(|| Usage {
            input_tokens: compaction.tokens_after,
            output_tokens: estimate_tokens(&response.text)
                + response
                    .tool_calls
                    .iter()
                    .map(|c| estimate_tokens(&c.arguments.to_string()))
                    .sum::<u64>(),
        });
        self.spend.usage.turns += 1;
        self.spend.usage.input_tokens = self
            .spend
            .usage
            .input_tokens
            .saturating_add(usage.input_tokens);
        self.spend.usage.output_tokens = self
            .spend
            .usage
            .output_tokens
            .saturating_add(usage.output_tokens);
        let cost = self.model.price.map_or(0, |price| price.cost(&usage));
        self.spend.usage.cost_micro_usd = self.spend.usage.cost_micro_usd.saturating_add(cost);
        self.spend.family.charge(&usage, cost);
        Ok((response, summarised || compaction.shortened > 0))
    }

    /// Summarising compaction of the history before a model call; what the
    /// summary call spent counts towards the run's tokens.
    async fn summarise_if_needed(&mut self) -> Result<bool, RuntimeError> {
        let fixed = ModelRequest {
            system: Some(self.model.system.clone()),
            tools: self.model.schemas.clone(),
            ..ModelRequest::default()
        }
        .estimate_tokens();
        let env = compactor::Env {
            provider: self.model.provider.as_ref(),
            journal: &self.out.journal,
            pipe: &self.out.pipe,
            goal: &self.goal.run.goal,
            cancel: &self.tools.ctx.cancel,
            deadline: self.spend.deadline,
        };
        let Some(done) = self
            .model
            .compactor
            .compact_if_needed(&env, &mut self.model.history, fixed)
            .await?
        else {
            return Ok(false);
        };
        self.spend.usage.input_tokens = self
            .spend
            .usage
            .input_tokens
            .saturating_add(done.usage.input_tokens);
        self.spend.usage.output_tokens = self
            .spend
            .usage
            .output_tokens
            .saturating_add(done.usage.output_tokens);
        let cost = self.model.price.map_or(0, |price| price.cost(&done.usage));
        self.spend.usage.cost_micro_usd = self.spend.usage.cost_micro_usd.saturating_add(cost);
        self.spend.family.charge(&done.usage, cost);
        Ok(true)
    }

    /// Runs one turn's calls: read-only ones side by side, mutating ones
    /// alone and in order. Returns a result for every call, in call order
    /// (calls not run because the run ended say so), and what stopped the run.
    async fn act(&mut self, calls: &[ToolCall]) -> (Vec<ToolResult>, Option<Stop>) {
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        let mut batch: Vec<Pending> = Vec::new();
        let mut stop = None;
        for (index, call) in calls.iter().enumerate() {
            let mutating = self
                .tools
                .registry
                .get(&call.name)
                .is_some_and(|tool| tool.contract().access == Access::Mutating);
            if mutating && let Err(s) = self.flush(&mut batch, &mut results).await {
                stop = Some(s);
                break;
            }
            match self.admit(index, call).await {
                Ok(Admit::Settled(result)) => results[index] = Some(result),
                Ok(Admit::End(result, ending)) => {
                    results[index] = Some(result);
                    stop = Some(Stop::End(ending));
                    break;
                }
                Ok(Admit::Run(pending)) => {
                    batch.push(pending);
                    if mutating && let Err(s) = self.flush(&mut batch, &mut results).await {
                        stop = Some(s);
                        break;
                    }
                }
                Err(s) => {
                    stop = Some(s);
                    break;
                }
            }
        }
        if stop.is_none() {
            if let Err(s) = self.flush(&mut batch, &mut results).await {
                stop = Some(s);
            }
        } else {
            self.abandon(batch, &mut results).await;
        }
        let results = results
            .into_iter()
            .zip(calls)
            .map(|(result, call)| {
                result.unwrap_or_else(|| ToolResult {
                    call_id: call.id.clone(),
                    content: "Not run: the run ended before this call.".to_owned(),
                    is_error: true,
                })
            })
            .collect();
        (results, stop)
    }

    /// Checks one call (budget, repeat guard, known tool) and records it.
    async fn admit(&mut self, index: usize, call: &ToolCall) -> Result<Admit, Stop> {
        self.tick();
        self.spend
            .family
            .reserve_tool_call((&self.goal.run.budgets, &self.spend.usage))
            .map_err(|e| Stop::End(Ending::budget(e)))?;
        self.spend.usage.tool_calls += 1;
        self.tools.calls += 1;
        let store_now = self.out.journal.store().now();
        let invocation = ToolInvocation::start(
            &self.goal.run,
            call.name.as_str(),
            call.arguments.to_string(),
            store_now,
        );
        // a call run again keeps the key of the call it repeats
        let replayed = self.tools.replay_keys.remove(&call.id);
        let event = ToolCallEvent {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
            invocation_id: invocation.id.clone(),
            idempotency_key: replayed.clone(),
        };
        let invocation_id = invocation.id.clone();
        let key = replayed.unwrap_or_else(|| invocation_id.clone());
        self.out.pipe.record_invocation(invocation).await?;
        self.out.pipe.emit(&event).await?;
        let record = CallRecord {
            index,
            call_id: call.id.clone(),
            tool: call.name.clone(),
            invocation: invocation_id,
            key,
            started: Instant::now(),
            step: self.tools.calls,
        };

        let refusal = match self.tools.guard.observe(&call.name, &call.arguments) {
            Repeat::Run => None,
            Repeat::Hint(hint) => Some(Settled::refusal(CallStatus::Hint, "repeated_call", hint)),
            Repeat::Stop(error) => {
                let settled = Settled::refusal(
                    CallStatus::Failed,
                    "repeated_call",
                    format!("Not run: {error}. The run ends."),
                );
                let result = self.settle(record, settled).await?;
                return Ok(Admit::End(
                    result,
                    Ending::Failed {
                        reason: EndReason::RepeatedCall,
                        error,
                    },
                ));
            }
        };
        let refusal = match (refusal, self.tools.registry.get(&call.name)) {
            (Some(settled), _) => Err(settled),
            (None, None) => Err(Settled::from_result(Err(self
                .tools
                .registry
                .missing(&call.name)))),
            // the policy is checked where the call runs (tools::execute)
            (None, Some(tool)) => Ok(Arc::clone(tool)),
        };
        match refusal {
            Ok(tool) => {
                if tool.contract().access == Access::Mutating {
                    // a call that changes things is on record before it runs
                    self.out.pipe.barrier().await?;
                }
                Ok(Admit::Run(Pending {
                    record,
                    tool,
                    arguments: call.arguments.clone(),
                }))
            }
            Err(settled) => Ok(Admit::Settled(self.settle(record, settled).await?)),
        }
    }

    /// Runs the admitted calls side by side and settles them in call order.
    async fn flush(
        &mut self,
        batch: &mut Vec<Pending>,
        results: &mut [Option<ToolResult>],
    ) -> Result<(), Stop> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut pending = std::mem::take(batch);
        let contexts: Vec<ToolContext> = pending
            .iter()
            .map(|p| {
                self.tools
                    .ctx
                    .for_call(&p.record.call_id, &p.record.tool, Some(&p.record.key))
            })
            .collect();
        let calls = pending.iter_mut().zip(&contexts).map(|(p, ctx)| {
            crate::tools::execute(p.tool.as_ref(), ctx, std::mem::take(&mut p.arguments))
        });
        let outcome = guarded(&self.tools.ctx.cancel, self.spend.deadline, join_all(calls)).await;
        match outcome {
            Ok(outputs) => {
                for (p, output) in pending.into_iter().zip(outputs) {
                    let index = p.record.index;
                    results[index] =
                        Some(self.settle(p.record, Settled::from_result(output)).await?);
                }
                Ok(())
            }
            Err(interrupt) => {
                let why = match interrupt {
                    Interrupt::Cancelled => "the run was cancelled",
                    Interrupt::WallClock => "the wall clock budget ran out",
                };
                for p in pending {
                    let index = p.record.index;
                    let settled = Settled::refusal(
                        CallStatus::Failed,
                        "interrupted",
                        format!("Stopped before it finished: {why}."),
                    );
                    results[index] = Some(self.settle(p.record, settled).await?);
                }
                Err(Stop::Interrupted(interrupt))
            }
        }
    }

    /// Admitted calls that will not run because the run ends: their
    /// invocations are closed as not run. Failures are only logged.
    async fn abandon(&mut self, batch: Vec<Pending>, results: &mut [Option<ToolResult>]) {
        for p in batch {
            let index = p.record.index;
            let settled = Settled::refusal(
                CallStatus::Skipped,
                "not_run",
                "Not run: the run ended before this call.".to_owned(),
            );
            match self.settle(p.record, settled).await {
                Ok(result) => results[index] = Some(result),
                Err(err) => tracing::warn!(?err, "closing an abandoned tool call"),
            }
        }
    }

    /// Logs a call's result, publishes it and applies its effects.
    async fn settle(&mut self, record: CallRecord, settled: Settled) -> Result<ToolResult, Stop> {
        let outcome = ToolOutcome {
            status: settled.tool_status(),
            output: settled.output.to_string(),
        };
        let (content, truncated) = cap_text(&settled.content, RESULT_EVENT_CAP);
        let event = ToolResultEvent {
            call_id: record.call_id.clone(),
            tool: record.tool.clone(),
            invocation_id: Some(record.invocation.clone()),
            status: settled.status,
            is_error: settled.is_error,
            content,
            truncated,
            duration_ms: u64::try_from(record.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        };
        let now = self.out.journal.store().now();
        self.out
            .pipe
            .finish_invocation(record.invocation.clone(), outcome, now)
            .await?;
        self.out.pipe.emit(&event).await?;
        let contract = self
            .tools
            .registry
            .get(&record.tool)
            .map(|tool| tool.contract());
        self.goal.evidence.record(&review::Call {
            step: record.step,
            tool: &record.tool,
            access: contract.map(|c| c.access),
            role: contract.map(|c| c.role),
            status: settled.status,
            effects: &settled.effects,
        });
        self.apply(&settled).await?;
        Ok(ToolResult {
            call_id: record.call_id,
            content: settled.content,
            is_error: settled.is_error,
        })
    }

    async fn apply(&mut self, settled: &Settled) -> Result<(), RuntimeError> {
        for effect in &settled.effects {
            match effect {
                Effect::FilesChanged { paths } => {
                    if !settled.is_error && !paths.is_empty() {
                        self.tools.guard.workspace_changed();
                    }
                }
                Effect::CommandFinished { .. } => {}
                Effect::PlanUpdated { explanation, steps } => {
                    self.save_plan(explanation.clone(), steps).await?;
                }
                Effect::Progress { message } => {
                    let progress = Progress {
                        message: message.clone(),
                    };
                    self.out.pipe.emit(&progress).await?;
                }
                Effect::AskUser { question } => {
                    self.goal.question.get_or_insert_with(|| question.clone());
                }
                Effect::Complete(completion) => {
                    self.goal
                        .completion
                        .get_or_insert_with(|| completion.clone());
                }
            }
        }
        Ok(())
    }

    async fn save_plan(
        &mut self,
        explanation: Option<String>,
        steps: &[PlanStep],
    ) -> Result<(), RuntimeError> {
        let now = self.out.journal.store().now();
        let plan = Plan {
            tenant: self.goal.run.tenant.clone(),
            session: self.goal.run.session.clone(),
            run: self.goal.run.id.clone(),
            version: 0,
            explanation,
            tasks: steps
                .iter()
                .map(|step| Task {
                    key: step.id.clone(),
                    title: step.title.clone(),
                    status: step.status.into(),
                    run: self.goal.run.id.clone(),
                    updated_at: now,
                })
                .collect(),
            created_at: now,
        };
        self.out.pipe.save_plan(plan).await
    }
}
