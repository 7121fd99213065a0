//! Where a command's output goes: through to ours, or into memory for --json.

use paddock_proto::OutputStream;
use tokio::io::AsyncWriteExt;

#[derive(Debug)]
pub enum OutputSink {
    PassThrough {
        stdout: tokio::io::Stdout,
        stderr: tokio::io::Stderr,
    },
    Capture {
        stdout: Vec<u8>,
        stderr: Vec<u8>,
    },
}

impl OutputSink {
    pub fn new(capture: bool) -> Self {
        if capture {
            OutputSink::Capture {
                stdout: Vec::new(),
                stderr: Vec::new(),
            }
        } else {
            OutputSink::PassThrough {
                stdout: tokio::io::stdout(),
                stderr: tokio::io::stderr(),
            }
        }
    }

    /// Writes (and flushes) one chunk; an error means our side is closed.
    pub async fn write(&mut self, stream: OutputStream, data: &[u8]) -> std::io::Result<()> {
        match (self, stream) {
            (OutputSink::PassThrough { stdout, .. }, OutputStream::Stdout) => {
                stdout.write_all(data).await?;
                stdout.flush().await
            }
            (OutputSink::PassThrough { stderr, .. }, OutputStream::Stderr) => {
                stderr.write_all(data).await?;
                stderr.flush().await
            }
            (OutputSink::Capture { stdout, .. }, OutputStream::Stdout) => {
                stdout.extend_from_slice(data);
                Ok(())
            }
            (OutputSink::Capture { stderr, .. }, OutputStream::Stderr) => {
                stderr.extend_from_slice(data);
                Ok(())
            }
        }
    }

    /// The captured output as (stdout, stderr), lossy UTF-8; empty when passed through.
    pub fn captured(&self) -> (String, String) {
        match self {
            OutputSink::Capture { stdout, stderr } => (
                String::from_utf8_lossy(stdout).into_owned(),
                String::from_utf8_lossy(stderr).into_owned(),
            ),
            OutputSink::PassThrough { .. } => (String::new(), String::new()),
        }
    }
}
