//! A run's writer: every write a run makes goes through here, carrying the
//! session lease (the store refuses it once the lease was taken over), and
//! every event is appended to the store before it is published on the bus.

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
use crate::events::{EventPayload, Transient, UserMessage};

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
        }
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
            .store
            .append_event(&self.lease, &self.tenant, &event)
            .await
            .map_err(RuntimeError::store("append_event"))?;
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
            .store
            .append_events(&self.lease, &self.tenant, &events)
            .await
            .map_err(RuntimeError::store("append_events"))?;
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
        self.store
            .create_run(&self.lease, run)
            .await
            .map_err(RuntimeError::store("create_run"))
    }

    pub(crate) async fn update_run(&self, update: &RunUpdate) -> Result<Run, RuntimeError> {
        self.store
            .update_run(&self.lease, &self.tenant, &self.run, update)
            .await
            .map_err(RuntimeError::store("update_run"))
    }

    pub(crate) async fn create_goal(&self, goal: &Goal) -> Result<(), RuntimeError> {
        self.store
            .create_goal(&self.lease, goal)
            .await
            .map_err(RuntimeError::store("create_goal"))
    }

    pub(crate) async fn set_goal_status(
        &self,
        goal: &GoalId,
        status: GoalStatus,
    ) -> Result<Goal, RuntimeError> {
        self.store
            .set_goal_status(&self.lease, &self.tenant, goal, status)
            .await
            .map_err(RuntimeError::store("set_goal_status"))
    }

    pub(crate) async fn append_message(
        &self,
        message: Message,
    ) -> Result<StoredMessage, RuntimeError> {
        let stored = self.stored_message(message);
        self.store
            .append_message(&self.lease, &stored)
            .await
            .map_err(RuntimeError::store("append_message"))
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
            .store
            .deliver_steering_messages(
                &self.lease,
                &self.tenant,
                &self.session,
                &self.run,
                &deliveries,
            )
            .await
            .map_err(RuntimeError::store("deliver_steering_messages"))?;
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
        self.store
            .close_steering(&self.lease, &self.tenant, &self.session, &self.run, how)
            .await
            .map_err(RuntimeError::store("close_steering"))
    }

    /// Records a compaction of this run's session (stamped with this run).
    pub(crate) async fn record_compaction(
        &self,
        compaction: Compaction,
    ) -> Result<Compaction, RuntimeError> {
        self.store
            .record_compaction(&self.lease, &compaction)
            .await
            .map_err(RuntimeError::store("record_compaction"))
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
        self.store
            .put_session_memory(&self.lease, &stored)
            .await
            .map_err(RuntimeError::store("put_session_memory"))
    }

    pub(crate) fn run_id(&self) -> &RunId {
        &self.run
    }

    pub(crate) async fn save_plan(&self, plan: &Plan) -> Result<Plan, RuntimeError> {
        self.store
            .save_plan(&self.lease, plan)
            .await
            .map_err(RuntimeError::store("save_plan"))
    }

    pub(crate) async fn record_invocation(
        &self,
        invocation: &ToolInvocation,
    ) -> Result<(), RuntimeError> {
        self.store
            .record_tool_invocation(&self.lease, invocation)
            .await
            .map_err(RuntimeError::store("record_tool_invocation"))
    }

    pub(crate) async fn finish_invocation(
        &self,
        id: &ToolInvocationId,
        outcome: &ToolOutcome,
    ) -> Result<(), RuntimeError> {
        self.store
            .finish_tool_invocation(&self.lease, &self.tenant, id, outcome)
            .await
            .map(drop)
            .map_err(RuntimeError::store("finish_tool_invocation"))
    }

    /// Gives the session lease up; failures are only logged (it expires anyway).
    pub(crate) async fn release(&self) {
        if let Err(err) = self.store.release_lease(&self.lease).await {
            tracing::warn!(session_id = %self.session, run_id = %self.run, error = %err, "releasing the session lease");
        }
    }
}
