//! A tool batch's results recorded with a checkpoint of the workspace the
//! batch left, in one transaction, so the history never runs ahead of the
//! last checkpoint (what a resume restores, run/resume.rs). Every driver's
//! batches go through here.

use paddock_core::model::Message;
use paddock_core::store::CheckpointReason;

use crate::checkpoints::Checkpointer;
use crate::error::RuntimeError;
use crate::events::CheckpointFailed;
use crate::events::journal::Journal;
use crate::events::pipeline::Pipeline;
use crate::util::error_chain;

/// Appends `message` (a batch's results) and, if the workspace changed
/// since the last checkpoint, a checkpoint of it with it. A checkpoint that
/// fails is reported (`checkpoint.failed`) and the results are appended
/// alone; the run goes on. Without `checkpoints` (a run that takes none)
/// the results are appended alone.
pub(crate) async fn append(
    pipe: &Pipeline,
    journal: &Journal,
    checkpoints: Option<&mut Checkpointer>,
    message: Message,
) -> Result<(), RuntimeError> {
    let Some(checkpoints) = checkpoints else {
        return pipe.append_message(message).await;
    };
    // the batch's invocations and results are on record first
    pipe.barrier().await?;
    let failed = |err: &RuntimeError| {
        tracing::warn!(error = %error_chain(err), "checkpointing the workspace after a tool batch");
        CheckpointFailed {
            reason: CheckpointReason::ToolBatch,
            error: error_chain(err),
        }
    };
    let capture = match checkpoints.capture(CheckpointReason::ToolBatch).await {
        Ok(None) => return pipe.append_message(message).await,
        Ok(Some(capture)) => capture,
        Err(err) => {
            // on record before the results that run ahead of the last checkpoint
            pipe.emit(&failed(&err)).await?;
            return pipe.append_message(message).await;
        }
    };
    let stored = journal.stored_message(message.clone());
    match checkpoints
        .record_with_message(journal.lease(), &stored, capture)
        .await
    {
        Ok(event) => {
            pipe.emit(&event).await?;
            // past the session's cap, the oldest go (said in an event)
            match checkpoints.prune(journal.lease()).await {
                Ok(Some(pruned)) => pipe.emit(&pruned).await,
                Ok(None) => Ok(()),
                Err(err) => {
                    tracing::warn!(error = %error_chain(&err), "pruning the session's checkpoints");
                    Ok(())
                }
            }
        }
        Err(err) => {
            pipe.emit(&failed(&err)).await?;
            pipe.append_message(message).await
        }
    }
}
