//! The tool layer's policy: what a call may do given the run's mode and write
//! scope. It is one of two layers: in plan mode the run loop also mounts the
//! sandbox read-only, so a write that got past this check (a shell redirect
//! in a command this layer cannot read) still fails in the kernel.
//!
//! What this layer cannot check: `run_command` and `process_start` run
//! arbitrary shell, so their writes are not scope-checked here; the sandbox
//! (read-only mount in plan mode) is what bounds them. The write scope is
//! lexical: a symlink inside the scope that points elsewhere in the workspace
//! is followed by the guest. The scope guards against a build agent's
//! mistakes, not against a hostile one; the sandbox is the security boundary.

use paddock_core::store::RunMode;
use serde_json::Value;

use super::paths;
use super::{Access, PathArgument, ToolContext, ToolContract, ToolError, WriteScope};

/// Allows or refuses calls for one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    mode: RunMode,
    /// Normalized scope entries; None = the whole workspace.
    scope: Option<Vec<String>>,
}

impl Policy {
    /// A scope entry that is absolute (outside /workspace) or escapes the
    /// workspace is dropped: it can never match, so a bad entry refuses
    /// more, never less. An empty scope allows no writes at all.
    pub fn new(mode: RunMode, write_scope: Option<WriteScope>) -> Self {
        let scope = write_scope.map(|WriteScope(entries)| {
            entries
                .iter()
                .filter_map(|entry| match paths::normalize(entry) {
                    Ok(normalized) => Some(normalized),
                    Err(error) => {
                        tracing::warn!(%error, "write scope entry ignored");
                        None
                    }
                })
                .collect()
        });
        Self { mode, scope }
    }

    pub fn for_context(ctx: &ToolContext) -> Self {
        Self::new(ctx.mode, ctx.write_scope.clone())
    }

    pub fn mode(&self) -> RunMode {
        self.mode
    }

    /// Whether a tool is offered at all in this mode.
    pub fn offers(&self, contract: &ToolContract) -> bool {
        match self.mode {
            RunMode::Build => true,
            RunMode::Plan => contract.access == Access::ReadOnly,
        }
    }

    /// Refuses a call the run may not make. Arguments are only looked at as
    /// far as the policy needs (the path of a write: the argument a contract
    /// declares as [`PathArgument::Writes`]); the tool validates the rest.
    pub fn check(&self, contract: &ToolContract, arguments: &Value) -> Result<(), ToolError> {
        let tool = contract.name;
        if !self.offers(contract) {
            return Err(denied(
                tool,
                format!(
                    "plan mode allows only read-only tools, and {tool} can change the \
                     workspace or the sandbox; switch to build mode to make changes"
                ),
            ));
        }
        let Some(PathArgument::Writes(field)) = contract.path_argument else {
            return Ok(());
        };
        let raw = arguments
            .get(field)
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::InvalidArguments {
                tool: tool.to_owned(),
                reason: format!("{field} must be a string"),
            })?;
        let path = paths::normalize(raw).map_err(|e| denied(tool, e.to_string()))?;
        match &self.scope {
            None => Ok(()),
            Some(entries) if entries.iter().any(|entry| paths::is_within(&path, entry)) => Ok(()),
            Some(entries) => Err(denied(
                tool,
                format!(
                    "{path} is outside the write scope of this run ({})",
                    describe(entries)
                ),
            )),
        }
    }
}

fn describe(entries: &[String]) -> String {
    if entries.is_empty() {
        return "nothing may be written".to_owned();
    }
    let shown: Vec<&str> = entries
        .iter()
        .map(|e| if e.is_empty() { "." } else { e.as_str() })
        .collect();
    format!("allowed: {}", shown.join(", "))
}

fn denied(tool: &str, reason: String) -> ToolError {
    ToolError::Denied {
        tool: tool.to_owned(),
        reason,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::ToolRegistry;

    fn contract(name: &str) -> ToolContract {
        ToolRegistry::builtin()
            .get(name)
            .unwrap()
            .contract()
            .clone()
    }

    fn scope(entries: &[&str]) -> Option<WriteScope> {
        Some(WriteScope(
            entries.iter().map(|e| (*e).to_owned()).collect(),
        ))
    }

    #[test]
    fn plan_mode_refuses_every_mutating_tool_and_says_why() {
        let policy = Policy::new(RunMode::Plan, None);
        let registry = ToolRegistry::builtin();
        let mut refused = Vec::new();
        for name in registry.names() {
            let contract = contract(name);
            match policy.check(&contract, &json!({"path": "a"})) {
                Ok(()) => assert_eq!(contract.access, Access::ReadOnly, "{name}"),
                Err(ToolError::Denied { reason, .. }) => {
                    assert!(reason.contains("plan mode"), "{reason}");
                    refused.push(name);
                }
                Err(other) => panic!("{name}: {other:?}"),
            }
        }
        refused.sort_unstable();
        assert_eq!(
            refused,
            [
                "edit_file",
                "process_start",
                "process_stop",
                "run_command",
                "write_file"
            ]
        );
    }

    #[test]
    fn build_mode_without_scope_allows_writes_anywhere_in_the_workspace() {
        let policy = Policy::new(RunMode::Build, None);
        for name in ["write_file", "edit_file"] {
            policy
                .check(&contract(name), &json!({"path": "deep/new/file.rs"}))
                .unwrap();
        }
        policy
            .check(&contract("run_command"), &json!({"command": "rm -rf /"}))
            .unwrap();
    }

    #[test]
    fn the_write_scope_admits_its_directories_and_files_only() {
        let policy = Policy::new(RunMode::Build, scope(&["src/", "./docs/guide.md"]));
        let write = contract("write_file");
        let edit = contract("edit_file");
        for path in [
            "src/a.rs",
            "src/deep/b.rs",
            "/workspace/src/c.rs",
            "docs/guide.md",
        ] {
            policy.check(&write, &json!({ "path": path })).unwrap();
            policy.check(&edit, &json!({ "path": path })).unwrap();
        }
        for path in [
            "src2/a.rs",
            "docs/other.md",
            "README.md",
            "src/../Cargo.toml",
        ] {
            let err = policy.check(&write, &json!({ "path": path })).unwrap_err();
            match err {
                ToolError::Denied { reason, .. } => {
                    assert!(reason.contains("outside the write scope"), "{reason}");
                    assert!(reason.contains("allowed: src, docs/guide.md"), "{reason}");
                }
                other => panic!("{path}: {other:?}"),
            }
        }
    }

    #[test]
    fn escapes_and_absolute_paths_are_denied_even_without_a_scope() {
        let policy = Policy::new(RunMode::Build, None);
        let write = contract("write_file");
        for (path, says) in [
            ("../x", "leaves the workspace"),
            ("/etc/passwd", "absolute"),
        ] {
            match policy.check(&write, &json!({ "path": path })).unwrap_err() {
                ToolError::Denied { reason, .. } => assert!(reason.contains(says), "{reason}"),
                other => panic!("{path}: {other:?}"),
            }
        }
    }

    #[test]
    fn bad_scope_entries_and_empty_scopes_refuse_rather_than_allow() {
        let write = contract("write_file");
        let policy = Policy::new(RunMode::Build, scope(&["../outside", "/etc"]));
        assert!(policy.check(&write, &json!({"path": "a"})).is_err());
        let policy = Policy::new(RunMode::Build, scope(&[]));
        let err = policy.check(&write, &json!({"path": "a"})).unwrap_err();
        assert!(err.to_string().contains("nothing may be written"), "{err}");
        let policy = Policy::new(RunMode::Build, scope(&["."]));
        policy.check(&write, &json!({"path": "any/where"})).unwrap();
    }

    #[test]
    fn the_write_scope_applies_to_exactly_the_tools_that_declare_a_written_path() {
        // the answers the former name table (write_file and edit_file, by
        // their path) gave, for every built-in
        let policy = Policy::new(RunMode::Build, scope(&["src"]));
        let outside = json!({"path": "README.md", "cwd": "README.md", "command": "true"});
        let inside = json!({"path": "src/a.rs", "cwd": "src", "command": "true"});
        let mut scoped = Vec::new();
        for tool in ToolRegistry::builtin().offered(RunMode::Build) {
            let contract = tool.contract();
            policy.check(contract, &inside).unwrap();
            match policy.check(contract, &outside) {
                Ok(()) => {}
                Err(ToolError::Denied { reason, .. }) => {
                    assert!(reason.contains("outside the write scope"), "{reason}");
                    scoped.push(contract.name);
                }
                Err(other) => panic!("{}: {other:?}", contract.name),
            }
        }
        assert_eq!(scoped, ["write_file", "edit_file"]);
    }

    #[test]
    fn a_write_without_a_path_string_is_invalid() {
        let policy = Policy::new(RunMode::Build, scope(&["src"]));
        let err = policy
            .check(&contract("write_file"), &json!({"path": 1}))
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err:?}");
    }
}
