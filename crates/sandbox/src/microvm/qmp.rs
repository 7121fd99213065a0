//! QEMU's machine protocol (QMP) on a VM's monitor socket: the few commands
//! that save a VM into a file and load it back. Blocking (the callers run
//! it on the blocking pool); every read is bounded by the socket's timeout.

use std::io::{BufRead, BufReader, IoSlice, Write};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
use serde_json::{Value, json};

/// How long one QMP answer may take.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a migration's progress is asked.
const MIGRATION_POLL: Duration = Duration::from_millis(5);

#[derive(Debug, thiserror::Error)]
pub enum QmpError {
    #[error("connecting to QEMU's monitor {}", path.display())]
    Connect {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("QMP {command}: talking to QEMU")]
    Io {
        command: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("QMP {command}: unreadable answer")]
    Decode {
        command: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("QMP {command}: QEMU refused: {message}")]
    Refused {
        command: &'static str,
        message: String,
    },
    #[error("the VM's migration ended {status}: {detail}")]
    Migration { status: String, detail: String },
    #[error("the VM's migration did not finish within {0:?}")]
    MigrationTimeout(Duration),
}

/// One QMP session, past its capabilities negotiation.
#[derive(Debug)]
pub(super) struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Qmp {
    /// Connects (retrying until `within` while QEMU has not made its socket
    /// yet) and leaves the greeting's negotiation mode.
    pub fn connect(path: &Path, within: Duration) -> Result<Self, QmpError> {
        let deadline = Instant::now() + within;
        let stream = loop {
            match UnixStream::connect(path) {
                Ok(stream) => break stream,
                Err(e) if Instant::now() < deadline && retryable(&e) => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(source) => {
                    return Err(QmpError::Connect {
                        path: path.to_path_buf(),
                        source,
                    });
                }
            }
        };
        let io = |source| QmpError::Io {
            command: "greeting",
            source,
        };
        stream.set_read_timeout(Some(ANSWER_TIMEOUT)).map_err(io)?;
        let writer = stream.try_clone().map_err(io)?;
        let mut qmp = Self {
            reader: BufReader::new(stream),
            writer,
        };
        qmp.read_line("greeting")?;
        qmp.execute("qmp_capabilities", None)?;
        Ok(qmp)
    }

    /// Runs `command` and returns its `return` value.
    pub fn execute(
        &mut self,
        command: &'static str,
        arguments: Option<Value>,
    ) -> Result<Value, QmpError> {
        let line = request_line(command, arguments);
        self.writer
            .write_all(line.as_bytes())
            .map_err(|source| QmpError::Io { command, source })?;
        self.answer(command)
    }

    /// `getfd`: hands QEMU `fd` under `name` (for a `fd:<name>` migration).
    pub fn send_fd(&mut self, name: &str, fd: BorrowedFd<'_>) -> Result<(), QmpError> {
        let command = "getfd";
        let line = request_line(command, Some(json!({ "fdname": name })));
        let fds = [fd.as_raw_fd()];
        sendmsg::<()>(
            self.writer.as_raw_fd(),
            &[IoSlice::new(line.as_bytes())],
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::empty(),
            None,
        )
        .map_err(|e| QmpError::Io {
            command,
            source: e.into(),
        })?;
        self.answer(command).map(drop)
    }

    /// Waits until the running migration (either way) completed.
    pub fn wait_migration(&mut self, within: Duration) -> Result<(), QmpError> {
        let deadline = Instant::now() + within;
        loop {
            let info = self.execute("query-migrate", None)?;
            let status = info["status"].as_str().unwrap_or("none").to_owned();
            match status.as_str() {
                "completed" => return Ok(()),
                "failed" | "cancelled" | "none" => {
                    let detail = info["error-desc"]
                        .as_str()
                        .unwrap_or("no reason given")
                        .to_owned();
                    return Err(QmpError::Migration { status, detail });
                }
                _ if Instant::now() >= deadline => {
                    return Err(QmpError::MigrationTimeout(within));
                }
                _ => std::thread::sleep(MIGRATION_POLL),
            }
        }
    }

    /// The answer to `command`, past the events QEMU sends meanwhile.
    fn answer(&mut self, command: &'static str) -> Result<Value, QmpError> {
        loop {
            let message = self.read_line(command)?;
            if let Some(value) = message.get("return") {
                return Ok(value.clone());
            }
            if let Some(error) = message.get("error") {
                return Err(QmpError::Refused {
                    command,
                    message: error["desc"].as_str().unwrap_or("no reason").to_owned(),
                });
            }
        }
    }

    fn read_line(&mut self, command: &'static str) -> Result<Value, QmpError> {
        let mut line = String::new();
        let read = self
            .reader
            .read_line(&mut line)
            .map_err(|source| QmpError::Io { command, source })?;
        if read == 0 {
            return Err(QmpError::Io {
                command,
                source: std::io::ErrorKind::UnexpectedEof.into(),
            });
        }
        serde_json::from_str(&line).map_err(|source| QmpError::Decode { command, source })
    }
}

fn request_line(command: &str, arguments: Option<Value>) -> String {
    let request = match arguments {
        Some(arguments) => json!({ "execute": command, "arguments": arguments }),
        None => json!({ "execute": command }),
    };
    format!("{request}\n")
}

/// QEMU has not made (or not yet listens on) its socket.
fn retryable(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_one_json_line_each() {
        assert_eq!(request_line("stop", None), "{\"execute\":\"stop\"}\n");
        let line = request_line("migrate", Some(json!({ "uri": "fd:state" })));
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["arguments"]["uri"], "fd:state");
        assert!(line.ends_with('\n') && !line.trim_end().contains('\n'));
    }
}
