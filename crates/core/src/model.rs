//! Model port: the provider-neutral conversation types and the
//! [`ModelProvider`] trait every model adapter (OpenAI-compatible, Anthropic,
//! scripted) implements.
//!
//! A call streams [`ModelEvent`]s: text deltas, tool calls as they form and
//! complete, usage, and a final [`ModelEvent::Done`]. A stream that ends
//! without `Done` was cut ([`ModelError::StreamCut`]). [`collect`] and
//! [`ResponseAssembler`] turn the events into one [`ModelResponse`].

mod config;
mod endpoint;
mod error;
mod event;
mod message;
mod port;
mod price;
mod profile;

pub use config::{ModelConfig, ProviderKind};
pub use endpoint::{api_root, same_api};
pub use error::{BoxError, ModelError};
pub use event::{ModelEvent, ModelResponse, ResponseAssembler, StopReason, Usage};
pub use message::{
    ContentPart, Message, ModelRequest, RequestPurpose, Role, ToolCall, ToolResult, ToolSchema,
    estimate_tokens,
};
pub use port::{ModelProvider, ModelStream, collect};
pub use price::{
    MICRO_USD_PER_USD, Price, PriceError, Prices, Usd, dollars_to_micro, usd_to_micro,
};
pub use profile::{AFTER_COMPACTION_PERCENT, COMPACT_AT_PERCENT, ContextProfile, TAIL_PERCENT};
