//! `search`: find files by name glob and/or lines by literal text, through
//! the guest's search (which never follows symlinks).

use std::fmt::Write;
use std::time::Duration;

use async_trait::async_trait;
use paddock_proto::{SearchMatch, SearchSpec};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::{bounded, contract_for, invalid, parse_args};
use super::output::{guest, refusal_as_result};
use super::tree::SKIPPED_DIRS;
use super::{
    Access, PathArgument, Replay, Role, Tool, ToolContext, ToolContract, ToolError, ToolOutput,
};

pub(crate) const NAME: &str = "search";

const DEFAULT_RESULTS: u64 = 100;
const MAX_RESULTS: u64 = 1000;
/// The guest cannot leave directories out, so matches under skipped ones are
/// dropped here; asking for this many times more keeps them from crowding
/// out the rest.
const SKIP_HEADROOM: u64 = 4;

/// Search the workspace.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Literal text to find in file contents (not a regular expression); each
    /// matching line is reported.
    #[serde(default)]
    text: Option<String>,
    /// Shell glob matched against file names only ("*.rs", "test_*.py").
    #[serde(default)]
    name_glob: Option<String>,
    /// Directory to search under, relative to /workspace. Default: everything.
    #[serde(default)]
    path: Option<String>,
    /// Most matches to return. Default 100.
    #[schemars(range(min = 1, max = MAX_RESULTS))]
    #[serde(default)]
    max_results: Option<u64>,
    /// Also report matches under .git, node_modules and target.
    #[serde(default)]
    include_skipped: bool,
}

#[derive(Debug)]
pub struct Search {
    contract: ToolContract,
}

impl Search {
    pub fn new() -> Self {
        Self {
            contract: contract_for::<Args>(
                NAME,
                "Search files under /workspace by literal text (matching lines as \
                 path:line: text) and/or by a file name glob (matching paths). Give text, \
                 name_glob or both. Matches under .git, node_modules and target are left out \
                 unless include_skipped is set.",
                Role::Workspace,
                Access::ReadOnly,
                Replay::Safe,
                Duration::from_secs(60),
            )
            .with_path_argument(PathArgument::Reads("path")),
        }
    }
}

impl Default for Search {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for Search {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        refusal_as_result(self.run(ctx, arguments).await)
    }
}

fn under_skipped(path: &str) -> bool {
    path.split('/').any(|part| SKIPPED_DIRS.contains(&part))
}

impl Search {
    async fn run(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(NAME, arguments)?;
        let limit = bounded(
            NAME,
            "max_results",
            args.max_results,
            DEFAULT_RESULTS,
            (1, MAX_RESULTS),
        )?;
        let text = args.text.filter(|t| !t.is_empty());
        let name_glob = args.name_glob.filter(|g| !g.is_empty());
        if text.is_none() && name_glob.is_none() {
            return Err(invalid(NAME, "give text, name_glob or both"));
        }
        let skip = !args.include_skipped;
        let asked = if skip { limit * SKIP_HEADROOM } else { limit };
        let spec = SearchSpec {
            path: args.path,
            name_glob,
            content: text,
            max_results: u32::try_from(asked).unwrap_or(u32::MAX),
            max_file_bytes: None,
        };
        let results = ctx.guest.search(spec).await.map_err(guest(NAME))?;
        let found = results.matches.len();
        let mut matches: Vec<SearchMatch> = results
            .matches
            .into_iter()
            .filter(|m| !(skip && under_skipped(&m.path)))
            .collect();
        let hidden = found - matches.len();
        let cut = matches.len() as u64 > limit;
        matches.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        let truncated = cut || results.truncated;

        let mut content = String::new();
        for m in &matches {
            match (m.line, &m.text) {
                (Some(line), Some(text)) => {
                    let _ = writeln!(content, "{}:{line}: {text}", m.path);
                }
                _ => {
                    let _ = writeln!(content, "{}", m.path);
                }
            }
        }
        if matches.is_empty() {
            content.push_str("no matches\n");
        }
        if hidden > 0 {
            let _ = writeln!(
                content,
                "[{hidden} matches under {} left out]",
                SKIPPED_DIRS.join(", ")
            );
        }
        if truncated {
            let _ = writeln!(
                content,
                "[stopped at {} matches; narrow the search with path or name_glob]",
                matches.len()
            );
        }
        Ok(ToolOutput {
            content,
            is_error: false,
            data: json!({
                "matches": matches.len(),
                "hidden": hidden,
                "truncated": truncated,
            }),
            effects: Vec::new(),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testing::offline_context;

    #[tokio::test]
    async fn a_search_needs_text_or_a_glob() {
        let err = Search::new()
            .call(&offline_context(), json!({"path": "src", "text": ""}))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("give text, name_glob or both"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn max_results_outside_the_schema_bounds_is_refused() {
        let tool = Search::new();
        assert_eq!(
            tool.contract().parameters["properties"]["max_results"]["maximum"],
            MAX_RESULTS
        );
        let err = tool
            .call(
                &offline_context(),
                json!({"text": "x", "max_results": 5000}),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err:?}");
    }

    #[test]
    fn skipped_directories_match_whole_components() {
        assert!(under_skipped("node_modules/a/b.js"));
        assert!(under_skipped("pkg/node_modules/x"));
        assert!(under_skipped(".git/config"));
        assert!(!under_skipped("src/targets.rs"));
        assert!(!under_skipped("gitignore"));
    }
}
