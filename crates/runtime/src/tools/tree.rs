//! `workspace_tree`: an indented listing of the workspace, bounded in depth
//! and entries, that leaves out what is large, generated or internal.

use std::time::Duration;

use async_trait::async_trait;
use paddock_proto::{DirEntry, FileKind, FsPath};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::{bounded, contract_for, parse_args};
use super::output::{guest, refusal_as_result};
use super::{
    Access, PathArgument, Replay, Role, Tool, ToolContext, ToolContract, ToolError, ToolOutput,
};

pub(crate) const NAME: &str = "workspace_tree";

const DEFAULT_DEPTH: u64 = 3;
const MAX_DEPTH: u64 = 12;
const DEFAULT_ENTRIES: u64 = 400;
const MAX_ENTRIES: u64 = 5000;
/// Files at least this big show their size, so the agent can tell before reading.
const SHOW_SIZE_FROM: u64 = 10 << 10;

/// Directories not descended into unless asked: version control internals,
/// dependencies and build output, usually huge and rarely what a task needs.
pub(crate) const SKIPPED_DIRS: &[&str] = &[".git", "node_modules", "target"];

/// List the workspace as an indented tree.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Directory to list, relative to /workspace. Default: the workspace root.
    #[serde(default)]
    path: Option<String>,
    /// Directory levels to descend. Default 3.
    #[schemars(range(min = 1, max = MAX_DEPTH))]
    #[serde(default)]
    max_depth: Option<u64>,
    /// Most entries to list. Default 400.
    #[schemars(range(min = 1, max = MAX_ENTRIES))]
    #[serde(default)]
    max_entries: Option<u64>,
    /// Also descend into .git, node_modules and target.
    #[serde(default)]
    include_skipped: bool,
}

#[derive(Debug)]
pub struct WorkspaceTree {
    contract: ToolContract,
}

impl WorkspaceTree {
    pub fn new() -> Self {
        Self {
            contract: contract_for::<Args>(
                NAME,
                "List files and directories under /workspace as an indented tree (directories \
                 end in '/'). Bounded in depth and entries; .git, node_modules and target are \
                 shown but not descended into unless include_skipped is set.",
                Role::Workspace,
                Access::ReadOnly,
                Replay::Safe,
                Duration::from_secs(30),
            )
            .with_path_argument(PathArgument::Reads("path")),
        }
    }
}

impl Default for WorkspaceTree {
    fn default() -> Self {
        Self::new()
    }
}

/// A directory being listed: its remaining entries, in reverse order so
/// `pop` yields them sorted.
struct Frame {
    path: FsPath,
    depth: u64,
    rest: Vec<DirEntry>,
}

fn sorted_reversed(mut entries: Vec<DirEntry>) -> Vec<DirEntry> {
    entries.sort_by(|a, b| b.name.cmp(&a.name));
    entries
}

#[async_trait]
impl Tool for WorkspaceTree {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        refusal_as_result(self.run(ctx, arguments).await)
    }
}

impl WorkspaceTree {
    async fn run(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(NAME, arguments)?;
        let max_depth = bounded(
            NAME,
            "max_depth",
            args.max_depth,
            DEFAULT_DEPTH,
            (1, MAX_DEPTH),
        )?;
        let max_entries = bounded(
            NAME,
            "max_entries",
            args.max_entries,
            DEFAULT_ENTRIES,
            (1, MAX_ENTRIES),
        )?;
        let root = args.path.unwrap_or_default();
        let top = ctx
            .guest
            .file_list(&FsPath::from(&root))
            .await
            .map_err(guest(NAME))?;

        let mut lines = vec![if root.is_empty() {
            "/workspace/".to_owned()
        } else {
            format!("{}/", root.trim_end_matches('/'))
        }];
        let mut listed: u64 = 0;
        let mut truncated = false;
        let mut stack = vec![Frame {
            path: FsPath::from(root.trim_end_matches('/')),
            depth: 0,
            rest: sorted_reversed(top),
        }];
        while let Some(frame) = stack.last_mut() {
            let Some(entry) = frame.rest.pop() else {
                stack.pop();
                continue;
            };
            if listed == max_entries {
                truncated = true;
                break;
            }
            listed += 1;
            let depth = frame.depth;
            let path = frame.path.join(entry.name.as_bytes());
            let indent = "  ".repeat(usize::try_from(depth + 1).unwrap_or(usize::MAX));
            // a name not in UTF-8 shown with `\xNN` escapes
            let name = entry.name.display();
            match entry.stat.kind {
                FileKind::Dir => {
                    if !args.include_skipped && SKIPPED_DIRS.contains(&name.as_str()) {
                        lines.push(format!("{indent}{name}/  (skipped)"));
                    } else if depth + 1 >= max_depth {
                        lines.push(format!("{indent}{name}/  (not expanded)"));
                    } else {
                        match ctx.guest.file_list(&path).await {
                            Ok(children) => {
                                lines.push(format!("{indent}{name}/"));
                                stack.push(Frame {
                                    path,
                                    depth: depth + 1,
                                    rest: sorted_reversed(children),
                                });
                            }
                            // One unreadable directory should not hide the rest of the tree.
                            Err(error) if error.code().is_some() => {
                                lines.push(format!("{indent}{name}/  (unreadable)"));
                            }
                            Err(error) => return Err(guest(NAME)(error)),
                        }
                    }
                }
                FileKind::Symlink => {
                    let target = entry
                        .stat
                        .link_target
                        .as_ref()
                        .map_or_else(|| "?".to_owned(), FsPath::display);
                    lines.push(format!("{indent}{name} -> {target}"));
                }
                FileKind::File if entry.stat.size >= SHOW_SIZE_FROM => {
                    lines.push(format!("{indent}{name}  ({} KiB)", entry.stat.size >> 10));
                }
                FileKind::File | FileKind::Other => lines.push(format!("{indent}{name}")),
            }
        }
        if truncated {
            lines.push(format!(
                "[stopped after {max_entries} entries; list a subdirectory with path, or raise max_entries]"
            ));
        }
        Ok(ToolOutput {
            content: lines.join("\n"),
            is_error: false,
            data: json!({ "entries": listed, "truncated": truncated }),
            effects: Vec::new(),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_states_the_bounds_the_call_enforces() {
        let tool = WorkspaceTree::new();
        let schema = &tool.contract().parameters;
        assert_eq!(schema["properties"]["max_depth"]["maximum"], MAX_DEPTH);
        assert_eq!(schema["properties"]["max_entries"]["maximum"], MAX_ENTRIES);
        assert_eq!(schema["additionalProperties"], false);
        assert!(schema.get("required").is_none_or(|r| r == &json!([])));
        assert_eq!(tool.contract().access, Access::ReadOnly);
    }
}
