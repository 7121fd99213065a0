//! A run's writes, pipelined: the run loop hands its writes (state changes,
//! events, messages, tool invocations, plans) to one writer task that
//! performs them strictly in order through the [`Journal`], so an event is
//! still appended before it is published and in sequence, while the loop goes
//! on with the next step (a tool call runs while its `tool.call` is written).
//! The queue is bounded, so the loop never runs more than a few turns ahead
//! of the store; `close` waits until everything queued is written. The first
//! failed write stops the writer: later writes are dropped, and every later
//! submit and `close` report the failure.
//!
//! When the writer is behind (the model answers faster than the store
//! writes), what is queued is coalesced before it is written: only the last
//! of several run-row updates is written (the row holds the latest state; the
//! `run.state` events keep every transition), and a tool invocation whose
//! result is already queued is recorded finished in one write. Events and
//! messages are never merged or dropped. A crash loses what was still
//! queued (at most [`QUEUE`] writes); a call that changes the workspace waits
//! for its record to be written before it runs ([`Pipeline::barrier`]).

use std::sync::Arc;
use std::sync::Mutex;

use paddock_core::ids::ToolInvocationId;
use paddock_core::model::Message;
use paddock_core::store::{Plan, RunUpdate, Timestamp, ToolInvocation, ToolOutcome};
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::error::RuntimeError;
use crate::events::{PlanTask, PlanUpdated, kind};
use crate::journal::Journal;
use crate::util::error_chain;

/// Writes queued before the run loop waits for the writer.
const QUEUE: usize = 64;

#[derive(Debug)]
enum Job {
    UpdateRun(RunUpdate),
    Event {
        kind: &'static str,
        payload: String,
    },
    Message(Message),
    Record(ToolInvocation),
    Finish(ToolInvocationId, ToolOutcome, Timestamp),
    /// Saves the plan, then emits `plan.updated` with the version it got.
    Plan(Plan),
    /// Answered once every job queued before it is written.
    Barrier(oneshot::Sender<()>),
}

#[derive(Debug)]
pub(crate) struct Pipeline {
    jobs: mpsc::Sender<Job>,
    failure: Arc<Mutex<Option<String>>>,
    writer: JoinHandle<()>,
}

impl Pipeline {
    pub(crate) fn spawn(journal: Arc<Journal>) -> Self {
        let (jobs, mut queue) = mpsc::channel(QUEUE);
        let failure = Arc::new(Mutex::new(None));
        let failed = Arc::clone(&failure);
        let writer = tokio::spawn(
            async move {
            let mut batch = Vec::with_capacity(QUEUE);
            while queue.recv_many(&mut batch, QUEUE).await > 0 {
                for job in coalesce(std::mem::take(&mut batch)) {
                    if let Job::Barrier(done) = job {
                        // the waiter may have given up; nothing to do then
                        let _ = done.send(());
                        continue;
                    }
                    if lock(&failed).is_some() {
                        continue;
                    }
                    if let Err(err) = write(&journal, job).await {
                        tracing::error!(error = %error_chain(&err), "recording the run failed; later writes are dropped");
                        *lock(&failed) = Some(error_chain(&err));
                    }
                }
            }
        }
            .instrument(tracing::Span::current()),
        );
        Self {
            jobs,
            failure,
            writer,
        }
    }

    fn failed(&self) -> Result<(), RuntimeError> {
        match lock(&self.failure).as_ref() {
            Some(reason) => Err(RuntimeError::Journal {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    async fn submit(&self, job: Job) -> Result<(), RuntimeError> {
        self.failed()?;
        self.jobs
            .send(job)
            .await
            .map_err(|_| RuntimeError::Journal {
                reason: "the run's writer stopped".to_owned(),
            })
    }

    pub(crate) async fn emit<P: Serialize>(
        &self,
        kind: &'static str,
        payload: &P,
    ) -> Result<(), RuntimeError> {
        let payload = serde_json::to_string(payload).map_err(|source| RuntimeError::Encode {
            what: "event payload",
            source,
        })?;
        self.submit(Job::Event { kind, payload }).await
    }

    pub(crate) async fn update_run(&self, update: RunUpdate) -> Result<(), RuntimeError> {
        self.submit(Job::UpdateRun(update)).await
    }

    pub(crate) async fn append_message(&self, message: Message) -> Result<(), RuntimeError> {
        self.submit(Job::Message(message)).await
    }

    pub(crate) async fn record_invocation(
        &self,
        invocation: ToolInvocation,
    ) -> Result<(), RuntimeError> {
        self.submit(Job::Record(invocation)).await
    }

    pub(crate) async fn finish_invocation(
        &self,
        id: ToolInvocationId,
        outcome: ToolOutcome,
        at: Timestamp,
    ) -> Result<(), RuntimeError> {
        self.submit(Job::Finish(id, outcome, at)).await
    }

    pub(crate) async fn save_plan(&self, plan: Plan) -> Result<(), RuntimeError> {
        self.submit(Job::Plan(plan)).await
    }

    /// Waits until every write queued so far is done (e.g. a call that
    /// changes the workspace is on record before it runs).
    pub(crate) async fn barrier(&self) -> Result<(), RuntimeError> {
        let (done, written) = oneshot::channel();
        self.submit(Job::Barrier(done)).await?;
        written.await.map_err(|_| RuntimeError::Journal {
            reason: "the run's writer stopped".to_owned(),
        })?;
        self.failed()
    }

    /// Writes what is queued and stops the writer.
    pub(crate) async fn close(self) -> Result<(), RuntimeError> {
        let Self {
            jobs,
            failure,
            writer,
        } = self;
        drop(jobs);
        if let Err(err) = writer.await {
            return Err(RuntimeError::Task {
                what: "the run's writer".to_owned(),
                reason: err.to_string(),
            });
        }
        match lock(&failure).take() {
            Some(reason) => Err(RuntimeError::Journal { reason }),
            None => Ok(()),
        }
    }
}

/// `batch` with run-row updates folded into the last one and finished
/// invocations recorded finished; order is otherwise kept.
fn coalesce(batch: Vec<Job>) -> Vec<Job> {
    if batch.len() < 2 {
        return batch;
    }
    let last_update = batch
        .iter()
        .rposition(|job| matches!(job, Job::UpdateRun(_)));
    let mut folded: Option<RunUpdate> = None;
    let mut out: Vec<Job> = Vec::with_capacity(batch.len());
    for (index, job) in batch.into_iter().enumerate() {
        match job {
            Job::UpdateRun(update) if Some(index) != last_update => {
                folded = Some(match folded {
                    Some(earlier) => merge(earlier, update),
                    None => update,
                });
            }
            Job::UpdateRun(update) => {
                out.push(Job::UpdateRun(match folded.take() {
                    Some(earlier) => merge(earlier, update),
                    None => update,
                }));
            }
            Job::Finish(id, outcome, at) => {
                let recorded = out.iter_mut().find_map(|job| match job {
                    Job::Record(invocation) if invocation.id == id => Some(invocation),
                    _ => None,
                });
                match recorded {
                    Some(invocation) => {
                        invocation.status = outcome.status;
                        invocation.output = Some(outcome.output);
                        invocation.finished_at = Some(at);
                    }
                    None => out.push(Job::Finish(id, outcome, at)),
                }
            }
            job => out.push(job),
        }
    }
    out
}

/// `later` with the fields it leaves unset taken from `earlier` (the store
/// keeps a stored value for an unset field, except `error`, written as given).
fn merge(earlier: RunUpdate, later: RunUpdate) -> RunUpdate {
    RunUpdate {
        state: later.state,
        error: later.error,
        usage: later.usage.or(earlier.usage),
        end_reason: later.end_reason.or(earlier.end_reason),
        review: later.review.or(earlier.review),
        end_snapshot: later.end_snapshot.or(earlier.end_snapshot),
    }
}

fn lock(failure: &Mutex<Option<String>>) -> std::sync::MutexGuard<'_, Option<String>> {
    failure
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn write(journal: &Journal, job: Job) -> Result<(), RuntimeError> {
    match job {
        Job::UpdateRun(update) => journal.update_run(&update).await.map(drop),
        Job::Event { kind, payload } => journal.emit_raw(kind, payload).await.map(drop),
        Job::Message(message) => journal.append_message(message).await.map(drop),
        Job::Record(invocation) => journal.record_invocation(&invocation).await,
        Job::Finish(id, outcome, _) => journal.finish_invocation(&id, &outcome).await,
        Job::Barrier(done) => {
            let _ = done.send(());
            Ok(())
        }
        Job::Plan(plan) => {
            let saved = journal.save_plan(&plan).await?;
            let event = PlanUpdated {
                version: saved.version,
                explanation: saved.explanation.clone(),
                tasks: saved
                    .tasks
                    .iter()
                    .map(|task| PlanTask {
                        key: task.key.clone(),
                        title: task.title.clone(),
                        status: task.status,
                    })
                    .collect(),
            };
            journal.emit(kind::PLAN_UPDATED, &event).await.map(drop)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_core::ids::{SessionId, TenantId};
    use paddock_core::store::{Run, RunState, RunUsage, ToolStatus};

    /// Jobs hold channels, so they are compared by their debug form.
    fn assert_same(got: Vec<Job>, want: Vec<Job>) {
        assert_eq!(format!("{got:#?}"), format!("{want:#?}"));
    }

    #[test]
    fn barriers_keep_their_place() {
        let (done, _rx) = oneshot::channel();
        let got = coalesce(vec![
            update(RunState::Acting, 1),
            Job::Barrier(done),
            event("x"),
        ]);
        assert!(matches!(
            got.as_slice(),
            [Job::UpdateRun(_), Job::Barrier(_), Job::Event { .. }]
        ));
    }

    fn update(state: RunState, turns: u32) -> Job {
        Job::UpdateRun(RunUpdate {
            usage: Some(RunUsage {
                turns,
                ..RunUsage::default()
            }),
            ..RunUpdate::state(state)
        })
    }

    fn event(kind: &'static str) -> Job {
        Job::Event {
            kind,
            payload: "{}".into(),
        }
    }

    #[test]
    fn only_the_last_run_update_is_written_and_events_stay() {
        let batch = vec![
            update(RunState::Planning, 1),
            event("run.state"),
            update(RunState::Acting, 2),
            event("run.state"),
        ];
        assert_same(
            coalesce(batch),
            vec![
                event("run.state"),
                update(RunState::Acting, 2),
                event("run.state"),
            ],
        );
    }

    #[test]
    fn a_finished_invocation_is_recorded_finished() {
        let run = Run::new(
            TenantId::parse("t").unwrap(),
            SessionId::generate(),
            "g",
            Timestamp::from_millis(1),
        );
        let started = ToolInvocation::start(&run, "read_file", "{}", Timestamp::from_millis(2));
        let outcome = ToolOutcome {
            status: ToolStatus::Succeeded,
            output: "ok".into(),
        };
        let other = ToolInvocationId::generate();
        let batch = vec![
            Job::Record(started.clone()),
            event("tool.call"),
            Job::Finish(
                started.id.clone(),
                outcome.clone(),
                Timestamp::from_millis(3),
            ),
            Job::Finish(other.clone(), outcome.clone(), Timestamp::from_millis(4)),
        ];
        let finished = ToolInvocation {
            status: ToolStatus::Succeeded,
            output: Some("ok".into()),
            finished_at: Some(Timestamp::from_millis(3)),
            ..started
        };
        assert_same(
            coalesce(batch),
            vec![
                Job::Record(finished),
                event("tool.call"),
                Job::Finish(other, outcome, Timestamp::from_millis(4)),
            ],
        );
    }

    #[test]
    fn merged_updates_keep_fields_only_the_earlier_one_set() {
        let earlier = RunUpdate {
            end_reason: Some(paddock_core::store::EndReason::Cancelled),
            ..RunUpdate::state(RunState::Cancelling)
        };
        let merged = merge(earlier, RunUpdate::state(RunState::Cancelled));
        assert_eq!(merged.state, RunState::Cancelled);
        assert_eq!(
            merged.end_reason,
            Some(paddock_core::store::EndReason::Cancelled)
        );
    }
}
