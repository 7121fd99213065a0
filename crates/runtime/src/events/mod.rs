//! Run events, and the path every one of them takes: the payload types and
//! their kinds (`payload`, re-exported here), the run's writer that appends
//! them under the session lease (`journal`), the pipelined write queue in
//! front of it (`pipeline`), the in-process live bus they are published on
//! once stored (`bus`), and the session stream that reads them back, store
//! first, then live (`stream`).

pub(crate) mod bus;
pub(crate) mod journal;
mod payload;
pub(crate) mod pipeline;
pub(crate) mod store_wait;
pub(crate) mod stream;

pub(crate) use payload::cap_text;
pub use payload::{
    BudgetSource, CallStatus, CheckpointCreated, CheckpointFailed, CheckpointsPruned,
    ContextCompacted, ContextCompacting, DriverNotice, EgressDecisionEvent, Event, EventPayload,
    ModelDelta, ModelMessage, OUTPUT_CHUNK_CAP, OUTPUT_LIVE_CAP, OtherEvent, ParentMessage,
    PlanTask, PlanUpdated, Progress, RESULT_EVENT_CAP, ResumeBudget, RunFinished, RunQueued,
    RunStarted, RunStateChanged, SandboxReady, SandboxStopped, SnapshotLimitHit, SnapshotLimitKind,
    StoreWaiting, SubagentPhase, SubagentStatus, ToolCallEvent, ToolOutputChunk, ToolResultEvent,
    Transient, UserMessage, payload_json,
};
