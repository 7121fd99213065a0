//! Small helpers shared by the runtime's modules.

/// An error and its sources joined with ": ", for run errors and events
/// (the model and the user read them; there is no other place to print the chain).
pub(crate) use paddock_proto::error_chain;
