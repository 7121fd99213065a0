//! The tools a run can call, and which of them each mode offers.

use std::sync::Arc;

use paddock_core::model::ToolSchema;
use paddock_core::store::RunMode;
use serde_json::Value;

use super::{
    AskUser, CompleteTask, EditFile, Policy, ProcessOutputTool, ProcessStart, ProcessStop,
    ReadFile, ReportProgress, RunCommand, Search, Tool, ToolContext, ToolError, ToolOutput,
    UpdatePlan, WorkspaceTree, WriteFile, execute,
};

/// Tools by name, in the order they were registered (the order the model is
/// offered them), and names it withholds: tools other runs are offered, which
/// a call here is refused with the reason.
#[derive(Debug, Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    withheld: Vec<(&'static str, String)>,
}

impl ToolRegistry {
    /// No tools.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every built-in tool: workspace, command, process and control tools.
    pub fn builtin() -> Self {
        let mut registry = Self::new();
        let tools: [Arc<dyn Tool>; 13] = [
            Arc::new(WorkspaceTree::new()),
            Arc::new(ReadFile::new()),
            Arc::new(Search::new()),
            Arc::new(WriteFile::new()),
            Arc::new(EditFile::new()),
            Arc::new(RunCommand::new()),
            Arc::new(ProcessStart::new()),
            Arc::new(ProcessOutputTool::new()),
            Arc::new(ProcessStop::new()),
            Arc::new(UpdatePlan::new()),
            Arc::new(ReportProgress::new()),
            Arc::new(AskUser::new()),
            Arc::new(CompleteTask::new()),
        ];
        for tool in tools {
            registry.register(tool);
        }
        registry
    }

    /// Adds a tool; one with the same name is replaced in place and returned.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Option<Arc<dyn Tool>> {
        let name = tool.contract().name;
        match self.tools.iter_mut().find(|t| t.contract().name == name) {
            Some(slot) => Some(std::mem::replace(slot, tool)),
            None => {
                self.tools.push(tool);
                None
            }
        }
    }

    /// Refuses calls to `name` with `reason` while no tool of that name is
    /// registered (a tool offered to other runs only); a later reason replaces it.
    pub fn withhold(&mut self, name: &'static str, reason: impl Into<String>) {
        let reason = reason.into();
        match self.withheld.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = reason,
            None => self.withheld.push((name, reason)),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.contract().name == name)
    }

    /// Why a call to `name`, which has no tool here, cannot run:
    /// [`ToolError::Denied`] for a withheld name, else [`ToolError::Unknown`].
    pub fn missing(&self, name: &str) -> ToolError {
        match self.withheld.iter().find(|(n, _)| *n == name) {
            Some((_, reason)) => ToolError::Denied {
                tool: name.to_owned(),
                reason: reason.clone(),
            },
            None => ToolError::Unknown {
                tool: name.to_owned(),
            },
        }
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|t| t.contract().name).collect()
    }

    /// The tools a run in `mode` is offered: all in build mode, the
    /// read-only ones (control tools included) in plan mode.
    pub fn offered(&self, mode: RunMode) -> Vec<&dyn Tool> {
        let policy = Policy::new(mode, None);
        self.tools
            .iter()
            .filter(|t| policy.offers(t.contract()))
            .map(|t| t.as_ref())
            .collect()
    }

    /// The schemas of [`ToolRegistry::offered`], for the model request.
    pub fn schemas(&self, mode: RunMode) -> Vec<ToolSchema> {
        self.offered(mode)
            .into_iter()
            .map(|t| t.contract().schema())
            .collect()
    }

    /// Looks the tool up and runs the call through [`execute`] (policy,
    /// timeout, cancellation). A name without a tool is refused as
    /// [`ToolRegistry::missing`] says.
    pub async fn call(
        &self,
        ctx: &ToolContext,
        name: &str,
        arguments: Value,
    ) -> Result<ToolOutput, ToolError> {
        let tool = self.get(name).ok_or_else(|| self.missing(name))?;
        execute(tool.as_ref(), ctx, arguments).await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashSet;

    use serde_json::json;

    use super::*;
    use crate::tools::testing::path_argument_problems;
    use crate::tools::{Access, PathArgument, Role, WriteScope};

    /// Every built-in's name, role and path argument: the data the review
    /// and the policy read.
    #[test]
    fn every_builtin_declares_its_role_and_path_argument() {
        use PathArgument::{Reads, WorkingDirectory, Writes};
        use Role::{Control, Workspace};
        let declared: Vec<(&str, Role, Option<PathArgument>)> = ToolRegistry::builtin()
            .offered(RunMode::Build)
            .iter()
            .map(|t| {
                let c = t.contract();
                (c.name, c.role, c.path_argument)
            })
            .collect();
        assert_eq!(
            declared,
            [
                ("workspace_tree", Workspace, Some(Reads("path"))),
                ("read_file", Workspace, Some(Reads("path"))),
                ("search", Workspace, Some(Reads("path"))),
                ("write_file", Workspace, Some(Writes("path"))),
                ("edit_file", Workspace, Some(Writes("path"))),
                ("run_command", Workspace, Some(WorkingDirectory("cwd"))),
                ("process_start", Workspace, Some(WorkingDirectory("cwd"))),
                ("process_output", Workspace, None),
                ("process_stop", Workspace, None),
                ("update_plan", Control, None),
                ("report_progress", Control, None),
                ("ask_user", Control, None),
                ("complete_task", Control, None),
            ]
        );
    }

    #[test]
    fn every_builtin_with_a_path_argument_declares_it() {
        for tool in ToolRegistry::builtin().offered(RunMode::Build) {
            assert_eq!(
                path_argument_problems(tool.contract()),
                Vec::<String>::new()
            );
        }
    }

    #[test]
    fn the_contracts_give_the_name_tables_review_and_policy_used_to_keep() {
        let registry = ToolRegistry::builtin();
        let contracts: Vec<&crate::tools::ToolContract> = registry
            .offered(RunMode::Build)
            .into_iter()
            .map(|t| t.contract())
            .collect();
        // the review's former CONTROL_TOOLS
        let control: Vec<&str> = contracts
            .iter()
            .filter(|c| c.role == Role::Control)
            .map(|c| c.name)
            .collect();
        assert_eq!(
            control,
            [
                "update_plan",
                "report_progress",
                "ask_user",
                "complete_task"
            ]
        );
        // the policy's former PATH_WRITERS
        let writers: Vec<(&str, &str)> = contracts
            .iter()
            .filter_map(|c| match c.path_argument {
                Some(PathArgument::Writes(field)) => Some((c.name, field)),
                _ => None,
            })
            .collect();
        assert_eq!(writers, [("write_file", "path"), ("edit_file", "path")]);
    }

    #[test]
    fn plan_mode_offers_read_only_and_control_tools_only() {
        let registry = ToolRegistry::builtin();
        let plan: Vec<&str> = registry
            .offered(RunMode::Plan)
            .iter()
            .map(|t| t.contract().name)
            .collect();
        assert_eq!(
            plan,
            [
                "workspace_tree",
                "read_file",
                "search",
                "process_output",
                "update_plan",
                "report_progress",
                "ask_user",
                "complete_task"
            ]
        );
        assert_eq!(registry.offered(RunMode::Build).len(), 13);
        assert_eq!(registry.schemas(RunMode::Plan).len(), plan.len());
    }

    #[test]
    fn every_builtin_has_a_unique_name_and_an_object_schema() {
        let registry = ToolRegistry::builtin();
        let names: HashSet<&str> = registry.names().into_iter().collect();
        assert_eq!(names.len(), 13);
        for tool in registry.offered(RunMode::Build) {
            let contract = tool.contract();
            assert_eq!(contract.parameters["type"], "object", "{}", contract.name);
            assert!(!contract.description.is_empty(), "{}", contract.name);
            assert!(
                contract.parameters.get("$ref").is_none()
                    && !contract.parameters.to_string().contains("$ref"),
                "{} schema has a $ref",
                contract.name
            );
        }
    }

    #[test]
    fn register_adds_later_tools_and_replaces_by_name() {
        let mut registry = ToolRegistry::new();
        assert!(registry.register(Arc::new(ReadFile::new())).is_none());
        assert!(registry.register(Arc::new(ReadFile::new())).is_some());
        assert_eq!(registry.names(), ["read_file"]);
        assert!(registry.get("write_file").is_none());
    }

    #[tokio::test]
    async fn withheld_names_are_refused_with_their_reason_until_a_tool_has_them() {
        let mut registry = ToolRegistry::builtin();
        registry.withhold("read_file", "shadowed");
        registry.withhold("spawn_helper", "not here");
        registry.withhold("spawn_helper", "only root runs have helpers");
        let ctx = crate::tools::testing::offline_context();
        match registry.call(&ctx, "spawn_helper", Value::Null).await {
            Err(ToolError::Denied { tool, reason }) => {
                assert_eq!(tool, "spawn_helper");
                assert_eq!(reason, "only root runs have helpers");
            }
            other => panic!("{other:?}"),
        }
        assert!(registry.get("spawn_helper").is_none());
        assert!(!registry.names().contains(&"spawn_helper"));
        // a registered tool wins over a withheld name
        let err = registry
            .call(&ctx, "read_file", json!({"path": "a"}))
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::Guest { .. }), "{err:?}");
        assert!(matches!(
            registry.missing("other"),
            ToolError::Unknown { .. }
        ));
    }

    #[tokio::test]
    async fn call_refuses_unknown_tools_and_policy_denials_before_running() {
        let registry = ToolRegistry::builtin();
        let mut ctx = crate::tools::testing::offline_context();
        let err = registry.call(&ctx, "rm_rf", Value::Null).await.unwrap_err();
        assert!(matches!(err, ToolError::Unknown { .. }), "{err:?}");

        ctx.mode = RunMode::Plan;
        let err = registry
            .call(
                &ctx,
                "write_file",
                serde_json::json!({"path": "a", "content": "x"}),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::Denied { .. }), "{err:?}");

        ctx.mode = RunMode::Build;
        ctx.write_scope = Some(WriteScope(vec!["src".into()]));
        let err = registry
            .call(
                &ctx,
                "edit_file",
                serde_json::json!({"path": "README.md", "old_string": "a", "new_string": "b"}),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::Denied { .. }), "{err:?}");
        assert!(registry.get("write_file").unwrap().contract().access == Access::Mutating);
    }
}
