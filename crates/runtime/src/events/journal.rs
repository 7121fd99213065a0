//! A run's writer: every write a run makes goes through here, carrying the
//! session lease (the store refuses it once the lease was taken over), and
//! every event is appended to the store before it is published on the bus.
//! A run's journal waits out a full disk at each write (`store_wait.rs`).

use std::sync::Arc;

use paddock_core::ids::{GoalId, RunId, SessionId, TenantId, ToolInvocationId};
use paddock_core::model::Message;
use paddock_core::store::{
    Compaction, Goal, GoalStatus, Lease, NewEvent, Plan, Run, RunEvent, RunUpdate, SessionMemory,
    SteeringClose, SteeringClosed, SteeringDelivery, SteeringMessage, Store, StoredMessage,
    StoredSessionMemory, ToolInvocation, ToolOutcome,
};

use crate::error::RuntimeError;
use crate::events::bus::EventBus;
use crate::events::store_wait::StoreWait;
use crate::events::{EventPayload, StoreWaiting, Transient, UserMessage};
use crate::util::error_chain;

/// An event payload encoded for the store, under its type's kind.
#[derive(Debug)]
pub(crate) struct Encoded {
    pub(crate) kind: &'static str,
    pub(crate) payload: String,
}

impl Encoded {
    pub(crate) fn of<P: EventPayload>(payload: &P) -> Result<Self, RuntimeError> {
        let payload = serde_json::to_string(payload).map_err(|source| RuntimeError::Encode {
            what: "event payload",
            source,
        })?;
        Ok(Self {
            kind: P::KIND,
            payload,
        })
    }
}

#[derive(Debug)]
pub(crate) struct Journal {
    store: Arc<dyn Store>,
    bus: Arc<EventBus>,
    tenant: TenantId,
    session: SessionId,
    run: RunId,
    lease: Lease,
    /// Held from an event's append to its publication, so events reach the
    /// bus in sequence order even when parallel tool calls emit them.
    order: tokio::sync::Mutex<()>,
    /// A run's journal waits out a full disk (see `store_wait.rs`); others
    /// (a rewind, recovery) fail at once.
    wait: Option<StoreWait>,
}

impl Journal {
    pub(crate) fn new(store: Arc<dyn Store>, bus: Arc<EventBus>, run: &Run, lease: Lease) -> Self {
        Self {
            store,
            bus,
            tenant: run.tenant.clone(),
            session: run.session.clone(),
            run: run.id.clone(),
            lease,
            order: tokio::sync::Mutex::new(()),
            wait: None,
        }
    }

    /// Makes every write wait for space when it finds the store's disk full,
    /// up to `max`, unless `cancel` fires first.
    pub(crate) fn waiting_for_space(
        mut self,
        cancel: tokio_util::sync::CancellationToken,
        max: std::time::Duration,
    ) -> Self {
        self.wait = Some(StoreWait::new(cancel, max));
        self
    }

    /// The writes from now on record the run's end: they wait for space
    /// whatever the cancel (still within the bound).
    pub(crate) fn ending(&self) {
        if let Some(wait) = &self.wait {
            wait.ending();
        }
    }

    /// Runs one store write, waiting out a full disk when this journal
    /// does; the error names `operation`.
    async fn write<T, F, Fut>(&self, operation: &'static str, attempt: F) -> Result<T, RuntimeError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, paddock_core::store::StoreError>>,
    {
        let done = match &self.wait {
            Some(wait) => {
                let say = |waiting: StoreWaiting| {
                    if let Err(err) = self.publish_transient(&waiting) {
                        tracing::warn!(error = %error_chain(&err), "publishing store.waiting");
                    }
                };
                wait.retry(operation, say, attempt).await
            }
            None => attempt().await,
        };
        done.map_err(RuntimeError::store(operation))
    }

    pub(crate) fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub(crate) fn lease(&self) -> &Lease {
        &self.lease
    }

    pub(crate) fn tenant(&self) -> &TenantId {
        &self.tenant
    }

    pub(crate) fn session(&self) -> &SessionId {
        &self.session
    }

    /// Appends an event of this run, then publishes it.
    pub(crate) async fn emit<P: EventPayload>(
        &self,
        payload: &P,
    ) -> Result<RunEvent, RuntimeError> {
        let event = self.new_event(Encoded::of(payload)?);
        let _order = self.order.lock().await;
        let stored = self
            .write("append_event", || {
                self.store.append_event(&self.lease, &self.tenant, &event)
            })
            .await?;
        self.bus.publish(&stored);
        Ok(stored)
    }

    /// Publishes a transient event of this run on the bus, without storing
    /// it (`seq` 0). It may overtake stored events still queued in the
    /// run's pipeline; readers order by the stored ones.
    pub(crate) fn publish_transient<P: Transient>(&self, payload: &P) -> Result<(), RuntimeError> {
        let encoded = Encoded::of(payload)?;
        self.bus.publish(&RunEvent {
            tenant: self.tenant.clone(),
            session: self.session.clone(),
            seq: 0,
            run: Some(self.run.clone()),
            kind: encoded.kind.to_owned(),
            payload: encoded.payload,
            created_at: self.store.now(),
        });
        Ok(())
    }

    /// Appends events of this run in one store write, then publishes them in
    /// order.
    pub(crate) async fn emit_all(
        &self,
        events: Vec<Encoded>,
    ) -> Result<Vec<RunEvent>, RuntimeError> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let events: Vec<NewEvent> = events
            .into_iter()
            .map(|event| self.new_event(event))
            .collect();
        let _order = self.order.lock().await;
        let stored = self
            .write("append_events", || {
                self.store.append_events(&self.lease, &self.tenant, &events)
            })
            .await?;
        for event in &stored {
            self.bus.publish(event);
        }
        Ok(stored)
    }

    fn new_event(&self, event: Encoded) -> NewEvent {
        NewEvent {
            session: self.session.clone(),
            run: Some(self.run.clone()),
            kind: event.kind.to_owned(),
            payload: event.payload,
        }
    }

    pub(crate) async fn create_run(&self, run: &Run) -> Result<(), RuntimeError> {
        self.write("create_run", || self.store.create_run(&self.lease, run))
            .await
    }

    pub(crate) async fn update_run(&self, update: &RunUpdate) -> Result<Run, RuntimeError> {
        self.write("update_run", || {
            self.store
                .update_run(&self.lease, &self.tenant, &self.run, update)
        })
        .await
    }

    /// Updates the run and appends `events` in one store write, then
    /// publishes them: a reader who sees the new state finds the events too
    /// (a run's end with its `run.finished`), and an update the store
    /// refuses (the run already ended) records none of them.
    pub(crate) async fn update_run_emitting(
        &self,
        update: &RunUpdate,
        events: Vec<Encoded>,
    ) -> Result<Run, RuntimeError> {
        let events: Vec<NewEvent> = events
            .into_iter()
            .map(|event| self.new_event(event))
            .collect();
        let _order = self.order.lock().await;
        let (run, stored) = self
            .write("update_run", || {
                self.store.update_run_with_events(
                    &self.lease,
                    &self.tenant,
                    &self.run,
                    update,
                    &events,
                )
            })
            .await?;
        for event in &stored {
            self.bus.publish(event);
        }
        Ok(run)
    }

    pub(crate) async fn create_goal(&self, goal: &Goal) -> Result<(), RuntimeError> {
        self.write("create_goal", || self.store.create_goal(&self.lease, goal))
            .await
    }

    pub(crate) async fn set_goal_status(
        &self,
        goal: &GoalId,
        status: GoalStatus,
    ) -> Result<Goal, RuntimeError> {
        self.write("set_goal_status", || {
            self.store
                .set_goal_status(&self.lease, &self.tenant, goal, status)
        })
        .await
    }

    pub(crate) async fn append_message(
        &self,
        message: Message,
    ) -> Result<StoredMessage, RuntimeError> {
        let stored = self.stored_message(message);
        self.write("append_message", || {
            self.store.append_message(&self.lease, &stored)
        })
        .await
    }

    /// `message` as this run appends it (the store assigns its `seq`).
    pub(crate) fn stored_message(&self, message: Message) -> StoredMessage {
        StoredMessage {
            tenant: self.tenant.clone(),
            session: self.session.clone(),
            run: self.run.clone(),
            seq: 0,
            message,
            created_at: self.store.now(),
        }
    }

    /// The run's steering messages not yet delivered, oldest first.
    pub(crate) async fn waiting_steering(&self) -> Result<Vec<SteeringMessage>, RuntimeError> {
        self.store
            .waiting_steering_messages(&self.tenant, &self.run)
            .await
            .map_err(RuntimeError::store("waiting_steering_messages"))
    }

    /// Delivers `waiting` steering messages: each still waiting is marked
    /// delivered, put into the history as a user message and recorded as a
    /// `user.message` event, in one store write (a crash leaves it waiting,
    /// for a resume to carry, or delivered with both), then its event is
    /// published. Answers the history entries delivered, in order. The
    /// caller waits for the run's queued writes first (the pipeline's
    /// barrier), so these come after them.
    pub(crate) async fn deliver_steering(
        &self,
        waiting: Vec<SteeringMessage>,
    ) -> Result<Vec<Message>, RuntimeError> {
        let deliveries = waiting
            .into_iter()
            .map(|steering| {
                Ok(SteeringDelivery {
                    id: steering.id,
                    message: self.stored_message(Message::user(steering.text.clone())),
                    event: self.new_event(Encoded::of(&UserMessage::from(steering))?),
                })
            })
            .collect::<Result<Vec<_>, RuntimeError>>()?;
        let _order = self.order.lock().await;
        let delivered = self
            .write("deliver_steering_messages", || {
                self.store.deliver_steering_messages(
                    &self.lease,
                    &self.tenant,
                    &self.session,
                    &self.run,
                    &deliveries,
                )
            })
            .await?;
        Ok(delivered
            .into_iter()
            .map(|delivered| {
                self.bus.publish(&delivered.event);
                delivered.message.message
            })
            .collect())
    }

    /// Closes the run's steering queue as the run is about to end and reads
    /// what waits, in one step (see [`SteeringClose`]; fenced by the lease).
    pub(crate) async fn close_steering(
        &self,
        how: SteeringClose,
    ) -> Result<SteeringClosed, RuntimeError> {
        self.write("close_steering", || {
            self.store
                .close_steering(&self.lease, &self.tenant, &self.session, &self.run, how)
        })
        .await
    }

    /// Records a compaction of this run's session (stamped with this run).
    pub(crate) async fn record_compaction(
        &self,
        compaction: Compaction,
    ) -> Result<Compaction, RuntimeError> {
        self.write("record_compaction", || {
            self.store.record_compaction(&self.lease, &compaction)
        })
        .await
    }

    /// Replaces the session's memory.
    pub(crate) async fn put_session_memory(
        &self,
        memory: SessionMemory,
    ) -> Result<(), RuntimeError> {
        let stored = StoredSessionMemory {
            tenant: self.tenant.clone(),
            session: self.session.clone(),
            run: self.run.clone(),
            memory,
            updated_at: self.store.now(),
        };
        self.write("put_session_memory", || {
            self.store.put_session_memory(&self.lease, &stored)
        })
        .await
    }

    pub(crate) fn run_id(&self) -> &RunId {
        &self.run
    }

    pub(crate) async fn save_plan(&self, plan: &Plan) -> Result<Plan, RuntimeError> {
        self.write("save_plan", || self.store.save_plan(&self.lease, plan))
            .await
    }

    pub(crate) async fn record_invocation(
        &self,
        invocation: &ToolInvocation,
    ) -> Result<(), RuntimeError> {
        self.write("record_tool_invocation", || {
            self.store.record_tool_invocation(&self.lease, invocation)
        })
        .await
    }

    pub(crate) async fn finish_invocation(
        &self,
        id: &ToolInvocationId,
        outcome: &ToolOutcome,
    ) -> Result<(), RuntimeError> {
        self.write("finish_tool_invocation", || {
            self.store
                .finish_tool_invocation(&self.lease, &self.tenant, id, outcome)
        })
        .await
        .map(drop)
    }

    /// Gives the session lease up; failures are only logged (it expires anyway).
    pub(crate) async fn release(&self) {
        if let Err(err) = self.store.release_lease(&self.lease).await {
            tracing::warn!(session_id = %self.session, run_id = %self.run, error = %err, "releasing the session lease");
        }
    }
}
