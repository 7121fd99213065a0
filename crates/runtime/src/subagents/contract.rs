//! What a subagent is told: its task contract and a short summary of the
//! parent's work (its goal and plan), never the parent's transcript.

use paddock_core::store::{Plan, SubagentProfile};

use crate::tools::WriteScope;

/// Most characters of the parent's goal repeated in a child's instructions.
const GOAL_CAP: usize = 1_000;

#[derive(Debug)]
pub(crate) struct Contract<'a> {
    pub(crate) task_id: &'a str,
    pub(crate) prompt: &'a str,
    pub(crate) profile: SubagentProfile,
    pub(crate) write_scope: Option<&'a WriteScope>,
    pub(crate) parent_goal: &'a str,
    pub(crate) plan: Option<&'a Plan>,
}

impl Contract<'_> {
    /// The task's title from the parent's plan, if the plan has the task.
    fn title(&self) -> Option<&str> {
        self.plan?
            .tasks
            .iter()
            .find(|t| t.key == self.task_id)
            .map(|t| t.title.as_str())
    }

    /// The child's goal: the task and the parent's prompt.
    pub(crate) fn goal(&self) -> String {
        let head = match self.title() {
            Some(title) => format!("Task {}: {}", self.task_id, title),
            None => format!("Task {}", self.task_id),
        };
        format!("{head}\n\n{}", self.prompt.trim())
    }

    /// The child's extra instructions: its role, its write scope, and the parent's summary.
    pub(crate) fn instructions(&self) -> String {
        let role = match self.profile {
            SubagentProfile::Explore => {
                "You are an explore subagent: read the workspace and answer the task; you cannot change files."
            }
            SubagentProfile::Plan => {
                "You are a plan subagent: turn the task into a concrete plan; you cannot change files."
            }
            SubagentProfile::Review => {
                "You are a review subagent: review the state of the workspace for the task; you cannot change files."
            }
            SubagentProfile::Build => {
                "You are a build subagent: make the change the task asks for in your copy of the workspace and verify it. Your changes go back to the parent as a change set it reviews."
            }
        };
        let mut text = format!(
            "{role} You work for a parent agent and cannot ask it or the user anything mid-task: \
             if you are blocked, say why in complete_task.\n"
        );
        match (self.profile, self.write_scope) {
            (SubagentProfile::Build, Some(WriteScope(paths))) if paths.is_empty() => {
                text.push_str("Write scope: none; you may not change any file.\n");
            }
            (SubagentProfile::Build, Some(WriteScope(paths))) => {
                text.push_str(&format!(
                    "Write scope: you may only change files under {}; writes elsewhere fail.\n",
                    paths.join(", ")
                ));
            }
            _ => {}
        }
        let goal: String = self.parent_goal.chars().take(GOAL_CAP).collect();
        text.push_str(&format!("\nThe parent agent's goal: {}\n", goal.trim()));
        if let Some(plan) = self.plan.filter(|p| !p.tasks.is_empty()) {
            text.push_str("The parent's plan:\n");
            for task in &plan.tasks {
                text.push_str(&format!(
                    "- [{}] {}: {}\n",
                    task.status, task.key, task.title
                ));
            }
        }
        text
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use paddock_core::ids::{RunId, SessionId, TenantId};
    use paddock_core::store::{Task, TaskStatus, Timestamp};

    use super::*;

    #[test]
    fn the_contract_names_the_task_scope_and_parent_plan_only() {
        let run = RunId::generate();
        let plan = Plan {
            tenant: TenantId::parse("t").unwrap(),
            session: SessionId::generate(),
            run: run.clone(),
            version: 1,
            explanation: None,
            tasks: vec![Task {
                key: "api".into(),
                title: "Add the endpoint".into(),
                status: TaskStatus::InProgress,
                run,
                updated_at: Timestamp::from_millis(0),
            }],
            created_at: Timestamp::from_millis(0),
        };
        let scope = WriteScope(vec!["src/api".into()]);
        let contract = Contract {
            task_id: "api",
            prompt: " add GET /x ",
            profile: SubagentProfile::Build,
            write_scope: Some(&scope),
            parent_goal: "ship the feature",
            plan: Some(&plan),
        };
        assert_eq!(contract.goal(), "Task api: Add the endpoint\n\nadd GET /x");
        let instructions = contract.instructions();
        assert!(instructions.contains("only change files under src/api"));
        assert!(instructions.contains("goal: ship the feature"));
        assert!(instructions.contains("- [in_progress] api: Add the endpoint"));
    }
}
