//! A request body as the transport hands it to the router: each piece is
//! charged to the body budget as it arrives, and the body must keep pace.
//! It is cut (the handler sees a read error; the transport answers with the
//! reason instead of the handler's answer) when
//!
//! - a piece does not fit the budget: 503 `busy` (the server's) or 429
//!   `body_budget_exceeded` (the tenant's share);
//! - no piece came for `stall` (`http.body_timeout_secs`): 408 `body_timeout`;
//! - it falls behind its deadline, `grace` (`http.body_timeout_secs`) after
//!   the headers plus one second per `min_rate` bytes received
//!   (`http.body_min_bytes_per_sec`): 408 `body_timeout`. A byte now and then
//!   keeps no body open past the grace, however it is dripped.
//!
//! A body dropped before its end is reported ([`MeteredBody::left_unread`]):
//! hyper then closes the connection after the answer without saying so, and
//! a client that pooled it would send its next request into a closed socket.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use tokio::time::{Instant, Sleep};

use super::ApiError;
use super::body_budget::{Charge, Refused};

/// The pace every request body must keep.
#[derive(Debug, Clone, Copy)]
pub(super) struct BodyPace {
    /// Longest wait for the next piece, and the grace before the rate counts.
    pub stall: Duration,
    /// Bytes per second a body must average once the grace is spent.
    pub min_rate: u64,
}

/// Why the transport cut a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BodyCut {
    Budget(Refused),
    Stalled {
        received: u64,
        declared: Option<u64>,
    },
    TooSlow {
        received: u64,
        declared: Option<u64>,
        elapsed: Duration,
    },
}

/// Where a body records why it was cut, for the transport to answer.
pub(super) type CutSlot = Arc<OnceLock<BodyCut>>;

#[derive(Debug, thiserror::Error)]
pub(super) enum BodyError {
    #[error("reading the request body")]
    Read(#[source] axum::BoxError),
    #[error("request body cut: {0:?}")]
    Cut(BodyCut),
}

pub(super) struct MeteredBody<B = Incoming> {
    inner: B,
    charge: Arc<Charge>,
    cut: CutSlot,
    pace: BodyPace,
    started: Instant,
    last: Instant,
    received: u64,
    timer: Pin<Box<Sleep>>,
    /// Whether the body reached its end.
    ended: bool,
    /// Set when the body is dropped before its end.
    unread: Arc<AtomicBool>,
}

impl<B: Body> MeteredBody<B> {
    pub fn new(inner: B, charge: Arc<Charge>, cut: CutSlot, pace: BodyPace) -> Self {
        let now = Instant::now();
        let mut body = Self {
            inner,
            charge,
            cut,
            pace,
            started: now,
            last: now,
            received: 0,
            timer: Box::pin(tokio::time::sleep_until(now)),
            ended: false,
            unread: Arc::default(),
        };
        body.ended = body.inner.is_end_stream();
        body.rearm();
        body
    }

    /// The earlier of the stall limit and the rate deadline.
    fn deadline(&self) -> Instant {
        let stall = self.last + self.pace.stall;
        if self.pace.min_rate == 0 {
            return stall;
        }
        let earned = Duration::from_secs_f64(self.received as f64 / self.pace.min_rate as f64);
        stall.min(self.started + self.pace.stall + earned)
    }

    fn rearm(&mut self) {
        let deadline = self.deadline();
        self.timer.as_mut().reset(deadline);
    }

    /// A flag that turns true if this body is dropped before its end.
    pub fn left_unread(&self) -> Arc<AtomicBool> {
        self.unread.clone()
    }

    fn declared(&self) -> Option<u64> {
        self.inner.size_hint().exact()
    }

    fn fail(&mut self, cut: BodyCut) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let _ = self.cut.set(cut);
        tracing::debug!(?cut, payer = ?self.charge.payer(), "request body cut");
        Poll::Ready(Some(Err(BodyError::Cut(cut))))
    }
}

impl<B> Body for MeteredBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        if let Some(cut) = this.cut.get().copied() {
            return Poll::Ready(Some(Err(BodyError::Cut(cut))));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    if let Err(refused) = this.charge.add(data.len()) {
                        return this.fail(BodyCut::Budget(refused));
                    }
                    this.received += data.len() as u64;
                    this.last = Instant::now();
                    this.rearm();
                }
                this.ended = this.inner.is_end_stream();
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(err))) => Poll::Ready(Some(Err(BodyError::Read(err.into())))),
            Poll::Ready(None) => {
                this.ended = true;
                Poll::Ready(None)
            }
            Poll::Pending => {
                if this.timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                let now = Instant::now();
                let (received, declared) = (this.received, this.declared());
                let cut = if now >= this.last + this.pace.stall {
                    BodyCut::Stalled { received, declared }
                } else {
                    BodyCut::TooSlow {
                        received,
                        declared,
                        elapsed: now - this.started,
                    }
                };
                this.fail(cut)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B> Drop for MeteredBody<B> {
    fn drop(&mut self) {
        if !self.ended {
            self.unread.store(true, Ordering::Relaxed);
        }
    }
}

impl BodyCut {
    /// The answer a request whose body was cut gets; its connection closes,
    /// since the rest of the body was not read.
    pub fn response(&self, pace: BodyPace) -> Response {
        let of = |received: u64, declared: Option<u64>| match declared {
            Some(total) => format!("{received} of {total} bytes"),
            None => format!("{received} bytes"),
        };
        let rule = format!(
            "a body must keep coming (a piece at least every {} s) and arrive within {} s plus 1 s \
             per {} bytes (http.body_timeout_secs, http.body_min_bytes_per_sec)",
            pace.stall.as_secs_f64(),
            pace.stall.as_secs_f64(),
            pace.min_rate
        );
        let (error, retry) = match *self {
            BodyCut::Budget(Refused::Server { limit }) => (
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "busy",
                    format!(
                        "the server holds as many request bodies as it may ({limit} bytes, \
                         http.max_body_memory_bytes); retry shortly"
                    ),
                ),
                true,
            ),
            BodyCut::Budget(Refused::Tenant { limit }) => (
                ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "body_budget_exceeded",
                    format!(
                        "this tenant's requests in progress hold {limit} bytes of request \
                         bodies, its share (http.max_body_memory_per_tenant_bytes); retry when \
                         they are answered"
                    ),
                ),
                true,
            ),
            BodyCut::Stalled { received, declared } => (
                ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "body_timeout",
                    format!(
                        "the request body stopped coming after {}; {rule}",
                        of(received, declared)
                    ),
                ),
                false,
            ),
            BodyCut::TooSlow {
                received,
                declared,
                elapsed,
            } => (
                ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "body_timeout",
                    format!(
                        "the request body came too slowly: {} in {:.1} s; {rule}",
                        of(received, declared),
                        elapsed.as_secs_f64()
                    ),
                ),
                false,
            ),
        };
        let mut response = error.into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        if retry {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        super::headers::harden(response)
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use http_body_util::BodyExt;
    use tokio::sync::mpsc;

    use super::*;
    use crate::http::body_budget::BodyBudget;

    /// A body fed piece by piece from the test.
    struct Fed(mpsc::Receiver<Bytes>);

    impl Body for Fed {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            self.0
                .poll_recv(cx)
                .map(|piece| piece.map(|b| Ok(Frame::data(b))))
        }
    }

    const PACE: BodyPace = BodyPace {
        stall: Duration::from_secs(2),
        min_rate: 100,
    };

    fn metered(
        total: usize,
    ) -> (
        mpsc::Sender<Bytes>,
        MeteredBody<Fed>,
        CutSlot,
        Arc<BodyBudget>,
    ) {
        let (tx, rx) = mpsc::channel(8);
        let budget = Arc::new(BodyBudget::new(total, total, usize::MAX));
        let charge = Arc::new(Charge::new(budget.clone(), None));
        let cut: CutSlot = Arc::default();
        let body = MeteredBody::new(Fed(rx), charge, cut.clone(), PACE);
        (tx, body, cut, budget)
    }

    /// A byte every second never stalls, yet the body is cut once the grace
    /// (2 s) plus 1 s per 100 bytes is spent.
    #[tokio::test(start_paused = true)]
    async fn a_dripped_body_is_cut_after_its_grace() {
        let (tx, mut body, cut, _) = metered(1000);
        let started = Instant::now();
        tokio::spawn(async move {
            loop {
                if tx.send(Bytes::from_static(b"x")).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        let mut received = 0;
        let error = loop {
            match body.frame().await {
                Some(Ok(_)) => received += 1,
                Some(Err(err)) => break err,
                None => panic!("the body ended"),
            }
        };
        let took = started.elapsed();
        assert!(
            matches!(error, BodyError::Cut(BodyCut::TooSlow { .. })),
            "{error:?}"
        );
        assert_eq!(received, 3, "bytes at 0, 1 and 2 s");
        // 2 s of grace + 3 bytes at 100 bytes/s: 2.03 s.
        assert!(
            took >= Duration::from_millis(2030) && took < Duration::from_millis(2100),
            "{took:?}"
        );
        assert!(matches!(
            cut.get(),
            Some(BodyCut::TooSlow { received: 3, .. })
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_stops_is_cut_after_the_stall_limit() {
        let (tx, mut body, cut, _) = metered(100_000);
        // 1000 bytes earn 10 s past the grace; the stall limit comes first.
        tx.send(Bytes::from(vec![b'x'; 1000])).await.unwrap();
        assert!(body.frame().await.unwrap().is_ok());
        let started = Instant::now();
        let error = body.frame().await.unwrap().unwrap_err();
        assert!(
            matches!(
                error,
                BodyError::Cut(BodyCut::Stalled { received: 1000, .. })
            ),
            "{error:?}"
        );
        assert_eq!(started.elapsed(), Duration::from_secs(2));
        let response = cut.get().unwrap().response(PACE);
        assert_eq!(response.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(response.headers()[header::CONNECTION], "close");
        drop(tx);
    }

    /// A body that keeps its pace arrives whole; its charge is held until
    /// the charge drops.
    #[tokio::test(start_paused = true)]
    async fn a_body_at_pace_arrives_and_one_past_the_budget_is_refused() {
        let (tx, body, cut, budget) = metered(500);
        tokio::spawn(async move {
            for _ in 0..4 {
                tx.send(Bytes::from(vec![b'x'; 100])).await.unwrap();
                tokio::time::sleep(Duration::from_millis(900)).await;
            }
        });
        let bytes = body.collect().await.unwrap().to_bytes();
        assert_eq!(bytes.len(), 400);
        assert!(cut.get().is_none());

        let (tx, mut body, cut, _) = metered(150);
        tx.send(Bytes::from(vec![b'x'; 100])).await.unwrap();
        tx.send(Bytes::from(vec![b'x'; 100])).await.unwrap();
        assert!(body.frame().await.unwrap().is_ok());
        assert!(body.frame().await.unwrap().is_err());
        let response = cut.get().unwrap().response(PACE);
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        drop(budget);
    }
}
