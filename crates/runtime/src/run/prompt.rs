//! The system prompt and the message that opens each run.

use paddock_core::store::RunMode;

use super::review::criterion_id;

/// What a resumed run tells the model when the history ends with its answer.
pub(crate) const RESUMED: &str = "The process driving this run stopped and the run was \
resumed in a fresh sandbox, with the workspace as it was left. Continue working on the goal.";

/// The system prompt of a run.
pub(crate) fn system_prompt(mode: RunMode, instructions: Option<&str>) -> String {
    let mut prompt = String::from(
        "You are a coding agent run by Paddock. You work on a workspace mounted at \
         /workspace inside an isolated sandbox, only through the tools offered; paths are \
         relative to /workspace.\n\
         Work towards the goal of the latest user message in small verified steps: keep a \
         plan with update_plan, report milestones with report_progress, and check your \
         work by running commands (tests, builds) after your last change.\n\
         When the goal is reached, or cannot be, call complete_task with your verdict \
         (met, not_met or unsure), a summary, the evidence (commands you ran and what they \
         showed) and one entry per success criterion, naming it by its id (c1, c2, ...). Say unsure rather than claiming \
         success you cannot show. If only the user can unblock you, call ask_user with one \
         precise question.\n",
    );
    if mode == RunMode::Plan {
        prompt.push_str(
            "This run is in plan mode: the workspace is read-only and only read-only tools \
             are available. Investigate and produce a plan; do not try to change files.\n",
        );
    }
    if let Some(instructions) = instructions.filter(|i| !i.trim().is_empty()) {
        prompt.push_str("\nInstructions:\n");
        prompt.push_str(instructions.trim());
        prompt.push('\n');
    }
    prompt
}

/// The user message that starts a run: its goal and success criteria.
pub(crate) fn goal_message(goal: &str, success_criteria: &[String]) -> String {
    let mut text = format!("Goal: {}", goal.trim());
    if !success_criteria.is_empty() {
        text.push_str("\n\nSuccess criteria:");
        for (index, criterion) in success_criteria.iter().enumerate() {
            text.push_str(&format!(
                "\n- [{}] {}",
                criterion_id(index),
                criterion.trim()
            ));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_mode_and_instructions_are_stated() {
        let prompt = system_prompt(RunMode::Plan, Some("  Use Python 3.  "));
        assert!(prompt.contains("plan mode"));
        assert!(prompt.ends_with("Instructions:\nUse Python 3.\n"));
        assert!(!system_prompt(RunMode::Build, None).contains("plan mode"));
    }

    #[test]
    fn goal_message_lists_the_criteria() {
        assert_eq!(
            goal_message(
                " add a function ",
                &["tests pass".into(), "no warnings".into()]
            ),
            "Goal: add a function\n\nSuccess criteria:\n- [c1] tests pass\n- [c2] no warnings"
        );
        assert_eq!(goal_message("x", &[]), "Goal: x");
    }
}
