//! Resuming an interrupted run: a NEW run in the same session, linked to the
//! old one by `resumed_from`, in a fresh sandbox, continuing the session's
//! history. Old processes are never revived.
//!
//! The workspace starts from the last checkpoint ([`plan_restore`], [`restore`]);
//! what it would overwrite is named and kept first (checkpoints/safety.rs).
//! History and checkpoint agree there because a tool batch's results message
//! and the checkpoint after it are written in one transaction (driver.rs
//! `append_with_checkpoint`): a crash leaves both or neither. So the last
//! checkpoint describes the workspace after every answered batch, and only
//! the trailing unanswered calls may have changed it since; the restore
//! undoes what they did. When a checkpoint failed after the last one
//! (`checkpoint.failed`), the history is ahead of it and nothing is restored.
//!
//! The calls the dead process left without results (the last model message's
//! calls that no results message answers) are answered before the first
//! model turn, by this rule ([`plan`]):
//! - a call whose result was recorded (its `tool.result` event is stored)
//!   gets that result: it finished, only the results message was lost;
//!   but after a restore only a read-only call keeps it (what a mutating
//!   one changed is gone), and a mutating call is answered as below;
//! - a call of a tool whose contract says `Replay::Safe` is run again;
//! - a mutating `Replay::Never` call that never got its `tool.call` event did
//!   not start (a mutating call runs only once everything queued before it,
//!   its event included, is written), and is answered "not run";
//! - after a restore, a mutating `Replay::Never` call that finished is
//!   answered "undone", with its old result: the workspace it changed was
//!   restored to before it;
//! - any other `Replay::Never` call (and a call of an unknown tool) is
//!   answered "outcome unknown", with its idempotency key (the tool
//!   invocation id the log recorded it under) so the model can check what
//!   happened before it repeats it. Every command a call runs has its key
//!   in its environment (`PADDOCK_IDEMPOTENCY_KEY`, [`ToolContext`](crate::tools::ToolContext)'s
//!   `command_env`), and a call run again keeps the key of the call it
//!   repeats ([`Answer::Rerun`]), so the key named is one the command saw.
//!
//! The resumed run's budgets are what the interrupted run's family left
//! (resume_budget.rs). The steering messages the interrupted run accepted
//! and never delivered become the resumed run's as the store creates it
//! (`Store::create_run` with `resumed_from`), and its loop takes them
//! before its first model request.
//!
//! The resumed run keeps the interrupted run's sandbox: its backend, image
//! and network policy are read back from its `run.started`
//! ([`Runtime::run_started`]); a front end resolves the backend by name
//! among those it enabled and re-checks the network against its bounds. The
//! interrupted run's secrets were never stored (only their names are, in
//! `run.started`): a resume of a run that had secrets is refused unless the
//! caller passes secrets of the same names again.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use paddock_core::ids::{CheckpointId, RunId, TenantId, ToolInvocationId};
use paddock_core::model::{ContentPart, Message, ModelProvider, Role, ToolCall, ToolResult};
use paddock_core::store::{Budgets, Checkpoint, Lease, MAX_PAGE, RunEvent, RunState, Store};
use paddock_snapshot::checkpoint::Manifest;

use super::{RunBackend, RunHandle, RunOptions, StartRun, SubagentModels, resume_budget};
use crate::checkpoints::{Baseline, Checkpointer, Guarded, guard, load_manifest};
use crate::error::RuntimeError;
use crate::events::{
    CallStatus, CheckpointCreated, CheckpointFailed, Event, RESULT_EVENT_CAP, RunStarted,
    ToolResultEvent, cap_text,
};
use crate::runtime::Runtime;
use crate::tools::{Access, Replay, ToolContract};

/// Most runs followed back along `resumed_from` to find the calls' records.
const MAX_CHAIN: usize = 20;

/// A request to resume an interrupted run. The goal, its criteria, the mode
/// and the sandbox (backend, image, network) are the old run's; the model
/// is the caller's (the runtime keeps no provider between runs).
#[derive(Debug, Clone)]
pub struct ResumeRun {
    pub provider: Arc<dyn ModelProvider>,
    /// The driver of the new run, of the interrupted run's kind (else
    /// [`RuntimeError::NotResumable`]); None: the built-in loop.
    pub driver: Option<Arc<dyn crate::drivers::AgentDriver>>,
    /// None: what the interrupted run's family left of its budgets
    /// (resume_budget.rs); Some: these, the caller raising the limit.
    pub budgets: Option<Budgets>,
    pub instructions: Option<String>,
    pub subagent_models: Option<Arc<dyn SubagentModels>>,
    pub snapshot_limits: Option<paddock_snapshot::Limits>,
    /// The interrupted run's backend and image, which a front end resolves
    /// by the names in its `run.started` ([`Runtime::run_started`]) among
    /// those it enabled. None: the runtime's own backend, which must be the
    /// one the interrupted run named (else [`RuntimeError::NotResumable`]).
    pub backend: Option<RunBackend>,
    /// None: the interrupted run's policy, from its `run.started`, as it
    /// is (a front end that bounds tenants re-checks it and passes it here).
    pub network: Option<paddock_proto::NetworkPolicy>,
    /// The interrupted run's secrets, given again (they were never stored):
    /// every name its `run.started` lists, or the resume is refused.
    pub secrets: Vec<paddock_proto::SecretSpec>,
    /// Restore the last checkpoint even over changes made since it (they
    /// are checkpointed first); false: such a resume is refused, naming
    /// them ([`RuntimeError::WorkspaceChanged`]).
    pub force: bool,
}

impl ResumeRun {
    pub fn new(provider: Arc<dyn ModelProvider>) -> Self {
        Self {
            provider,
            driver: None,
            budgets: None,
            instructions: None,
            subagent_models: None,
            snapshot_limits: None,
            backend: None,
            network: None,
            secrets: Vec::new(),
            force: false,
        }
    }
}

impl Runtime {
    /// Starts a new run that continues the interrupted run `id` (see the
    /// module doc). A run whose dead driver was not recorded yet is
    /// recovered first; a run that is not `interrupted`, a subagent's run,
    /// or a run the session has moved on from is [`RuntimeError::NotResumable`].
    pub async fn resume_run(
        &self,
        tenant: &TenantId,
        id: &RunId,
        request: ResumeRun,
    ) -> Result<RunHandle, RuntimeError> {
        let store = &self.shared.store;
        let mut old = self.get_run(tenant, id).await?;
        if !old.state.is_terminal() && old.state != RunState::AwaitingUser {
            self.recover().await?;
            old = self.get_run(tenant, id).await?;
        }
        let refuse = |reason: String| RuntimeError::NotResumable {
            run: id.clone(),
            reason,
        };
        if old.parent_run.is_some() {
            return Err(refuse(
                "it is a subagent's run; resume its parent's run".to_owned(),
            ));
        }
        if old.state != RunState::Interrupted {
            let reason = if old.state.is_terminal() {
                format!("it ended {}; only an interrupted run is resumed", old.state)
            } else {
                format!("it is still {} (its driver holds the session)", old.state)
            };
            return Err(refuse(reason));
        }
        let driver = request
            .driver
            .clone()
            .unwrap_or_else(crate::drivers::BuiltinDriver::shared);
        if driver.kind() != old.driver {
            return Err(refuse(format!(
                "it was driven by {}; resume it with the same driver, not {}",
                old.driver,
                driver.kind()
            )));
        }
        let runs = store
            .list_runs(tenant, &old.session)
            .await
            .map_err(RuntimeError::store("list_runs"))?;
        if let Some(later) = runs
            .iter()
            .find(|r| r.id > old.id && r.parent_run.is_none())
        {
            let reason = if later.resumed_from.as_ref() == Some(&old.id) {
                format!("run {} already resumed it", later.id)
            } else {
                format!("run {} started in its session after it", later.id)
            };
            return Err(refuse(reason));
        }
        let goals = store
            .list_goals(tenant, &old.session)
            .await
            .map_err(RuntimeError::store("list_goals"))?;
        let success_criteria = goals
            .into_iter()
            .rev()
            .find(|g| g.run == old.id)
            .map(|g| g.success_criteria)
            .unwrap_or_default();
        // the sandbox it ran in, as its run.started says
        let (backend, image, network, secrets) = match self.run_started(tenant, &old.id).await? {
            Some(s) => (s.backend, s.image, s.network, s.secrets),
            None => {
                tracing::warn!(run_id = %old.id, "the interrupted run has no run.started: its sandbox is the default");
                Default::default()
            }
        };
        // the driver gives its own (its provider's key) again
        let from_driver = driver.egress().secrets;
        let missing: Vec<&str> = secrets
            .iter()
            .filter(|notice| {
                !request
                    .secrets
                    .iter()
                    .chain(&from_driver)
                    .any(|s| s.name == notice.name)
            })
            .map(|notice| notice.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(refuse(format!(
                "it ran with the secrets {}, which are never stored: give them again",
                missing.join(", ")
            )));
        }
        let chosen = request
            .backend
            .as_ref()
            .map_or(self.shared.backend.name(), |b| b.backend.name());
        let chosen_image = request.backend.as_ref().and_then(|b| b.image.as_deref());
        if let Some(backend) = backend.as_deref()
            && (backend != chosen || image.as_deref() != chosen_image)
        {
            let named = |i: Option<&str>| i.map(|i| format!(" (image {i})")).unwrap_or_default();
            return Err(refuse(format!(
                "it ran on the {backend} backend{}; this resume would start it on \
                 {chosen}{}: resume it where that backend is enabled, naming it",
                named(image.as_deref()),
                named(chosen_image),
            )));
        }
        // what the interrupted family left, unless the caller raises it (resume_budget.rs)
        let spent = crate::usage::total(store.as_ref(), &old)
            .await
            .map_err(RuntimeError::store("list_child_runs"))?;
        let (budgets, resume_budget) = resume_budget::resumed_budgets(&old, spent, request.budgets);
        tracing::info!(
            resumed_from = %old.id,
            source = ?resume_budget.source,
            max_turns = budgets.max_turns,
            max_wall_clock_ms = budgets.max_wall_clock_ms,
            "the resumed run's budgets"
        );
        let start = StartRun {
            goal: old.goal.clone(),
            success_criteria,
            mode: old.mode,
            budgets,
            provider: request.provider,
            driver,
            instructions: request.instructions,
            subagent_models: request.subagent_models,
            snapshot_limits: request.snapshot_limits,
            // None (not recorded): the runtime's default, as for a new run
            network: request.network.or(network),
            secrets: request.secrets,
            backend: request.backend,
            // the restore already needed the last checkpoint
            require_checkpoint: false,
        };
        let options = RunOptions {
            resumed_from: Some(old.id.clone()),
            resume_budget: Some(resume_budget),
            force_restore: request.force,
            ..RunOptions::default()
        };
        self.launch(tenant, &old.session, start, options).await
    }
}

impl Runtime {
    /// The `run.started` of `run`: how it started (its sandbox's backend,
    /// image and network, the names of its secrets); None if the run has
    /// none (a row written without the runtime). A front end reads the
    /// interrupted run's before it resumes it.
    pub async fn run_started(
        &self,
        tenant: &TenantId,
        run: &RunId,
    ) -> Result<Option<RunStarted>, RuntimeError> {
        self.get_run(tenant, run).await?;
        // among its first events (launch writes none of the run's before it)
        let first = self
            .shared
            .store
            .list_run_events(tenant, run, 0, 8)
            .await
            .map_err(RuntimeError::store("list_run_events"))?;
        Ok(first.iter().find_map(|e| match Event::of(e) {
            Event::RunStarted(started) => Some(started),
            _ => None,
        }))
    }
}

/// What a resumed run restores before it starts: the interrupted run's
/// last checkpoint, and the workspace as it is when that differs (recorded
/// before the restore overwrites it, see checkpoints/safety.rs).
#[derive(Debug)]
pub(crate) struct RestorePlan {
    checkpoint: Checkpoint,
    target: Manifest,
    safety: Option<Guarded>,
}

/// Plans bringing the workspace to the state the resumed run starts from:
/// the interrupted run's last checkpoint (see the module doc), unless a
/// checkpoint failed after it. Called once the resumed run holds the
/// workspace's writer lease, before its run row is written; a read-only
/// run changed nothing and is not restored. The workspace is captured and
/// compared with that checkpoint: a difference (someone's edit, or what
/// the interrupted run's last calls did) is refused unless `force`
/// ([`RuntimeError::WorkspaceChanged`]).
pub(crate) async fn plan_restore(
    runtime: &Runtime,
    tenant: &TenantId,
    interrupted: &RunId,
    checkpointer: &mut Checkpointer,
    force: bool,
) -> Result<Option<RestorePlan>, RuntimeError> {
    let Some(checkpoint) = runtime.last_checkpoint_of(tenant, interrupted).await? else {
        tracing::info!(
            resumed_from = %interrupted,
            "no checkpoint to restore: resuming on the workspace as the interrupted run left it"
        );
        return Ok(None);
    };
    if let Some(failed) = failed_after(runtime.store().as_ref(), &checkpoint).await? {
        tracing::warn!(
            resumed_from = %interrupted,
            checkpoint_id = %checkpoint.id,
            error = %failed.error,
            "a checkpoint failed after the last one: resuming on the workspace as it is"
        );
        return Ok(None);
    }
    let target = load_manifest(
        &runtime.shared.blobs.tenant(tenant),
        &checkpoint.manifest_hash,
    )
    .await?;
    let baseline = Baseline {
        checkpoint: &checkpoint.id,
        manifest: Some(&target),
    };
    let guarded = guard(checkpointer, &checkpoint.session, baseline, force).await?;
    let safety = (!guarded.changed.is_empty()).then_some(guarded);
    Ok(Some(RestorePlan {
        checkpoint,
        target,
        safety,
    }))
}

/// Carries out `plan` in `dir` once the resumed run is recorded: the
/// workspace as it is goes on record first (when it differs), then the
/// restore. Answers the checkpoint restored, and the one of the workspace
/// before it with its event (to emit after `run.started`).
pub(crate) async fn restore(
    runtime: &Runtime,
    lease: &Lease,
    checkpointer: &mut Checkpointer,
    dir: &Path,
    plan: RestorePlan,
) -> Result<(Checkpoint, Option<(CheckpointId, CheckpointCreated)>), RuntimeError> {
    let RestorePlan {
        checkpoint,
        target,
        safety,
    } = plan;
    let Some(guarded) = safety else {
        // the workspace is what the checkpoint recorded: nothing to write
        return Ok((checkpoint, None));
    };
    let hint = guarded.manifest().clone();
    let changed = guarded.changed.len();
    let (kept, created) = checkpointer.record(lease, guarded.capture).await?;
    let stats = runtime
        .restore_manifest(&checkpoint.tenant, dir, target, Some(hint))
        .await?;
    tracing::info!(
        resumed_from = %checkpoint.run,
        checkpoint_id = %checkpoint.id,
        safety_checkpoint_id = %kept.id,
        changed,
        files_written = stats.files_written,
        removed = stats.removed,
        "workspace restored to the interrupted run's last checkpoint"
    );
    Ok((checkpoint, Some((kept.id, created))))
}

/// The first `checkpoint.failed` of the session after `checkpoint` was
/// recorded, if any.
async fn failed_after(
    store: &dyn Store,
    checkpoint: &Checkpoint,
) -> Result<Option<CheckpointFailed>, RuntimeError> {
    let mut after = checkpoint.event_seq;
    loop {
        let page = store
            .list_events(&checkpoint.tenant, &checkpoint.session, after, MAX_PAGE)
            .await
            .map_err(RuntimeError::store("list_events"))?;
        for event in &page {
            if let Event::CheckpointFailed(failed) = Event::of(event) {
                return Ok(Some(failed));
            }
        }
        match page.last() {
            Some(last) if page.len() == MAX_PAGE as usize => after = last.seq,
            _ => return Ok(None),
        }
    }
}

/// What a dead run left of its last calls: the calls no results message
/// answers, and what the event log recorded of each (by call id).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct ResumeTail {
    pub(crate) calls: Vec<ToolCall>,
    pub(crate) recorded: HashMap<String, Recorded>,
    /// Whether the workspace was restored to the last checkpoint, undoing
    /// what these calls changed.
    pub(crate) restored: bool,
}

/// What the log holds of one call.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Recorded {
    /// From its `tool.call` event: the call was admitted.
    pub(crate) invocation: Option<ToolInvocationId>,
    /// From its `tool.call` event: the idempotency key its command saw (its
    /// invocation's, or the key of the call it repeated).
    pub(crate) key: Option<ToolInvocationId>,
    /// From its `tool.result` event: the call finished.
    pub(crate) result: Option<ToolResultEvent>,
}

/// The trailing unanswered calls of `history` and their records among the
/// events of `from` and the runs it resumed (only the events after the
/// model message that made the calls count: a resumed run's scripted calls
/// may reuse an older run's call ids).
pub(crate) async fn tail(
    store: &dyn Store,
    tenant: &TenantId,
    from: &RunId,
    history: &[Message],
    restored: bool,
) -> Result<ResumeTail, RuntimeError> {
    let calls = unanswered(history);
    if calls.is_empty() {
        return Ok(ResumeTail {
            restored,
            ..ResumeTail::default()
        });
    }
    let mut events = Vec::new();
    let mut next = Some(from.clone());
    for _ in 0..MAX_CHAIN {
        let Some(run) = next.take() else { break };
        let mut run_events = run_events(store, tenant, &run).await?;
        let made_calls = run_events
            .iter()
            .any(|e| matches!(Event::of(e), Event::ModelMessage(_)));
        events.append(&mut run_events);
        if made_calls {
            break;
        }
        next = store
            .get_run(tenant, &run)
            .await
            .map_err(RuntimeError::store("get_run"))?
            .resumed_from;
    }
    events.sort_by_key(|e| e.seq);
    let after = events
        .iter()
        .rposition(|e| matches!(Event::of(e), Event::ModelMessage(_)))
        .map_or(0, |i| i + 1);
    let mut recorded: HashMap<String, Recorded> = HashMap::new();
    for event in &events[after..] {
        match Event::of(event) {
            Event::ToolCall(call) => {
                let record = recorded.entry(call.call_id.clone()).or_default();
                record.key = Some(call.key().clone());
                record.invocation = Some(call.invocation_id);
            }
            Event::ToolResult(result) => {
                let id = result.call_id.clone();
                recorded.entry(id).or_default().result = Some(result);
            }
            _ => {}
        }
    }
    Ok(ResumeTail {
        calls,
        recorded,
        restored,
    })
}

async fn run_events(
    store: &dyn Store,
    tenant: &TenantId,
    run: &RunId,
) -> Result<Vec<RunEvent>, RuntimeError> {
    let mut events = Vec::new();
    loop {
        let after = events.last().map_or(0, |e: &RunEvent| e.seq);
        let page = store
            .list_run_events(tenant, run, after, MAX_PAGE)
            .await
            .map_err(RuntimeError::store("list_run_events"))?;
        let full = page.len() == MAX_PAGE as usize;
        events.extend(page);
        if !full {
            return Ok(events);
        }
    }
}

/// The calls of the last assistant message that no later message answers.
fn unanswered(history: &[Message]) -> Vec<ToolCall> {
    let Some((index, assistant)) = history
        .iter()
        .enumerate()
        .rev()
        .find(|(_, m)| m.role == Role::Assistant)
    else {
        return Vec::new();
    };
    let answered: Vec<&str> = history[index + 1..]
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|part| match part {
            ContentPart::ToolResult(result) => Some(result.call_id.as_str()),
            _ => None,
        })
        .collect();
    assistant
        .tool_calls()
        .filter(|call| !answered.contains(&call.id.as_str()))
        .cloned()
        .collect()
}

/// How one unanswered call is answered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// Run it again in the new sandbox, under the idempotency key the call
    /// had (None: it was never admitted, its new invocation's is used).
    Rerun(ToolCall, Option<ToolInvocationId>),
    /// This result, with the event that reports it (None: its `tool.result`
    /// is already in the log).
    Given(ToolResult, Option<ToolResultEvent>),
}

/// The answer to each unanswered call, in call order (the rule is the
/// module doc's). `contract` looks a tool up by name.
pub(crate) fn plan<'a>(
    tail: ResumeTail,
    contract: impl Fn(&str) -> Option<&'a ToolContract>,
) -> Vec<Answer> {
    let restored = tail.restored;
    tail.calls
        .into_iter()
        .map(|call| {
            let record = tail.recorded.get(&call.id).cloned().unwrap_or_default();
            let contract = contract(&call.name);
            let mutating = contract.is_some_and(|c| c.access == Access::Mutating);
            // a restore undid what a mutating call changed: its result no longer holds
            let undone = restored && mutating;
            if let Some(result) = record.result.as_ref().filter(|_| !undone) {
                return Answer::Given(
                    ToolResult {
                        call_id: call.id,
                        content: recorded_content(result),
                        is_error: result.is_error,
                    },
                    None,
                );
            }
            if contract.is_some_and(|c| c.replay == Replay::Safe) {
                return Answer::Rerun(call, record.key);
            }
            let (status, content) = match (record.key.as_ref(), record.result.as_ref()) {
                (key, Some(result)) => (CallStatus::Failed, undone_content(&call, key, result)),
                (None, None) if mutating => (
                    CallStatus::Skipped,
                    format!(
                        "Not run: the process driving the run stopped before this {} call \
                         started. Call it again if it is still needed.",
                        call.name
                    ),
                ),
                (key, None) => (CallStatus::Failed, unknown_outcome(&call, key, undone)),
            };
            let (event_content, truncated) = cap_text(&content, RESULT_EVENT_CAP);
            let event = ToolResultEvent {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                invocation_id: record.invocation,
                status,
                is_error: true,
                content: event_content,
                truncated,
                duration_ms: 0,
            };
            Answer::Given(
                ToolResult {
                    call_id: call.id,
                    content,
                    is_error: true,
                },
                Some(event),
            )
        })
        .collect()
}

fn recorded_content(result: &ToolResultEvent) -> String {
    if result.truncated {
        format!(
            "{}\n[The result was cut at {RESULT_EVENT_CAP} characters when the run that made \
             this call stopped; the tool invocation log has the rest.]",
            result.content
        )
    } else {
        result.content.clone()
    }
}

fn key_text(call: &ToolCall, key: Option<&ToolInvocationId>) -> String {
    key.map_or_else(
        || format!("call id {}", call.id),
        |id| format!("idempotency key {id}"),
    )
}

fn unknown_outcome(call: &ToolCall, key: Option<&ToolInvocationId>, restored: bool) -> String {
    let restored = if restored {
        " The workspace was restored to the last checkpoint, taken before this call, so \
         whatever it changed in the workspace is gone; what it did outside (the network) \
         may remain."
    } else {
        ""
    };
    format!(
        "Outcome unknown: the process driving the run stopped while this {tool} call \
         ({key}) was in flight, so it may or may not have taken effect. It was not run \
         again because {tool} is not safe to repeat blindly.{restored} Check its effect \
         (the files or state it was to change) before calling it again.",
        tool = call.name,
        key = key_text(call, key),
    )
}

fn undone_content(
    call: &ToolCall,
    key: Option<&ToolInvocationId>,
    result: &ToolResultEvent,
) -> String {
    format!(
        "Undone: this {tool} call ({key}) finished before the process driving the run \
         stopped, but the workspace was restored to the last checkpoint, taken before it, \
         so what it changed in the workspace is gone (what it did outside, such as the \
         network, may remain). It was not run again because {tool} is not safe to repeat \
         blindly. Its result then was:\n{content}\nCall it again if it is still needed.",
        tool = call.name,
        key = key_text(call, key),
        content = recorded_content(result),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::tools::Role;

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: json!({}),
        }
    }

    fn contract(name: &'static str, access: Access, replay: Replay) -> ToolContract {
        ToolContract {
            name,
            description: "",
            parameters: json!({}),
            role: Role::Workspace,
            access,
            replay,
            timeout: Duration::from_secs(1),
            path_argument: None,
        }
    }

    fn contracts() -> Vec<ToolContract> {
        vec![
            contract("read_file", Access::ReadOnly, Replay::Safe),
            contract("write_file", Access::Mutating, Replay::Safe),
            contract("run_command", Access::Mutating, Replay::Never),
            contract("spawn_subagent", Access::ReadOnly, Replay::Never),
        ]
    }

    fn plan_of(calls: Vec<ToolCall>, recorded: &[(&str, Recorded)]) -> Vec<Answer> {
        plan_after(false, calls, recorded)
    }

    fn plan_after(
        restored: bool,
        calls: Vec<ToolCall>,
        recorded: &[(&str, Recorded)],
    ) -> Vec<Answer> {
        let contracts = contracts();
        let tail = ResumeTail {
            calls,
            recorded: recorded
                .iter()
                .map(|(id, r)| ((*id).to_owned(), r.clone()))
                .collect(),
            restored,
        };
        plan(tail, |name| contracts.iter().find(|c| c.name == name))
    }

    fn key() -> ToolInvocationId {
        ToolInvocationId::generate()
    }

    fn given(answer: &Answer) -> (&ToolResult, Option<&ToolResultEvent>) {
        match answer {
            Answer::Given(result, event) => (result, event.as_ref()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn safe_calls_are_run_again() {
        let calls = vec![call("a", "read_file"), call("b", "write_file")];
        let id = key();
        let admitted = Recorded {
            invocation: Some(key()),
            key: Some(id.clone()),
            result: None,
        };
        let answers = plan_of(calls.clone(), &[("b", admitted)]);
        // an admitted call is run again under the key it had
        assert_eq!(
            answers,
            [
                Answer::Rerun(calls[0].clone(), None),
                Answer::Rerun(calls[1].clone(), Some(id))
            ]
        );
    }

    #[test]
    fn a_never_call_in_flight_is_unknown_with_its_idempotency_key() {
        let id = key();
        let admitted = Recorded {
            invocation: Some(id.clone()),
            key: Some(id.clone()),
            result: None,
        };
        let answers = plan_of(vec![call("a", "run_command")], &[("a", admitted)]);
        let (result, event) = given(&answers[0]);
        assert!(result.is_error);
        assert!(result.content.starts_with("Outcome unknown"), "{result:?}");
        assert!(result.content.contains(&format!("idempotency key {id}")));
        let event = event.unwrap();
        assert_eq!(event.status, CallStatus::Failed);
        assert_eq!(event.invocation_id.as_ref(), Some(&id));
    }

    #[test]
    fn a_mutating_never_call_without_its_call_event_did_not_start() {
        let answers = plan_of(vec![call("a", "run_command")], &[]);
        let (result, event) = given(&answers[0]);
        assert!(result.content.starts_with("Not run"), "{result:?}");
        assert_eq!(event.unwrap().status, CallStatus::Skipped);
    }

    #[test]
    fn a_read_only_never_call_without_a_record_is_still_unknown() {
        // its record is not waited for before it runs: it may have run
        let answers = plan_of(
            vec![call("a", "spawn_subagent"), call("b", "no_such_tool")],
            &[],
        );
        for answer in &answers {
            let (result, _) = given(answer);
            assert!(result.content.starts_with("Outcome unknown"), "{result:?}");
            assert!(result.content.contains("call id"), "{result:?}");
        }
    }

    #[test]
    fn a_finished_call_gets_its_recorded_result_whatever_its_policy() {
        let result = |content: &str, truncated| ToolResultEvent {
            call_id: String::new(),
            tool: String::new(),
            invocation_id: None,
            status: CallStatus::Succeeded,
            is_error: false,
            content: content.into(),
            truncated,
            duration_ms: 3,
        };
        let done = |content, truncated| Recorded {
            invocation: Some(key()),
            key: None,
            result: Some(result(content, truncated)),
        };
        let answers = plan_of(
            vec![call("a", "run_command"), call("b", "read_file")],
            &[("a", done("exit 0", false)), ("b", done("long", true))],
        );
        let (first, event) = given(&answers[0]);
        assert_eq!(
            (first.content.as_str(), first.is_error, event),
            ("exit 0", false, None)
        );
        let (second, _) = given(&answers[1]);
        assert!(
            second.content.starts_with("long\n[The result was cut"),
            "{second:?}"
        );
    }

    #[test]
    fn after_a_restore_a_mutating_call_s_recorded_result_no_longer_holds() {
        let finished = |content: &str| Recorded {
            invocation: Some(key()),
            key: None,
            result: Some(ToolResultEvent {
                call_id: String::new(),
                tool: String::new(),
                invocation_id: None,
                status: CallStatus::Succeeded,
                is_error: false,
                content: content.into(),
                truncated: false,
                duration_ms: 3,
            }),
        };
        let calls = vec![
            call("a", "write_file"),
            call("b", "run_command"),
            call("c", "read_file"),
            call("d", "run_command"),
        ];
        let in_flight = Recorded {
            invocation: Some(key()),
            key: Some(key()),
            result: None,
        };
        let answers = plan_after(
            true,
            calls.clone(),
            &[
                ("a", finished("wrote a")),
                ("b", finished("exit 0")),
                ("c", finished("alpha")),
                ("d", in_flight),
            ],
        );
        // safe: done again on the restored workspace
        assert_eq!(answers[0], Answer::Rerun(calls[0].clone(), None));
        // never: undone, with what it answered then
        let (undone, event) = given(&answers[1]);
        assert!(undone.is_error);
        assert!(undone.content.starts_with("Undone"), "{undone:?}");
        assert!(undone.content.contains("exit 0"), "{undone:?}");
        assert_eq!(event.unwrap().status, CallStatus::Failed);
        // read-only: its result holds
        let (read, event) = given(&answers[2]);
        assert_eq!((read.content.as_str(), event), ("alpha", None));
        // in flight: unknown, and the restore is said
        let (unknown, _) = given(&answers[3]);
        assert!(
            unknown.content.starts_with("Outcome unknown"),
            "{unknown:?}"
        );
        assert!(unknown.content.contains("restored"), "{unknown:?}");
    }

    #[test]
    fn only_the_last_model_message_s_unanswered_calls_count() {
        let assistant = |ids: &[&str]| {
            Message::assistant("", ids.iter().map(|id| call(id, "read_file")).collect())
        };
        let results = |ids: &[&str]| {
            Message::tool_results(
                ids.iter()
                    .map(|id| ToolResult {
                        call_id: (*id).into(),
                        content: "ok".into(),
                        is_error: false,
                    })
                    .collect(),
            )
        };
        let history = vec![
            Message::user("goal"),
            assistant(&["x"]),
            assistant(&["a", "b"]),
            results(&["a"]),
        ];
        let ids: Vec<_> = unanswered(&history).into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["b"]);
        assert!(unanswered(&[Message::user("goal")]).is_empty());
        assert!(unanswered(&[assistant(&["a"]), results(&["a"])]).is_empty());
    }
}
