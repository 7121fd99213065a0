//! The in-process event bus: one broadcast channel per session. Events are
//! published only after the store accepted them, so a subscriber that misses
//! some (it lagged, or subscribed late) finds them in the store.

use std::collections::HashMap;
use std::sync::Mutex;

use paddock_core::ids::SessionId;
use paddock_core::store::RunEvent;
use tokio::sync::broadcast;

/// Events a slow subscriber may fall behind before it has to re-read the store.
const CHANNEL_CAPACITY: usize = 1024;

#[derive(Debug, Default)]
pub(crate) struct EventBus {
    channels: Mutex<HashMap<SessionId, broadcast::Sender<RunEvent>>>,
}

impl EventBus {
    pub(crate) fn subscribe(&self, session: &SessionId) -> broadcast::Receiver<RunEvent> {
        let mut channels = self
            .channels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        channels
            .entry(session.clone())
            .or_insert_with(|| broadcast::channel(CHANNEL_CAPACITY).0)
            .subscribe()
    }

    /// Hands a stored event to the session's live subscribers, if any.
    pub(crate) fn publish(&self, event: &RunEvent) {
        let mut channels = self
            .channels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(sender) = channels.get(&event.session) {
            if sender.receiver_count() == 0 {
                // nobody listens any more: forget the channel
                channels.remove(&event.session);
            } else {
                // an error only means every receiver is gone meanwhile
                let _ = sender.send(event.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_core::ids::TenantId;
    use paddock_core::store::Timestamp;

    fn event(session: &SessionId, seq: u64) -> RunEvent {
        RunEvent {
            tenant: TenantId::parse("t").unwrap(),
            session: session.clone(),
            seq,
            run: None,
            kind: "progress".into(),
            payload: "{}".into(),
            created_at: Timestamp::from_millis(0),
        }
    }

    #[test]
    fn subscribers_get_only_their_sessions_events() {
        let bus = EventBus::default();
        let (a, b) = (SessionId::generate(), SessionId::generate());
        let mut rx_a = bus.subscribe(&a);
        bus.publish(&event(&b, 1));
        bus.publish(&event(&a, 1));
        assert_eq!(rx_a.try_recv().map(|e| e.session), Ok(a));
        assert!(rx_a.try_recv().is_err());
    }

    #[test]
    fn channels_without_subscribers_are_dropped() {
        let bus = EventBus::default();
        let session = SessionId::generate();
        drop(bus.subscribe(&session));
        bus.publish(&event(&session, 1));
        assert!(bus.channels.lock().unwrap().is_empty());
    }
}
