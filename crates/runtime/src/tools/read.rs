//! `read_file`: a file's text with line numbers, a line range, and a cap on
//! how much comes back.

use paddock_proto::FsPath;
use std::fmt::Write;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::{contract_for, invalid, parse_args};
use super::lines::{LineSelector, Stop};
use super::output::{guest, refusal_as_result};
use super::{
    Access, PathArgument, Replay, Role, Tool, ToolContext, ToolContract, ToolError, ToolOutput,
};

pub(crate) const NAME: &str = "read_file";

/// Bytes asked of the guest per request.
const CHUNK: u64 = 1 << 20;
/// Bytes of a file read at most to reach the asked lines.
const MAX_SCAN: u64 = 64 << 20;
/// Rendered text returned per call: what a context can take in one go.
pub(crate) const OUTPUT_CAP: usize = 48 << 10;
/// Bytes of one line shown; minified files would otherwise fill the cap with one line.
const LINE_CAP: usize = 2000;
/// Bytes looked at to call a file binary (it holds a NUL).
const BINARY_SNIFF: usize = 8192;

/// Read a text file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// File to read, relative to /workspace.
    path: String,
    /// First line to show (1-based). Default 1.
    #[schemars(range(min = 1))]
    #[serde(default)]
    start_line: Option<u64>,
    /// Last line to show (inclusive). Default: to the end, within the output cap.
    #[schemars(range(min = 1))]
    #[serde(default)]
    end_line: Option<u64>,
}

#[derive(Debug)]
pub struct ReadFile {
    contract: ToolContract,
}

impl ReadFile {
    pub fn new() -> Self {
        Self {
            contract: contract_for::<Args>(
                NAME,
                "Read a text file under /workspace. Each line is prefixed with its number and a \
                 tab (the prefix is not part of the file). Long files are cut at about 48 KiB \
                 with a note saying which start_line to continue from.",
                Role::Workspace,
                Access::ReadOnly,
                Replay::Safe,
                Duration::from_secs(30),
            )
            .with_path_argument(PathArgument::Reads("path")),
        }
    }
}

impl Default for ReadFile {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for ReadFile {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        refusal_as_result(self.run(ctx, arguments).await)
    }
}

impl ReadFile {
    async fn run(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(NAME, arguments)?;
        let start = args.start_line.unwrap_or(1);
        if start == 0 || args.end_line == Some(0) {
            return Err(invalid(NAME, "line numbers start at 1"));
        }
        if let Some(end) = args.end_line.filter(|end| *end < start) {
            return Err(invalid(
                NAME,
                format!("end_line {end} is before start_line {start}"),
            ));
        }
        let path = args.path;
        let mut lines = LineSelector::new(start, args.end_line, OUTPUT_CAP, LINE_CAP);
        let mut offset = 0;
        let (size, at_end) = loop {
            let chunk = ctx
                .guest
                .file_read(&FsPath::from(&path), offset, Some(CHUNK))
                .await
                .map_err(guest(NAME))?;
            let size = chunk.size;
            if offset == 0 && chunk.data[..chunk.data.len().min(BINARY_SNIFF)].contains(&0) {
                return Ok(ToolOutput {
                    content: format!("{path} is a binary file ({size} bytes); not shown"),
                    is_error: false,
                    data: json!({ "path": path, "size": size, "binary": true }),
                    effects: Vec::new(),
                });
            }
            offset += chunk.data.len() as u64;
            // No data means the end even if the file shrank while it was read.
            let at_end = chunk.data.is_empty() || offset >= size;
            if lines.feed(&chunk.data) {
                break (size, at_end);
            }
            if at_end {
                lines.finish();
                break (size, true);
            }
            if offset >= MAX_SCAN {
                break (size, false);
            }
        };
        Ok(render(&path, size, at_end, start, lines))
    }
}

fn render(path: &str, size: u64, at_end: bool, start: u64, lines: LineSelector) -> ToolOutput {
    let stop = lines.stop();
    let total = lines.total_lines();
    let shown = lines.shown();
    let mut content = lines.into_text();
    let mut is_error = false;
    match (shown, stop) {
        (None, _) if size == 0 => content.push_str("(empty file)"),
        (None, _) if at_end => {
            is_error = true;
            content = format!("start_line {start} is past the end of {path} ({total} lines)");
        }
        (None, _) => {
            is_error = true;
            content = format!(
                "start_line {start} was not reached in the first {} MiB of {path}; \
                 use run_command with sed, head or tail for very large files",
                MAX_SCAN >> 20
            );
        }
        (Some((_, last)), Some(Stop::Cap { next })) => {
            let of = if at_end {
                format!("{total} lines, ")
            } else {
                String::new()
            };
            let _ = write!(
                content,
                "[output cap reached after line {last} ({of}{size} bytes); \
                 continue with start_line={next}]"
            );
        }
        (Some((first, last)), _) if !at_end => {
            let _ = write!(content, "[lines {first}-{last}; {path} continues]");
        }
        (Some((first, last)), _) if first > 1 || last < total => {
            let _ = write!(content, "[lines {first}-{last} of {total}]");
        }
        (Some(_), _) => {}
    }
    let truncated = matches!(stop, Some(Stop::Cap { .. }));
    ToolOutput {
        content,
        is_error,
        data: json!({
            "path": path,
            "size": size,
            "first_line": shown.map(|(first, _)| first),
            "last_line": shown.map(|(_, last)| last),
            "truncated": truncated,
        }),
        effects: Vec::new(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testing::offline_context;

    #[tokio::test]
    async fn bad_ranges_are_refused_before_any_guest_call() {
        let tool = ReadFile::new();
        let ctx = offline_context();
        for (args, says) in [
            (json!({"path": "a", "start_line": 0}), "start at 1"),
            (
                json!({"path": "a", "start_line": 5, "end_line": 2}),
                "before start_line",
            ),
            (json!({"path": "a", "limit": 5}), "unknown field `limit`"),
            (json!({"start_line": 1}), "missing field `path`"),
        ] {
            let err = tool.call(&ctx, args).await.unwrap_err();
            assert!(
                matches!(&err, ToolError::InvalidArguments { reason, .. } if reason.contains(says)),
                "{err:?}"
            );
        }
    }

    #[test]
    fn the_schema_requires_only_the_path() {
        let tool = ReadFile::new();
        let schema = &tool.contract().parameters;
        assert_eq!(schema["required"], json!(["path"]));
        assert_eq!(schema["properties"]["start_line"]["minimum"], 1);
    }
}
