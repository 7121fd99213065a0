//! Long-lived streams open at once, per tenant (`http.max_streams_per_tenant`,
//! over all of the tenant's tokens). A stream stays open as long as its
//! client reads (keep-alives keep its connection from going idle), so
//! without a cap one tenant could hold any number of them. What counts: a
//! session's or a run's event stream, a process's output stream, and a
//! streamed exec (open until its command ends, which may be never). The
//! slot goes with the response body: when the stream ends or its client
//! goes away, hyper drops the body and the slot is free again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use futures_util::{Stream, StreamExt};
use paddock_core::ids::TenantId;

use super::ApiError;

#[derive(Debug)]
pub struct StreamSlots {
    per_tenant: usize,
    open: Mutex<HashMap<TenantId, usize>>,
}

/// One open stream's place; dropping it frees the place.
#[derive(Debug)]
pub(super) struct StreamSlot {
    slots: Arc<StreamSlots>,
    tenant: TenantId,
}

impl StreamSlots {
    pub fn new(per_tenant: usize) -> Self {
        Self {
            per_tenant: per_tenant.max(1),
            open: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TenantId, usize>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for one more of `tenant`'s streams, or 429 `too_many_streams`.
    pub(super) fn take(self: &Arc<Self>, tenant: &TenantId) -> Result<StreamSlot, ApiError> {
        let mut open = self.lock();
        let mine = open.entry(tenant.clone()).or_insert(0);
        if *mine >= self.per_tenant {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_streams",
                format!(
                    "this tenant has {} streams open (event streams, process output streams and \
                     streamed execs), the most it may (http.max_streams_per_tenant = {}); close \
                     one first",
                    *mine, self.per_tenant
                ),
            ));
        }
        *mine += 1;
        Ok(StreamSlot {
            slots: self.clone(),
            tenant: tenant.clone(),
        })
    }

    #[cfg(test)]
    fn open(&self, tenant: &TenantId) -> usize {
        self.lock().get(tenant).copied().unwrap_or(0)
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.slots.lock();
        if let Some(mine) = open.get_mut(&self.tenant) {
            *mine = mine.saturating_sub(1);
            if *mine == 0 {
                open.remove(&self.tenant);
            }
        }
    }
}

/// `stream`, holding `slot` until it is dropped.
pub(super) fn holding<S: Stream>(stream: S, slot: StreamSlot) -> impl Stream<Item = S::Item> {
    stream.map(move |item| {
        let _held = &slot;
        item
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_tenant_holds_at_most_its_cap_until_a_stream_goes() {
        let slots = Arc::new(StreamSlots::new(2));
        let abuse = TenantId::parse("abuse").unwrap();
        let victim = TenantId::parse("victim").unwrap();
        let first = holding(
            futures_util::stream::pending::<()>(),
            slots.take(&abuse).unwrap(),
        );
        let second = slots.take(&abuse).unwrap();
        let refused = slots.take(&abuse).unwrap_err();
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.code, "too_many_streams");
        assert!(
            refused.message.contains("max_streams_per_tenant = 2"),
            "{}",
            refused.message
        );
        // Another tenant has its own places.
        let _theirs = slots.take(&victim).unwrap();
        // A stream's body dropped (its client went away) frees its place.
        drop(first);
        assert_eq!(slots.open(&abuse), 1);
        let ended = holding(
            futures_util::stream::iter([1, 2]),
            slots.take(&abuse).unwrap(),
        );
        assert_eq!(ended.collect::<Vec<_>>().await, [1, 2]);
        drop(second);
        assert_eq!(slots.open(&abuse), 0);
    }
}
