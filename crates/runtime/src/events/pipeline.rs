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
//! result is already queued is recorded finished in one write. Then the rows
//! of what was taken from the queue are written in order and all its events
//! after them in one append (one fenced transaction instead of one per
//! event), so an event never names a row that is not written yet. Events and
//! messages are never merged or dropped, and events keep their order. A
//! crash loses what was still queued (at most [`QUEUE`] writes); a call that
//! changes the workspace waits for its record to be written before it runs
//! ([`Pipeline::barrier`]: what was queued before it is written, events too,
//! before it is answered).

use std::sync::Arc;
use std::sync::Mutex;

use paddock_core::ids::ToolInvocationId;
use paddock_core::model::Message;
use paddock_core::store::{Plan, RunUpdate, Timestamp, ToolInvocation, ToolOutcome};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::error::RuntimeError;
use crate::events::journal::{Encoded, Journal};
use crate::events::{EventPayload, PlanTask, PlanUpdated};
use crate::util::error_chain;

/// Writes queued before the run loop waits for the writer.
const QUEUE: usize = 64;

#[derive(Debug)]
enum Job {
    UpdateRun(RunUpdate),
    Event(Encoded),
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
                    let mut segment = Vec::with_capacity(batch.len());
                    for job in coalesce(std::mem::take(&mut batch)) {
                        let Job::Barrier(done) = job else {
                            segment.push(job);
                            continue;
                        };
                        write_segment(&journal, std::mem::take(&mut segment), &failed).await;
                        // the waiter may have given up; nothing to do then
                        let _ = done.send(());
                    }
                    write_segment(&journal, segment, &failed).await;
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

    pub(crate) async fn emit<P: EventPayload>(&self, payload: &P) -> Result<(), RuntimeError> {
        self.submit(Job::Event(Encoded::of(payload)?)).await
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

/// Writes `jobs` (no barriers among them) unless an earlier write failed;
/// the first failure is kept and stops the writer.
async fn write_segment(journal: &Journal, jobs: Vec<Job>, failed: &Mutex<Option<String>>) {
    if jobs.is_empty() || lock(failed).is_some() {
        return;
    }
    if let Err(err) = write_all(journal, jobs).await {
        tracing::error!(error = %error_chain(&err), "recording the run failed; later writes are dropped");
        *lock(failed) = Some(error_chain(&err));
    }
}

/// Writes the rows (run updates, messages, invocations, plans) in order and
/// then every event in one append, in order. Rows go first so an event never
/// names a row (an invocation, a plan version) that is not written yet; the
/// events of a whole batch then cost one fenced transaction instead of one
/// each.
async fn write_all(journal: &Journal, jobs: Vec<Job>) -> Result<(), RuntimeError> {
    let mut events = Vec::new();
    for job in jobs {
        match job {
            Job::Event(event) => events.push(event),
            Job::UpdateRun(update) => journal.update_run(&update).await.map(drop)?,
            Job::Message(message) => journal.append_message(message).await.map(drop)?,
            Job::Record(invocation) => journal.record_invocation(&invocation).await?,
            Job::Finish(id, outcome, _) => journal.finish_invocation(&id, &outcome).await?,
            Job::Barrier(done) => {
                let _ = done.send(());
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
                events.push(Encoded::of(&event)?);
            }
        }
    }
    journal.emit_all(events).await.map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{
        CallStatus, Event, Progress, RunStateChanged, ToolCallEvent, ToolResultEvent,
    };
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
            [Job::UpdateRun(_), Job::Barrier(_), Job::Event(_)]
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
        Job::Event(Encoded {
            kind,
            payload: "{}".into(),
        })
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

    fn progress(message: &str) -> Progress {
        Progress {
            message: message.into(),
        }
    }

    /// The messages of the `progress` events among `events`, in order.
    fn progress_messages(events: &[paddock_core::store::RunEvent]) -> Vec<String> {
        events
            .iter()
            .filter_map(|event| match Event::of(event) {
                Event::Progress(progress) => Some(progress.message),
                _ => None,
            })
            .collect()
    }

    /// A run with its session lease on a fresh SQLite store.
    struct Fixture {
        _dir: tempfile::TempDir,
        store: Arc<dyn paddock_core::store::Store>,
        bus: Arc<crate::events::bus::EventBus>,
        run: Run,
        journal: Arc<Journal>,
    }

    async fn fixture() -> Fixture {
        use paddock_core::store::{Lease, Session, Store, Tenant, Workspace};
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("p.db").display());
        let store: Arc<dyn Store> = Arc::new(paddock_store::SqlStore::open(&url).await.unwrap());
        let tenant = TenantId::parse("t").unwrap();
        store
            .ensure_tenant(&Tenant {
                id: tenant.clone(),
                name: "t".into(),
                created_at: store.now(),
            })
            .await
            .unwrap();
        let workspace = Workspace::new(tenant.clone(), "w", store.now());
        store.create_workspace(&workspace).await.unwrap();
        let session = Session::new(tenant.clone(), workspace.id.clone(), "s", store.now());
        store.create_session(&session).await.unwrap();
        let lease = store
            .acquire_lease(
                &Lease::session_resource(&session.id),
                "node/run",
                std::time::Duration::from_secs(60),
            )
            .await
            .unwrap();
        let run = Run::new(tenant, session.id.clone(), "g", store.now());
        store.create_run(&lease, &run).await.unwrap();
        let bus = Arc::new(crate::events::bus::EventBus::default());
        let journal = Arc::new(Journal::new(
            Arc::clone(&store),
            Arc::clone(&bus),
            &run,
            lease,
        ));
        Fixture {
            _dir: dir,
            store,
            bus,
            run,
            journal,
        }
    }

    #[tokio::test]
    async fn rows_and_batched_events_reach_the_store_in_order() {
        let fx = fixture().await;
        let mut published = fx.bus.subscribe(&fx.run.session);
        let pipe = Pipeline::spawn(Arc::clone(&fx.journal));
        let now = fx.store.now();
        let invocation = ToolInvocation::start(&fx.run, "read_file", "{}", now);
        let plan = Plan {
            tenant: fx.run.tenant.clone(),
            session: fx.run.session.clone(),
            run: fx.run.id.clone(),
            version: 0,
            explanation: None,
            tasks: vec![],
            created_at: now,
        };
        let outcome = ToolOutcome {
            status: ToolStatus::Succeeded,
            output: "ok".into(),
        };
        pipe.update_run(RunUpdate::state(RunState::Planning))
            .await
            .unwrap();
        pipe.emit(&RunStateChanged {
            state: RunState::Planning,
            usage: RunUsage::default(),
        })
        .await
        .unwrap();
        pipe.append_message(Message::user("hello")).await.unwrap();
        pipe.record_invocation(invocation.clone()).await.unwrap();
        pipe.emit(&ToolCallEvent {
            call_id: "c1".into(),
            tool: "read_file".into(),
            arguments: serde_json::json!({}),
            invocation_id: invocation.id.clone(),
            idempotency_key: None,
        })
        .await
        .unwrap();
        pipe.finish_invocation(invocation.id.clone(), outcome, now)
            .await
            .unwrap();
        pipe.emit(&ToolResultEvent {
            call_id: "c1".into(),
            tool: "read_file".into(),
            invocation_id: Some(invocation.id.clone()),
            status: CallStatus::Succeeded,
            is_error: false,
            content: "ok".into(),
            truncated: false,
            duration_ms: 1,
        })
        .await
        .unwrap();
        pipe.save_plan(plan).await.unwrap();
        pipe.emit(&progress("after.plan")).await.unwrap();
        pipe.barrier().await.unwrap();
        pipe.emit(&progress("after.barrier")).await.unwrap();
        pipe.close().await.unwrap();

        let events = fx
            .store
            .list_events(&fx.run.tenant, &fx.run.session, 0, 100)
            .await
            .unwrap();
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "run.state",
                "tool.call",
                "tool.result",
                PlanUpdated::KIND,
                "progress",
                "progress"
            ]
        );
        assert_eq!(progress_messages(&events), ["after.plan", "after.barrier"]);
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
        assert!(
            events[3].payload.contains("\"version\":1"),
            "{}",
            events[3].payload
        );
        for event in &events {
            assert_eq!(&published.try_recv().unwrap(), event);
        }
        let run = fx.store.get_run(&fx.run.tenant, &fx.run.id).await.unwrap();
        assert_eq!(run.state, RunState::Planning);
        let calls = fx
            .store
            .list_tool_invocations(&fx.run.tenant, &fx.run.id)
            .await
            .unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].status, ToolStatus::Succeeded);
        let messages = fx
            .store
            .list_messages(&fx.run.tenant, &fx.run.session, None)
            .await
            .unwrap();
        assert_eq!(messages.len(), 1);
    }

    #[tokio::test]
    async fn after_a_takeover_nothing_more_is_written() {
        let fx = fixture().await;
        let pipe = Pipeline::spawn(Arc::clone(&fx.journal));
        pipe.emit(&progress("first")).await.unwrap();
        pipe.barrier().await.unwrap();
        // another driver takes the session over
        fx.store.release_lease(fx.journal.lease()).await.unwrap();
        fx.store
            .acquire_lease(
                &fx.journal.lease().resource,
                "node/other",
                std::time::Duration::from_secs(60),
            )
            .await
            .unwrap();
        pipe.emit(&progress("late")).await.unwrap();
        pipe.append_message(Message::user("late")).await.unwrap();
        pipe.emit(&progress("later")).await.unwrap();
        assert!(pipe.close().await.is_err());
        let events = fx
            .store
            .list_events(&fx.run.tenant, &fx.run.session, 0, 100)
            .await
            .unwrap();
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["progress"]);
        assert_eq!(progress_messages(&events), ["first"]);
    }
}
