//! The events a run appends to its session's log, and their JSON payloads.
//!
//! Every payload type here is what `RunEvent::payload` holds for its kind,
//! and declares that kind once ([`EventPayload::KIND`], in the table at the
//! end of this file); the journal writes a payload under its type's kind, and
//! readers decode a stored event into the typed [`Event`]. The run id is on
//! the event itself (`RunEvent::run`), not repeated in the payloads.
//!
//! The stored form is what `serde_json` writes for the payload type (the
//! `kind` column and the payload JSON); `tests/runtime/event_format.rs` pins it
//! with events as they were stored before the types were read back.

use paddock_core::ids::{CheckpointId, RunId, SessionId, SnapshotId, ToolInvocationId};
use paddock_core::model::{ToolCall, Usage};
use paddock_core::sandbox::SandboxId;
use paddock_core::store::{
    Budgets, CheckpointReason, EndReason, Review, RunEvent, RunMode, RunState, RunUsage,
    SubagentProfile, TaskStatus, Verdict,
};
use paddock_proto::{EgressDecision, NetworkPolicy};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The payload of one event kind.
pub trait EventPayload: Serialize + DeserializeOwned {
    /// `RunEvent::kind` of the events that carry this payload.
    const KIND: &'static str;
}

/// Most characters of a tool result's content carried by a `tool.result` event
/// (the invocation log keeps the whole result).
pub const RESULT_EVENT_CAP: usize = 2_000;

/// The driver of a run, as `run.started` names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriverNotice {
    pub kind: paddock_core::store::DriverKind,
    pub capabilities: crate::drivers::DriverCapabilities,
}

/// `run.started`: the run row exists and its goal is recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStarted {
    pub goal: String,
    pub success_criteria: Vec<String>,
    pub mode: RunMode,
    pub budgets: Budgets,
    /// `provider:model` of the model driving the run.
    pub model: String,
    /// What drives the run's agent and what it can do (absent in events
    /// written before runs named a driver: the built-in loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<DriverNotice>,
    pub parent_run: Option<RunId>,
    pub profile: Option<SubagentProfile>,
    pub task_key: Option<String>,
    /// The sandbox backend the run's sandbox (and its subagents') comes
    /// from: `native`, `docker`, `gvisor`, `microvm` (absent in events
    /// written before runs named one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// The container image of that backend, when the run named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The network policy of the run's sandbox (absent in events written
    /// before runs had one: those ran with none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkPolicy>,
    /// The secrets injected at egress into the run's sandbox: names and
    /// hosts, never a value, which is not stored anywhere (a resume must be
    /// given them again); absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<paddock_proto::SecretNotice>,
    /// The interrupted run this one resumes; absent on a run that does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<RunId>,
    /// A resumed run: the checkpoint its workspace was restored to before
    /// its sandbox started; absent when it went on with the workspace as
    /// the interrupted run left it (a read-only run, no checkpoint, or one
    /// that failed after the last: see `checkpoint.failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_checkpoint: Option<CheckpointId>,
    /// A resumed run: where its `budgets` came from; absent on a run that
    /// does not resume another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_budget: Option<ResumeBudget>,
}

/// Where a resumed run's budgets came from (`run.started`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResumeBudget {
    pub source: BudgetSource,
    /// What the interrupted run and its subagents had spent, as recorded.
    pub spent: RunUsage,
}

/// Whose budgets a resumed run runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetSource {
    /// What the interrupted run's family left of its budgets: its limits
    /// less `spent`, and the time left to its wall-clock deadline (which a
    /// resume does not restart).
    Left,
    /// The caller passed new budgets: the operator or user raised the limit.
    Given,
}

/// `run.state`: the run moved to `state`; `usage` is what it spent so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStateChanged {
    pub state: RunState,
    pub usage: RunUsage,
}

/// `run.queued`: the run is recorded `queued`: no sandbox slot was free
/// (where the operator asks for queueing); it starts (`run.started`) when
/// one frees, or ends with `run.finished`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunQueued {
    /// Why it has no slot: the refusal naming the quota, or the runs of
    /// its tenant queued before it.
    pub reason: String,
    /// Runs of its tenant ahead of it in the queue when it joined.
    pub ahead: u64,
    /// The longest it waits before it fails (`queue_timeout`).
    pub max_wait_ms: u64,
    /// What the front end needs to start it again after a restart (the
    /// API's request, with no secret value in it); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Value>,
}

/// `sandbox.ready`: the run's sandbox answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SandboxReady {
    pub sandbox_id: SandboxId,
    pub backend: String,
    pub read_only: bool,
}

/// `sandbox.stopped`: the run's sandbox was torn down (`error` if not cleanly).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SandboxStopped {
    pub sandbox_id: SandboxId,
    pub error: Option<String>,
}

/// `egress.decision`: connections of the run's sandbox through its egress
/// proxy (never a header or a payload byte, so never a secret). Decisions
/// alike (allowed, host, port, via, reason) within one flush are one event
/// with their count and summed bytes and durations; a flush writes a
/// bounded number of events and a run a bounded total, and what is left
/// out is counted in `omitted` (see `run::egress_events`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EgressDecisionEvent {
    pub sandbox_id: SandboxId,
    #[serde(flatten)]
    pub decision: EgressDecision,
    /// How many connections this event stands for (0: only a summary of
    /// what the run's cap left out, naming the latest decision).
    pub count: u64,
    /// Decisions of this flush (and, on the run's last, of the run) not
    /// written as events of their own.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `model.message`: one model turn's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelMessage {
    /// 1-based model turn of the run.
    pub turn: u32,
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    /// The request was compacted to fit the context window before this turn.
    pub compacted: bool,
}

/// `context.compacting`: the request passed the compaction threshold; the
/// older history is being summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextCompacting {
    /// Estimated tokens of the request that would have been sent.
    pub tokens_before: u64,
    pub context_window: u32,
    /// The estimate above which history is compacted.
    pub threshold: u64,
    /// Messages the summary replaces.
    pub messages_replaced: u64,
}

/// `context.compacted`: the older history was replaced by a summary (stored
/// as the session's compaction number `seq`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextCompacted {
    pub seq: u64,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub messages_replaced: u64,
    pub messages_kept: u64,
    /// The summary call failed and a summary was built without the model.
    pub fallback: bool,
    /// Why the summary call failed, for a fallback.
    pub error: Option<String>,
    pub summary_tokens: u64,
}

/// `tool.call`: a call the model asked for, before it runs (or is refused).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallEvent {
    pub call_id: String,
    pub tool: String,
    pub arguments: Value,
    pub invocation_id: ToolInvocationId,
    /// The key the call's command saw ([`IDEMPOTENCY_KEY_ENV`]) when it is
    /// not `invocation_id`: a call a resume runs again keeps the key of the
    /// call it repeats. Absent otherwise.
    ///
    /// [`IDEMPOTENCY_KEY_ENV`]: crate::tools::IDEMPOTENCY_KEY_ENV
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<ToolInvocationId>,
}

impl ToolCallEvent {
    /// The call's idempotency key: what its command saw.
    pub fn key(&self) -> &ToolInvocationId {
        self.idempotency_key.as_ref().unwrap_or(&self.invocation_id)
    }
}

/// How a call ended, as `tool.result` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// The tool ran and reported success.
    Succeeded,
    /// The tool ran (or tried to) and failed: its error is the result.
    Failed,
    /// The policy refused the call; nothing ran.
    Denied,
    /// The repeat guard answered with a recovery hint; nothing ran.
    Hint,
    /// Not run because the run ended first (budget, repeat, cancellation).
    Skipped,
}

impl CallStatus {
    pub const ALL: [CallStatus; 5] = [
        CallStatus::Succeeded,
        CallStatus::Failed,
        CallStatus::Denied,
        CallStatus::Hint,
        CallStatus::Skipped,
    ];

    /// The name the payload stores.
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Succeeded => "succeeded",
            CallStatus::Failed => "failed",
            CallStatus::Denied => "denied",
            CallStatus::Hint => "hint",
            CallStatus::Skipped => "skipped",
        }
    }
}

/// `tool.result`: a call's result as the model receives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultEvent {
    pub call_id: String,
    pub tool: String,
    pub invocation_id: Option<ToolInvocationId>,
    pub status: CallStatus,
    pub is_error: bool,
    /// The result's text, cut at [`RESULT_EVENT_CAP`] characters.
    pub content: String,
    pub truncated: bool,
    pub duration_ms: u64,
}

/// One task of a `plan.updated` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanTask {
    pub key: String,
    pub title: String,
    pub status: TaskStatus,
}

/// `plan.updated`: the session's plan as `update_plan` set it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanUpdated {
    pub version: u64,
    pub explanation: Option<String>,
    pub tasks: Vec<PlanTask>,
}

/// `progress`: a milestone the agent reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub message: String,
}

/// `run.finished`: the run reached the end of its life (a terminal state, or
/// `awaiting_user`). The review, if any, came in `run.review` just before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFinished {
    pub state: RunState,
    pub end_reason: EndReason,
    /// The run's own usage (what its budgets counted).
    pub usage: RunUsage,
    /// Its own usage plus every subagent run's under it; None in events
    /// written before this was recorded (left out then, so they keep their
    /// bytes), or when reading the children failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_usage: Option<RunUsage>,
    pub error: Option<String>,
    pub verdict: Option<Verdict>,
    /// The question of `ask_user` (state `awaiting_user`).
    pub question: Option<String>,
    /// The workspace as the run left it (a fork from this run restores it).
    pub end_snapshot: Option<SnapshotId>,
    /// Why no end snapshot was taken, if that failed.
    pub snapshot_error: Option<String>,
    /// The snapshot limit the end snapshot went over, when that is why it
    /// failed: which, its value and how to raise it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_limit: Option<SnapshotLimitHit>,
    /// Steering messages accepted while the run went on that never reached
    /// the model, oldest first: the run could not go on to answer them
    /// (cancelled, failed, out of budget, interrupted). Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undelivered: Vec<UserMessage>,
}

/// A snapshot limit of the workspace that was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SnapshotLimitKind {
    /// Entries (files, directories, links) of the workspace.
    MaxFiles,
    /// Bytes of file content, all files together.
    MaxBytes,
}

impl SnapshotLimitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SnapshotLimitKind::MaxFiles => "max_files",
            SnapshotLimitKind::MaxBytes => "max_bytes",
        }
    }
}

/// A snapshot (end of run, fork, subagent spawn) stopped at a limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotLimitHit {
    pub limit: SnapshotLimitKind,
    /// The limit's value in force.
    pub value: u64,
    /// For people: what went over and the ways to raise the limit.
    pub message: String,
}

/// Where a subagent is in its life, as `subagent.status` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubagentPhase {
    /// Its run, session and workspace exist.
    Spawned,
    /// It waits for one of the parent's running slots.
    Queued,
    /// Its sandbox is starting or its loop runs.
    Running,
    /// Its run ended; `state`, `verdict`, `summary` and `changed_paths` say how.
    Finished,
}

impl SubagentPhase {
    pub const ALL: [SubagentPhase; 4] = [
        SubagentPhase::Spawned,
        SubagentPhase::Queued,
        SubagentPhase::Running,
        SubagentPhase::Finished,
    ];

    /// The name the payload stores.
    pub fn as_str(self) -> &'static str {
        match self {
            SubagentPhase::Spawned => "spawned",
            SubagentPhase::Queued => "queued",
            SubagentPhase::Running => "running",
            SubagentPhase::Finished => "finished",
        }
    }
}

/// `subagent.status`, in the parent's session: a lightweight view of a child,
/// never its transcript (that is in the child's own session).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentStatus {
    pub run_id: RunId,
    pub session_id: SessionId,
    pub task_id: String,
    pub profile: SubagentProfile,
    pub status: SubagentPhase,
    /// Set when finished.
    pub state: Option<RunState>,
    pub verdict: Option<Verdict>,
    /// The child's review summary, first 500 characters.
    pub summary: Option<String>,
    /// Files its change set adds, modifies or deletes (build children).
    pub changed_paths: Option<u32>,
}

/// `parent.message`, in a subagent's session: what `message_subagent` sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentMessage {
    pub message: String,
}

/// `checkpoint.created`: the workspace and the session's position were
/// recorded (at run start, after a tool batch that changed the workspace,
/// or by a rewind); a rewind or fork can go back to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointCreated {
    pub checkpoint_id: CheckpointId,
    pub reason: CheckpointReason,
    pub files: u64,
    pub bytes: u64,
    /// Blobs and bytes stored for it (content no earlier checkpoint had).
    pub new_blobs: u64,
    pub new_bytes: u64,
    /// Files read to hash them (the others' stat was unchanged).
    pub hashed_files: u64,
    pub duration_ms: u64,
}

/// `checkpoint.failed`: a checkpoint the run was to take (at its start, or
/// after a tool batch) could not be captured or recorded; the run went on.
/// Until its next checkpoint, the last one is behind the history, so a
/// resume keeps the workspace as it is instead of restoring that one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointFailed {
    pub reason: CheckpointReason,
    pub error: String,
}

/// `checkpoints.pruned`: the session had more checkpoints than the
/// server keeps per session; these, the oldest that may go (never a run's
/// start, a rewind's or the latest), were deleted, and the blobs no
/// checkpoint of the tenant names any more were removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointsPruned {
    pub checkpoints: Vec<CheckpointId>,
    /// Checkpoints the session keeps.
    pub kept: u64,
    pub max_per_session: u32,
    pub blobs_removed: u64,
    pub bytes_freed: u64,
}

/// `user.message`: a steering message a user sent to the run in progress,
/// put into its history just before this model turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMessage {
    pub message: String,
    /// The stored steering message's id.
    pub steering_id: u64,
}

/// Payloads published live only, never stored: a [`RunEvent`] carrying one
/// has `seq` 0 and no place in the session's sequence (SSE sends it without
/// an `id`, so resuming by `Last-Event-ID` stays exact). The stored events
/// say the same in full (`model.message`, `tool.result`).
pub trait Transient: EventPayload {}

/// `model.delta` (transient): a piece of the model's answer as it streams.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "part", rename_all = "snake_case")]
pub enum ModelDelta {
    /// More of the answer's text.
    Text { turn: u32, text: String },
    /// A tool call begins; its arguments follow.
    ToolCall {
        turn: u32,
        call_id: String,
        tool: String,
    },
    /// A fragment of a call's arguments JSON (not parseable on its own).
    ToolArguments {
        turn: u32,
        call_id: String,
        json: String,
    },
}

/// Most bytes of command output one `tool.output` event carries.
pub const OUTPUT_CHUNK_CAP: usize = 8 << 10;
/// Most bytes of one call's output sent live; `tool.result` has the rest.
pub const OUTPUT_LIVE_CAP: usize = 1 << 20;

/// `tool.output` (transient): output a running call printed, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOutputChunk {
    pub call_id: String,
    pub tool: String,
    /// `stdout` or `stderr`.
    pub stream: String,
    /// At most [`OUTPUT_CHUNK_CAP`] bytes, as text (invalid UTF-8 replaced).
    pub text: String,
    /// The call printed more than [`OUTPUT_LIVE_CAP`]: no more chunks follow.
    pub truncated: bool,
}

/// `store.waiting` (transient): a write of the run found the store's disk
/// full and the run waits for space (`waiting: true`), or the write landed
/// after the wait and the run goes on (`waiting: false`). Transient because
/// nothing can be stored while the disk is full.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreWaiting {
    /// The store operation waiting (`append_event`, `update_run`, ...).
    pub operation: String,
    pub waiting: bool,
    /// Why, when the wait starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long it waited, when it ends.
    pub waited_ms: u64,
}

impl Transient for ModelDelta {}
impl Transient for ToolOutputChunk {}
impl Transient for StoreWaiting {}

/// The kinds: each payload type's [`EventPayload`] impl and its variant of
/// [`Event`], from one line per kind.
macro_rules! event_kinds {
    ($($(#[$doc:meta])* $variant:ident($payload:ty) = $kind:literal,)+) => {
        $(impl EventPayload for $payload {
            const KIND: &'static str = $kind;
        })+

        /// A stored event's payload, typed by its kind.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            $($(#[$doc])* $variant($payload),)+
            /// What this version cannot type; kept as stored.
            Other(OtherEvent),
        }

        $(impl From<$payload> for Event {
            fn from(payload: $payload) -> Self {
                Event::$variant(payload)
            }
        })+

        impl Event {
            /// Every kind this version types, in the order of the table.
            pub const KINDS: &'static [&'static str] = &[$($kind),+];

            /// The event stored as `kind` with `payload`. Never fails: an
            /// unknown kind, or a payload that does not decode as its kind's
            /// type, is [`Event::Other`], so one odd event cannot stop a reader.
            pub fn decode(kind: &str, payload: &str) -> Self {
                match kind {
                    $($kind => match serde_json::from_str(payload) {
                        Ok(payload) => Event::$variant(payload),
                        Err(err) => Event::Other(OtherEvent::new(kind, payload, Some(err.to_string()))),
                    },)+
                    _ => Event::Other(OtherEvent::new(kind, payload, None)),
                }
            }

            /// `RunEvent::kind` of this event.
            pub fn kind(&self) -> &str {
                match self {
                    $(Event::$variant(_) => $kind,)+
                    Event::Other(other) => &other.kind,
                }
            }

            /// The payload as it is stored (`RunEvent::payload`).
            pub fn encode(&self) -> Result<String, serde_json::Error> {
                match self {
                    $(Event::$variant(payload) => serde_json::to_string(payload),)+
                    Event::Other(other) => Ok(other.payload.clone()),
                }
            }
        }
    };
}

event_kinds! {
    /// The run row exists and its goal is recorded.
    RunStarted(RunStarted) = "run.started",
    /// The run moved to another state.
    RunState(RunStateChanged) = "run.state",
    /// The run waits for a sandbox slot.
    RunQueued(RunQueued) = "run.queued",
    SandboxReady(SandboxReady) = "sandbox.ready",
    SandboxStopped(SandboxStopped) = "sandbox.stopped",
    /// Connections of the run's sandbox through its egress proxy (coalesced, bounded).
    EgressDecision(EgressDecisionEvent) = "egress.decision",
    ModelMessage(ModelMessage) = "model.message",
    /// The history is being summarised to fit the context window.
    ContextCompacting(ContextCompacting) = "context.compacting",
    /// The history was summarised; later turns see the summary and the tail.
    ContextCompacted(ContextCompacted) = "context.compacted",
    ToolCall(ToolCallEvent) = "tool.call",
    ToolResult(ToolResultEvent) = "tool.result",
    PlanUpdated(PlanUpdated) = "plan.updated",
    Progress(Progress) = "progress",
    /// The run's review, just before `run.finished`.
    RunReview(Review) = "run.review",
    RunFinished(RunFinished) = "run.finished",
    /// In a parent's session: one of its subagents changed phase.
    SubagentStatus(SubagentStatus) = "subagent.status",
    /// In a subagent's session: the parent sent it a message.
    ParentMessage(ParentMessage) = "parent.message",
    /// The workspace and the session's position were recorded.
    CheckpointCreated(CheckpointCreated) = "checkpoint.created",
    /// A checkpoint could not be taken; the run went on without it.
    CheckpointFailed(CheckpointFailed) = "checkpoint.failed",
    /// Old checkpoints past the per-session cap were deleted.
    CheckpointsPruned(CheckpointsPruned) = "checkpoints.pruned",
    /// A user's steering message joined the history before the next turn.
    UserMessage(UserMessage) = "user.message",
    /// Transient: a piece of the model's answer as it streams.
    ModelDelta(ModelDelta) = "model.delta",
    /// Transient: output of a running command.
    ToolOutput(ToolOutputChunk) = "tool.output",
    /// Transient: the run waits for space on the store's disk, or goes on.
    StoreWaiting(StoreWaiting) = "store.waiting",
}

impl Event {
    /// A stored event, typed.
    pub fn of(event: &RunEvent) -> Self {
        Self::decode(&event.kind, &event.payload)
    }

    /// Whether this is a run's last event (`run.finished`), also when its
    /// payload did not decode.
    pub fn is_run_finished(&self) -> bool {
        self.kind() == RunFinished::KIND
    }
}

/// An event this version cannot type: a kind it does not know (written by a
/// newer version), or a payload that does not decode as its kind's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherEvent {
    pub kind: String,
    /// The payload as stored.
    pub payload: String,
    /// Why the payload of a known kind did not decode; None for an unknown kind.
    pub error: Option<String>,
}

impl OtherEvent {
    fn new(kind: &str, payload: &str, error: Option<String>) -> Self {
        Self {
            kind: kind.to_owned(),
            payload: payload.to_owned(),
            error,
        }
    }

    /// The payload as JSON; see [`payload_json`].
    pub fn json(&self) -> Value {
        payload_json(&self.payload)
    }
}

/// A stored payload as JSON, for front ends that pass it on untyped; one
/// that is not JSON (never written by the runtime) becomes a JSON string, so
/// nothing is lost.
pub fn payload_json(payload: &str) -> Value {
    serde_json::from_str(payload).unwrap_or_else(|_| Value::String(payload.to_owned()))
}

/// `content` cut to at most `cap` characters, and whether it was cut.
pub(crate) fn cap_text(content: &str, cap: usize) -> (String, bool) {
    match content.char_indices().nth(cap) {
        Some((end, _)) => (content[..end].to_owned(), true),
        None => (content.to_owned(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capping_counts_characters_not_bytes() {
        assert_eq!(cap_text("héllo", 2), ("hé".to_owned(), true));
        assert_eq!(cap_text("héllo", 5), ("héllo".to_owned(), false));
        assert_eq!(cap_text("", 0), (String::new(), false));
    }

    #[test]
    fn payloads_use_snake_case_states_and_statuses() -> Result<(), serde_json::Error> {
        let changed = RunStateChanged {
            state: RunState::AwaitingUser,
            usage: RunUsage::default(),
        };
        let json = serde_json::to_value(&changed)?;
        assert_eq!(json["state"], "awaiting_user");
        assert_eq!(serde_json::to_value(CallStatus::Hint)?, "hint");
        Ok(())
    }

    #[test]
    fn status_names_are_the_stored_ones() -> Result<(), serde_json::Error> {
        for status in CallStatus::ALL {
            assert_eq!(serde_json::to_value(status)?, status.as_str());
        }
        for phase in SubagentPhase::ALL {
            assert_eq!(serde_json::to_value(phase)?, phase.as_str());
        }
        Ok(())
    }

    #[test]
    fn unknown_kinds_and_undecodable_payloads_are_kept_as_stored() {
        let unknown = Event::decode("child.spawned", r#"{"a":1}"#);
        assert_eq!(
            unknown,
            Event::Other(OtherEvent {
                kind: "child.spawned".into(),
                payload: r#"{"a":1}"#.into(),
                error: None,
            })
        );
        assert_eq!(unknown.kind(), "child.spawned");
        assert_eq!(unknown.encode().ok().as_deref(), Some(r#"{"a":1}"#));

        let Event::Other(bad) = Event::decode(RunFinished::KIND, "{\"state\":1}") else {
            panic!("a run.finished without its fields decoded");
        };
        assert_eq!(bad.kind, "run.finished");
        assert!(bad.error.is_some());
        assert!(Event::Other(bad).is_run_finished());

        let not_json = Event::decode("progress", "not json");
        let Event::Other(not_json) = not_json else {
            panic!("not JSON decoded");
        };
        assert_eq!(not_json.json(), Value::String("not json".into()));
    }

    #[test]
    fn a_typed_event_knows_its_kind() {
        let event = Event::from(Progress {
            message: "half way".into(),
        });
        assert_eq!(event.kind(), Progress::KIND);
        assert_eq!(event.kind(), "progress");
        assert!(!event.is_run_finished());
        assert_eq!(
            event.encode().ok().as_deref(),
            Some(r#"{"message":"half way"}"#)
        );
    }
}
