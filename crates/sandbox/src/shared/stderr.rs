//! The guest's stderr: forwarded as logs, its last lines kept for error messages.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use paddock_core::sandbox::SandboxId;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::task::JoinHandle;

/// Lines kept for error messages.
const TAIL_LINES: usize = 20;
/// Longest line kept or logged; the rest is cut.
const MAX_LINE: usize = 2000;

/// The last lines the guest wrote to stderr.
#[derive(Debug, Clone, Default)]
pub(crate) struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
}

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The kept lines joined by "; ".
    /// Keeps one line (cut at the longest kept length).
    pub(crate) fn push_line(&self, line: &str) {
        self.push(truncate(line, MAX_LINE).to_owned());
    }

    pub(crate) fn joined(&self) -> String {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Reads `stderr` to its end on a task, logging each line with the sandbox id.
pub(crate) fn forward<R>(stderr: R, id: SandboxId, tail: StderrTail) -> JoinHandle<()>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let mut reader = BufReader::new(stderr);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) => break,
                Ok(_) => {}
                Err(err) => {
                    tracing::debug!(sandbox_id = %id, error = %err, "reading guest stderr failed");
                    break;
                }
            }
            let line = String::from_utf8_lossy(&buf);
            let line = truncate(line.trim_end(), MAX_LINE);
            if line.is_empty() {
                continue;
            }
            if line.contains("ERROR") || line.contains("WARN") {
                tracing::warn!(sandbox_id = %id, "guest: {line}");
            } else {
                tracing::debug!(sandbox_id = %id, "guest: {line}");
            }
            tail.push(line.to_owned());
        }
    })
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_the_last_lines_and_survives_invalid_utf8() {
        let mut input = Vec::new();
        for i in 0..30 {
            input.extend_from_slice(format!("line {i}\n").as_bytes());
        }
        input.extend_from_slice(b"bad \xff byte\nno newline at end");
        let tail = StderrTail::default();
        forward(
            std::io::Cursor::new(input),
            SandboxId::parse("sb-t").unwrap(),
            tail.clone(),
        )
        .await
        .unwrap();
        let lines: Vec<String> = tail.lines.lock().unwrap().iter().cloned().collect();
        assert_eq!(lines.len(), TAIL_LINES);
        assert_eq!(lines[0], "line 12");
        assert_eq!(lines[TAIL_LINES - 2], "bad \u{fffd} byte");
        assert_eq!(lines[TAIL_LINES - 1], "no newline at end");
    }

    #[test]
    fn truncates_on_a_char_boundary() {
        assert_eq!(truncate("aé", 2), "a");
        assert_eq!(truncate("abc", 5), "abc");
    }
}
