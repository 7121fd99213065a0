//! The [`ModelProvider`] trait.

use std::fmt;
use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use tokio_util::sync::CancellationToken;

use super::error::ModelError;
use super::event::{ModelEvent, ModelResponse, ResponseAssembler};
use super::message::ModelRequest;

/// The events of one model call. After an `Err` item the stream ends; a
/// stream that ends without [`ModelEvent::Done`] was cut.
pub type ModelStream = BoxStream<'static, Result<ModelEvent, ModelError>>;

/// A model endpoint. Object safe: the runtime holds an `Arc<dyn ModelProvider>`.
pub trait ModelProvider: Send + Sync + fmt::Debug {
    /// `provider:model`, for logs and events.
    fn name(&self) -> &str;

    /// Context window of the model in tokens.
    fn context_window(&self) -> u32;

    /// Starts one model call. The request is encoded before this returns, so
    /// the stream borrows nothing. Transient failures (network, 429, 5xx) are
    /// retried inside the stream, but only before its first event was handed
    /// out. Cancelling `cancel` aborts the call promptly: the stream yields
    /// [`ModelError::Cancelled`] and ends.
    fn stream(&self, request: &ModelRequest, cancel: CancellationToken) -> ModelStream;

    /// [`ModelProvider::stream`] collected into one response.
    fn complete(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<ModelResponse, ModelError>> {
        Box::pin(collect(self.stream(request, cancel)))
    }

    /// The provider for another conversation (one more subagent, say). One
    /// that keeps state per conversation (a script's next turn) answers a
    /// copy that starts afresh; the default, None, says this one can be
    /// shared.
    fn fresh_copy(&self) -> Option<Arc<dyn ModelProvider>> {
        None
    }
}

/// Drains a stream into one [`ModelResponse`]; the first error wins.
pub async fn collect(mut stream: ModelStream) -> Result<ModelResponse, ModelError> {
    let mut assembler = ResponseAssembler::new();
    while let Some(event) = stream.next().await {
        assembler.push(event?);
    }
    assembler.finish()
}
