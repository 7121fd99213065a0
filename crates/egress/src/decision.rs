//! What the proxy decided for each connection ([`EgressDecision`], shared
//! with the API): reported to the backend over a bounded channel.

pub use paddock_proto::EgressDecision;

/// How many decisions wait for the backend before new ones are dropped
/// (counted in the log, never blocking a connection).
pub const DECISION_QUEUE: usize = 1024;
