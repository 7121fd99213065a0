//! `edit_file`: exact text replacement. The old text must occur exactly once
//! (unless every occurrence is asked for), so an edit never lands somewhere
//! the agent did not mean.

use paddock_proto::FsPath;
use std::time::Duration;

use async_trait::async_trait;
use paddock_core::sandbox::WriteOptions;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::{contract_for, invalid, parse_args};
use super::output::{guest, refusal_as_result};
use super::paths;
use super::{
    Access, Effect, PathArgument, Replay, Role, Tool, ToolContext, ToolContract, ToolError,
    ToolOutput,
};

pub(crate) const NAME: &str = "edit_file";

/// Largest file edited; bigger ones are rewritten with write_file or a command.
const MAX_EDIT_BYTES: u64 = 8 << 20;
/// Line numbers listed when old_string is ambiguous.
const LIST_LINES: usize = 10;

/// Replace text in a file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// File to edit, relative to /workspace.
    path: String,
    /// Exact text to replace, including whitespace and indentation. It must
    /// occur exactly once unless replace_all is set; add surrounding lines to
    /// make it unique.
    old_string: String,
    /// Text to put in its place.
    new_string: String,
    /// Replace every occurrence instead of requiring exactly one.
    #[serde(default)]
    replace_all: bool,
}

#[derive(Debug)]
pub struct EditFile {
    contract: ToolContract,
}

impl EditFile {
    pub fn new() -> Self {
        Self {
            contract: contract_for::<Args>(
                NAME,
                "Replace exact text in an existing file. old_string must match the file \
                 exactly (whitespace included, without read_file's line-number prefixes) and \
                 occur once, unless replace_all is set.",
                Role::Workspace,
                Access::Mutating,
                // Run again after success, the old text may be gone (an error) or
                // occur once more inside the new text (a second, wrong edit).
                Replay::Never,
                Duration::from_secs(30),
            )
            .with_path_argument(PathArgument::Writes("path")),
        }
    }
}

impl Default for EditFile {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for EditFile {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        refusal_as_result(self.run(ctx, arguments).await)
    }
}

/// Start offsets of the non-overlapping occurrences of `needle`, left to right.
fn occurrences(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    let mut found = Vec::new();
    let mut at = 0;
    while at + needle.len() <= haystack.len() {
        if haystack[at..].starts_with(needle) {
            found.push(at);
            at += needle.len();
        } else {
            at += 1;
        }
    }
    found
}

fn line_of(data: &[u8], offset: usize) -> usize {
    data[..offset].iter().filter(|b| **b == b'\n').count() + 1
}

fn replace(data: &[u8], at: &[usize], old_len: usize, new: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + at.len() * new.len());
    let mut from = 0;
    for &start in at {
        out.extend_from_slice(&data[from..start]);
        out.extend_from_slice(new);
        from = start + old_len;
    }
    out.extend_from_slice(&data[from..]);
    out
}

impl EditFile {
    async fn run(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(NAME, arguments)?;
        if args.old_string.is_empty() {
            return Err(invalid(
                NAME,
                "old_string is empty; use write_file to create a file",
            ));
        }
        if args.old_string == args.new_string {
            return Err(invalid(NAME, "old_string and new_string are the same"));
        }
        let path = paths::normalize(&args.path).map_err(|e| invalid(NAME, e.to_string()))?;
        let file = ctx
            .guest
            .file_read(&FsPath::from(&path), 0, Some(MAX_EDIT_BYTES + 1))
            .await
            .map_err(guest(NAME))?;
        if file.size > MAX_EDIT_BYTES {
            return Err(invalid(
                NAME,
                format!(
                    "{path} has {} bytes; edit_file handles files up to {} MiB",
                    file.size,
                    MAX_EDIT_BYTES >> 20
                ),
            ));
        }
        let old = args.old_string.as_bytes();
        let found = occurrences(&file.data, old);
        let lines: Vec<usize> = found.iter().map(|at| line_of(&file.data, *at)).collect();
        match found.len() {
            0 => {
                return Err(invalid(
                    NAME,
                    format!(
                        "old_string was not found in {path}; read the file again and copy the \
                         text exactly, whitespace included"
                    ),
                ));
            }
            1 => {}
            n if !args.replace_all => {
                let shown: Vec<String> = lines
                    .iter()
                    .take(LIST_LINES)
                    .map(usize::to_string)
                    .collect();
                return Err(invalid(
                    NAME,
                    format!(
                        "old_string occurs {n} times in {path} (at lines {}); include more \
                         surrounding text to pick one, or set replace_all",
                        shown.join(", ")
                    ),
                ));
            }
            _ => {}
        }
        let new = replace(&file.data, &found, old.len(), args.new_string.as_bytes());
        // Mode None keeps the file's permission bits.
        ctx.guest
            .file_write(&FsPath::from(&path), &new, WriteOptions::default())
            .await
            .map_err(guest(NAME))?;
        let count = found.len();
        tracing::debug!(run_id = %ctx.run, session_id = %ctx.session, tool = NAME, path, count, "file edited");
        let noun = if count == 1 {
            "occurrence"
        } else {
            "occurrences"
        };
        let at: Vec<String> = lines
            .iter()
            .take(LIST_LINES)
            .map(usize::to_string)
            .collect();
        Ok(ToolOutput {
            content: format!(
                "replaced {count} {noun} in {path} (at line {})",
                at.join(", ")
            ),
            is_error: false,
            data: json!({ "path": path, "replacements": count, "lines": lines }),
            effects: vec![Effect::FilesChanged { paths: vec![path] }],
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testing::offline_context;

    #[test]
    fn occurrences_do_not_overlap() {
        assert_eq!(occurrences(b"aaaa", b"aa"), [0, 2]);
        assert_eq!(occurrences(b"abcabc", b"bc"), [1, 4]);
        assert!(occurrences(b"ab", b"abc").is_empty());
    }

    #[test]
    fn replace_swaps_each_occurrence_and_keeps_the_rest() {
        let data = b"x = 1\ny = 1\n";
        let at = occurrences(data, b"1");
        assert_eq!(replace(data, &at, 1, b"22"), b"x = 22\ny = 22\n");
        assert_eq!(line_of(data, at[1]), 2);
    }

    #[tokio::test]
    async fn empty_or_no_op_edits_are_refused() {
        let tool = EditFile::new();
        for (args, says) in [
            (
                json!({"path": "a", "old_string": "", "new_string": "x"}),
                "old_string is empty",
            ),
            (
                json!({"path": "a", "old_string": "x", "new_string": "x"}),
                "are the same",
            ),
            (
                json!({"path": "a", "old": "x", "new_string": "y"}),
                "unknown field `old`",
            ),
        ] {
            let err = tool.call(&offline_context(), args).await.unwrap_err();
            assert!(err.to_string().contains(says), "{err}");
        }
    }
}
