//! A session's events as one stream: what the store holds after a sequence
//! number, then what is published live, each event exactly once and in order.
//!
//! The stream subscribes to the bus before it reads the store, so an event
//! written between the two reads is seen either way; live events at or below
//! the last delivered sequence are dropped, and a gap (the subscriber lagged,
//! or events were published out of order) is filled from the store, which
//! holds every event before it is published. Transient events (`seq` 0,
//! never stored) are passed on as they come while the live events are in
//! step; after a lag or a gap they are dropped until the next stored event
//! arrives in order (they are older than what the store filled in).

use std::collections::VecDeque;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use paddock_core::ids::{RunId, SessionId, TenantId};
use paddock_core::store::{RunEvent, Store};
use tokio::sync::broadcast::{self, error::RecvError};

use crate::error::RuntimeError;
use crate::events::{EventPayload, RunFinished};

/// Events read from the store per query while catching up.
const BACKFILL_PAGE: u32 = 500;

/// A session's events, live; see [`crate::Runtime::event_stream`].
pub type EventStream = BoxStream<'static, Result<RunEvent, RuntimeError>>;

struct Cursor {
    store: Arc<dyn Store>,
    tenant: TenantId,
    session: SessionId,
    live: broadcast::Receiver<RunEvent>,
    /// Sequence of the last event delivered.
    last: u64,
    /// Events read from the store, not delivered yet.
    ready: VecDeque<RunEvent>,
    /// The store may hold events after `last` that are not in `ready`.
    behind: bool,
    /// The live events come in step with what was delivered: false after a
    /// lag or a gap, until the next stored event arrives in order; transient
    /// events are dropped meanwhile (they are older than what the store gave).
    in_step: bool,
    failed: bool,
}

impl Cursor {
    async fn next(&mut self) -> Option<Result<RunEvent, RuntimeError>> {
        if self.failed {
            return None;
        }
        loop {
            if let Some(event) = self.ready.pop_front() {
                if event.seq > self.last {
                    self.last = event.seq;
                    return Some(Ok(event));
                }
                continue;
            }
            if self.behind {
                if let Err(err) = self.backfill().await {
                    self.failed = true;
                    return Some(Err(err));
                }
                continue;
            }
            match self.live.recv().await {
                // never stored: delivered as it comes, outside the sequence
                Ok(event) if event.is_transient() => {
                    if self.in_step {
                        return Some(Ok(event));
                    }
                }
                Ok(event) if event.seq <= self.last => self.in_step = event.seq == self.last,
                Ok(event) if event.seq == self.last + 1 => {
                    self.last = event.seq;
                    self.in_step = true;
                    return Some(Ok(event));
                }
                // a gap: the store has what is missing, this event included
                Ok(_) | Err(RecvError::Lagged(_)) => {
                    self.behind = true;
                    self.in_step = false;
                }
                Err(RecvError::Closed) => return None,
            }
        }
    }

    async fn backfill(&mut self) -> Result<(), RuntimeError> {
        let page = self
            .store
            .list_events(&self.tenant, &self.session, self.last, BACKFILL_PAGE)
            .await
            .map_err(RuntimeError::store("list_events"))?;
        let full = u32::try_from(page.len()).is_ok_and(|n| n >= BACKFILL_PAGE);
        self.behind = full;
        self.ready.extend(page);
        Ok(())
    }
}

/// Only the events of `run` in `events`, ending after its `run.finished`
/// (or the first error).
pub(crate) fn run_events(events: EventStream, run: RunId) -> EventStream {
    futures_util::stream::unfold(Some(events), move |events| {
        let run = run.clone();
        async move {
            let mut events = events?;
            loop {
                match events.next().await? {
                    Ok(event) if event.run.as_ref() != Some(&run) => {}
                    Ok(event) => {
                        let last = event.kind == RunFinished::KIND;
                        return Some((Ok(event), (!last).then_some(events)));
                    }
                    Err(err) => return Some((Err(err), None)),
                }
            }
        }
    })
    .boxed()
}

/// The stream of `session`'s events after `after_seq`. `live` must have been
/// subscribed before this is called.
pub(crate) fn event_stream(
    store: Arc<dyn Store>,
    tenant: TenantId,
    session: SessionId,
    after_seq: u64,
    live: broadcast::Receiver<RunEvent>,
) -> EventStream {
    let cursor = Cursor {
        store,
        tenant,
        session,
        live,
        last: after_seq,
        ready: VecDeque::new(),
        behind: true,
        in_step: true,
        failed: false,
    };
    futures_util::stream::unfold(cursor, |mut cursor| async move {
        let item = cursor.next().await?;
        Some((item, cursor))
    })
    .boxed()
}
