//! Lines typed into a running interactive `paddock run` (stdin a terminal):
//! each one is sent to the run as a steering message. A thread reads stdin
//! (a blocking read that a tokio task would keep the runtime waiting on at
//! exit); it dies with the process.

use std::io::{BufRead, IsTerminal};

use tokio::sync::mpsc;

/// Lines waiting to be sent; typing faster than this just waits.
const QUEUE: usize = 16;

#[derive(Debug)]
pub struct TypedLines {
    lines: mpsc::Receiver<String>,
}

impl TypedLines {
    /// Reads stdin if it is a terminal; None otherwise (a pipe or a file is
    /// not someone typing).
    pub fn from_terminal() -> Option<Self> {
        if !std::io::stdin().is_terminal() {
            return None;
        }
        let (send, lines) = mpsc::channel(QUEUE);
        let spawned = std::thread::Builder::new()
            .name("paddock-stdin".to_owned())
            .spawn(move || {
                for line in std::io::stdin().lock().lines() {
                    let Ok(line) = line else { break };
                    if line.trim().is_empty() {
                        continue;
                    }
                    if send.blocking_send(line).is_err() {
                        break;
                    }
                }
            });
        match spawned {
            Ok(_) => Some(Self { lines }),
            Err(err) => {
                tracing::warn!(error = %err, "reading typed lines");
                None
            }
        }
    }

    /// The next typed line; None once stdin ended.
    pub async fn next(&mut self) -> Option<String> {
        self.lines.recv().await
    }
}

/// The next line of `typed`, or never when there is none (a `select!` arm).
pub async fn next_line(typed: &mut Option<TypedLines>) -> Option<String> {
    match typed {
        Some(lines) => lines.next().await,
        None => std::future::pending().await,
    }
}
