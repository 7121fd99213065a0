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

/// Tools by name, in the order they were registered (the order the model is offered them).
#[derive(Debug, Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
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

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.contract().name == name)
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
    /// timeout, cancellation). An unknown name is [`ToolError::Unknown`].
    pub async fn call(
        &self,
        ctx: &ToolContext,
        name: &str,
        arguments: Value,
    ) -> Result<ToolOutput, ToolError> {
        let tool = self.get(name).ok_or_else(|| ToolError::Unknown {
            tool: name.to_owned(),
        })?;
        execute(tool.as_ref(), ctx, arguments).await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::tools::{Access, WriteScope};

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
