//! A call's result in the shapes the run records it: the transcript's text,
//! the invocation log's JSON and the event's status. Every failure becomes a
//! result the model reads; none ends the run.

use paddock_core::store::ToolStatus;
use serde_json::{Value, json};

use crate::events::CallStatus;
use crate::tools::{Effect, ToolError, ToolOutput};
use crate::util::error_chain;

/// A finished call as the transcript, the log and the event stream see it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settled {
    pub(crate) content: String,
    pub(crate) is_error: bool,
    pub(crate) status: CallStatus,
    /// JSON document kept as the invocation's output.
    pub(crate) output: Value,
    pub(crate) effects: Vec<Effect>,
}

impl Settled {
    pub(crate) fn from_result(result: Result<ToolOutput, ToolError>) -> Self {
        match result {
            Ok(output) => {
                let status = if output.is_error {
                    CallStatus::Failed
                } else {
                    CallStatus::Succeeded
                };
                let record = json!({
                    "content": output.content,
                    "is_error": output.is_error,
                    "data": output.data,
                    "effects": output.effects,
                });
                Self {
                    content: output.content,
                    is_error: output.is_error,
                    status,
                    output: record,
                    effects: output.effects,
                }
            }
            Err(error) => {
                let status = match error {
                    ToolError::Denied { .. } => CallStatus::Denied,
                    _ => CallStatus::Failed,
                };
                Self::refusal(status, error_kind(&error), error_chain(&error))
            }
        }
    }

    /// A call that did not run or failed before producing output.
    pub(crate) fn refusal(status: CallStatus, kind: &str, message: String) -> Self {
        Self {
            output: json!({"content": message, "is_error": true, "error": kind}),
            content: message,
            is_error: true,
            status,
            effects: Vec::new(),
        }
    }

    pub(crate) fn tool_status(&self) -> ToolStatus {
        if self.is_error {
            ToolStatus::Failed
        } else {
            ToolStatus::Succeeded
        }
    }
}

fn error_kind(error: &ToolError) -> &'static str {
    match error {
        ToolError::InvalidArguments { .. } => "invalid_arguments",
        ToolError::Denied { .. } => "denied",
        ToolError::Unknown { .. } => "unknown_tool",
        ToolError::TimedOut { .. } => "timed_out",
        ToolError::Cancelled { .. } => "cancelled",
        ToolError::Guest { .. } => "guest",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_become_error_results_naming_their_kind() {
        let settled = Settled::from_result(Err(ToolError::Denied {
            tool: "write_file".into(),
            reason: "plan mode".into(),
        }));
        assert_eq!(settled.status, CallStatus::Denied);
        assert!(settled.is_error);
        assert_eq!(settled.content, "write_file is not allowed: plan mode");
        assert_eq!(settled.output["error"], "denied");
        assert_eq!(settled.tool_status(), ToolStatus::Failed);
    }

    #[test]
    fn outputs_keep_their_data_and_effects_in_the_log() {
        let mut output = ToolOutput::text("exit 1");
        output.is_error = true;
        output.data = json!({"exit_code": 1});
        let settled = Settled::from_result(Ok(output));
        assert_eq!(settled.status, CallStatus::Failed);
        assert_eq!(settled.output["data"]["exit_code"], 1);
        assert_eq!(settled.output["effects"], json!([]));
    }
}
