//! The attached stream of a container as the guest connection: the
//! engine multiplexes the guest's stdout (the protocol) and stderr (its
//! log) on one stream; stdout goes into a pipe the client reads, stderr
//! into the sandbox's log tail.

use std::pin::Pin;

use bollard::container::LogOutput;
use bollard::query_parameters::AttachContainerOptions;
use futures_util::{Stream, StreamExt};
use paddock_core::sandbox::SandboxId;
use tokio::io::{AsyncWriteExt, DuplexStream};
use tokio::task::JoinHandle;

use crate::shared::stderr::StderrTail;

/// Bytes buffered between the engine's stream and the client's reader.
const PIPE_BYTES: usize = 256 << 10;

/// Attaching to the guest's stdio: a stream of stdin, stdout and stderr.
pub(super) fn attach_options() -> AttachContainerOptions {
    AttachContainerOptions {
        stream: true,
        stdin: true,
        stdout: true,
        stderr: true,
        ..AttachContainerOptions::default()
    }
}

/// The guest's stdin on the attached stream.
pub(super) type Input = Pin<Box<dyn tokio::io::AsyncWrite + Send>>;

pub(super) type Output =
    Pin<Box<dyn Stream<Item = Result<LogOutput, bollard::errors::Error>> + Send>>;

/// Starts the task that splits `output`; returns the guest's stdout as a
/// reader. The task ends with the stream (the container is gone) or when
/// the reader is dropped.
pub(super) fn split(
    id: SandboxId,
    mut output: Output,
    tail: StderrTail,
) -> (DuplexStream, JoinHandle<()>) {
    let (mut to_client, from_guest) = tokio::io::duplex(PIPE_BYTES);
    let task = tokio::spawn(async move {
        while let Some(item) = output.next().await {
            match item {
                Ok(LogOutput::StdOut { message }) => {
                    if to_client.write_all(&message).await.is_err() {
                        break;
                    }
                }
                Ok(LogOutput::StdErr { message }) => {
                    let text = String::from_utf8_lossy(&message);
                    for line in text.lines().filter(|l| !l.trim().is_empty()) {
                        tracing::debug!(sandbox_id = %id, line, "guest stderr");
                        tail.push_line(line);
                    }
                }
                Ok(_) => {}
                Err(err) => {
                    tracing::debug!(sandbox_id = %id, error = %err, "container stream ended");
                    break;
                }
            }
        }
        let _ = to_client.shutdown().await;
    });
    (from_guest, task)
}
