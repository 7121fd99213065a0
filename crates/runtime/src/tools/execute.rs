//! Running one call: the policy first, then the tool under its contract's
//! timeout and the context's cancellation, inside a span that names the run.

use tracing::Instrument;

use serde_json::Value;

use super::{Policy, Tool, ToolContext, ToolError, ToolOutput};

/// Checks the call against the context's policy and runs it. A call that
/// outlives its contract's timeout is dropped (dropping a running command
/// kills its process group) and reported as [`ToolError::TimedOut`]; one
/// whose context is cancelled as [`ToolError::Cancelled`]. The context's
/// token is only watched, never cancelled here: give each call a child
/// token if a timeout should cancel more than the call.
pub async fn execute(
    tool: &dyn Tool,
    ctx: &ToolContext,
    arguments: Value,
) -> Result<ToolOutput, ToolError> {
    let contract = tool.contract();
    let name = contract.name;
    let span = tracing::info_span!(
        "tool_call",
        run_id = %ctx.run,
        session_id = %ctx.session,
        tool = name
    );
    async move {
        if let Err(error) = Policy::for_context(ctx).check(contract, &arguments) {
            tracing::info!(%error, "tool call refused by policy");
            return Err(error);
        }
        let result = tokio::select! {
            () = ctx.cancel.cancelled() => Err(ToolError::Cancelled { tool: name.to_owned() }),
            result = tokio::time::timeout(contract.timeout, tool.call(ctx, arguments)) => {
                result.unwrap_or_else(|_| Err(ToolError::TimedOut {
                    tool: name.to_owned(),
                    timeout: contract.timeout,
                }))
            }
        };
        match &result {
            Ok(output) => tracing::debug!(is_error = output.is_error, "tool call finished"),
            Err(error) => tracing::debug!(%error, "tool call failed"),
        }
        result
    }
    .instrument(span)
    .await
}
