//! The end-of-run review: the agent's `complete_task` claim, checked against
//! what the run actually did. "met" only stands when what the run did backs
//! it: every success criterion has evidence, some call that reads or changes
//! the workspace succeeded, a command succeeded after the last file change,
//! and nothing was refused or failed after the last success that could clear
//! it. The honest answer otherwise is "unsure". Calls of control tools
//! ([`Role::Control`] in their contract) count for nothing either way.

use paddock_core::store::{CriterionReview, Review, Verdict};

use crate::events::CallStatus;
use crate::tools::{Access, Completion, CriterionClaim, Effect, Role, VerdictArg};

/// Setbacks listed by name in a review; the rest are counted.
const LISTED_SETBACKS: usize = 3;

/// One settled call, as the review weighs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call<'a> {
    /// 1-based position among the run's calls.
    pub(crate) step: u64,
    pub(crate) tool: &'a str,
    /// The tool's access; `None` for a tool the run does not know.
    pub(crate) access: Option<Access>,
    /// The tool's role; `None` for a tool the run does not know.
    pub(crate) role: Option<Role>,
    pub(crate) status: CallStatus,
    pub(crate) effects: &'a [Effect],
}

/// A call that was refused or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Setback {
    step: u64,
    /// "write_file denied", "run_command `sh test.sh` exited 1".
    what: String,
    /// It would have changed or verified something (a mutating or unknown
    /// tool, a command): only a command that succeeds after it clears it.
    /// A failed read is cleared by any later successful workspace call.
    acting: bool,
}

/// What the run did that can back a claim; positions are 1-based call numbers.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Evidence {
    /// The last call that changed workspace files, and the paths it changed.
    last_change: Option<(u64, Vec<String>)>,
    /// The last command that exited 0, and its text.
    last_success: Option<(u64, String)>,
    /// The last call other than a control tool's that succeeded.
    last_worked: Option<u64>,
    setbacks: Vec<Setback>,
}

impl Evidence {
    /// Takes one settled call into account. Calls may settle out of call
    /// order (side by side reads), so everything is compared by step.
    pub(crate) fn record(&mut self, call: &Call<'_>) {
        // control tools only talk to the run loop: their results show
        // nothing about the workspace, and a malformed call sets nothing back
        if call.role == Some(Role::Control) {
            return;
        }
        let step = call.step;
        let acting = call.access != Some(Access::ReadOnly);
        let status = match call.status {
            CallStatus::Succeeded => None,
            CallStatus::Skipped => return,
            CallStatus::Failed => Some("failed"),
            CallStatus::Denied => Some("denied"),
            CallStatus::Hint => Some("refused as a repeat"),
        };
        if let Some(status) = status {
            self.setbacks.push(Setback {
                step,
                what: format!("{} {status}", call.tool),
                acting,
            });
            return;
        }
        let mut failed_command = false;
        for effect in call.effects {
            match effect {
                Effect::FilesChanged { paths }
                    if !paths.is_empty()
                        && self.last_change.as_ref().is_none_or(|(at, _)| *at < step) =>
                {
                    self.last_change = Some((step, paths.clone()));
                }
                Effect::CommandFinished {
                    command,
                    exit_code,
                    success,
                } => {
                    if *success {
                        if self.last_success.as_ref().is_none_or(|(at, _)| *at < step) {
                            self.last_success = Some((step, command.clone()));
                        }
                    } else {
                        failed_command = true;
                        let how = match exit_code {
                            Some(code) => format!("exited {code}"),
                            None => "did not exit normally".to_owned(),
                        };
                        self.setbacks.push(Setback {
                            step,
                            what: format!("{} `{}` {how}", call.tool, short(command)),
                            acting: true,
                        });
                    }
                }
                _ => {}
            }
        }
        if !failed_command && self.last_worked.is_none_or(|at| at < step) {
            self.last_worked = Some(step);
        }
    }

    /// Files changed and no command succeeded after the last change.
    fn unverified_change(&self) -> Option<&[String]> {
        let (changed_at, paths) = self.last_change.as_ref()?;
        match &self.last_success {
            Some((ran_at, _)) if ran_at > changed_at => None,
            _ => Some(paths),
        }
    }

    /// Setbacks nothing after them cleared, in call order.
    fn unresolved(&self) -> Vec<&Setback> {
        let command_at = self.last_success.as_ref().map_or(0, |(at, _)| *at);
        let worked_at = self.last_worked.unwrap_or(0);
        let mut open: Vec<&Setback> = self
            .setbacks
            .iter()
            .filter(|s| {
                let cleared_at = if s.acting { command_at } else { worked_at };
                cleared_at < s.step
            })
            .collect();
        open.sort_by_key(|s| s.step);
        open
    }
}

/// A command as a review names it: its first line, cut to a few words.
fn short(command: &str) -> String {
    const MAX: usize = 60;
    let line = command.lines().next().unwrap_or_default();
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None if line.len() < command.trim_end().len() => format!("{line}..."),
        None => line.to_owned(),
    }
}

/// "write_file denied (call 4), run_command denied (call 5) and 2 more".
fn describe(setbacks: &[&Setback]) -> String {
    let mut named: Vec<String> = setbacks
        .iter()
        .take(LISTED_SETBACKS)
        .map(|s| format!("{} (call {})", s.what, s.step))
        .collect();
    let more = setbacks.len().saturating_sub(LISTED_SETBACKS);
    if more > 0 {
        named.push(format!("{more} more"));
    }
    match named.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => named.concat(),
    }
}

/// Why what the run did does not back a "met" claim.
fn doubts(evidence: &Evidence) -> Vec<String> {
    let mut reasons = Vec::new();
    if evidence.last_worked.is_none() {
        reasons.push(
            "no call that reads or changes the workspace succeeded, so nothing the run \
             did shows the goal met"
                .to_owned(),
        );
    }
    if let Some(paths) = evidence.unverified_change() {
        reasons.push(format!(
            "files changed ({}) and no command succeeded after the last change, so \
             nothing shows the final state works",
            paths.join(", ")
        ));
    }
    let (acting, reading): (Vec<&Setback>, Vec<&Setback>) =
        evidence.unresolved().into_iter().partition(|s| s.acting);
    if !acting.is_empty() {
        reasons.push(format!(
            "{}; no command succeeded after that",
            describe(&acting)
        ));
    }
    if !reading.is_empty() {
        reasons.push(format!(
            "{}; no call succeeded after that",
            describe(&reading)
        ));
    }
    reasons
}

fn normalize(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The name of the goal's criterion at `index`: `c1`, `c2`, ... in the order
/// the goal lists them (the opening message shows them so).
pub(crate) fn criterion_id(index: usize) -> String {
    format!("c{}", index + 1)
}

/// The claim naming the goal's criterion at `index`: by its id (`c1`, `[c1]`,
/// `[c1] its text`) or its exact text (whitespace and case aside). Never by
/// position: a claim in the same place may be about anything.
fn claim_for<'a>(
    criterion: &str,
    index: usize,
    claims: &'a [CriterionClaim],
) -> Option<&'a CriterionClaim> {
    let id = criterion_id(index);
    let wanted = normalize(criterion);
    claims.iter().find(|claim| {
        let named = claim.criterion.trim();
        let (named_id, text) = match named
            .strip_prefix('[')
            .and_then(|rest| rest.split_once(']'))
        {
            Some((inner, text)) => (inner.trim(), text),
            None => (named, named),
        };
        named_id.eq_ignore_ascii_case(&id) || normalize(text) == wanted
    })
}

fn has_text(text: Option<&str>) -> bool {
    text.is_some_and(|t| !t.trim().is_empty())
}

/// The review of a run that ended with `completion`.
pub(crate) fn review(completion: &Completion, criteria: &[String], evidence: &Evidence) -> Review {
    let claimed: Verdict = completion.verdict.into();
    let mut remaining = completion.remaining.clone();
    let mut reasons = Vec::new();

    let criteria_reviews: Vec<CriterionReview> = criteria
        .iter()
        .enumerate()
        .map(|(index, criterion)| {
            let claim = claim_for(criterion, index, &completion.criteria);
            let evidence = claim.and_then(|c| c.evidence.clone());
            let verdict = match claim {
                None => Verdict::Unsure,
                Some(c)
                    if Verdict::from(c.verdict) == Verdict::Met
                        && !has_text(evidence.as_deref()) =>
                {
                    Verdict::Unsure
                }
                Some(c) => c.verdict.into(),
            };
            if claimed == Verdict::Met && verdict != Verdict::Met {
                reasons.push(match claim {
                    None => format!("no claim or evidence for the criterion \"{criterion}\""),
                    Some(_) if verdict == Verdict::Unsure => {
                        format!("no evidence that the criterion \"{criterion}\" is met")
                    }
                    Some(_) => format!("the criterion \"{criterion}\" is judged {verdict}"),
                });
            }
            CriterionReview {
                criterion: criterion.clone(),
                verdict,
                evidence,
            }
        })
        .collect();

    if claimed == Verdict::Met {
        reasons.extend(doubts(evidence));
        let any_evidence = completion.evidence.iter().any(|e| has_text(Some(e)))
            || criteria_reviews
                .iter()
                .any(|c| has_text(c.evidence.as_deref()));
        if !any_evidence && criteria.is_empty() {
            reasons.push("the completion names no evidence".to_owned());
        }
    }

    let verdict = if reasons.is_empty() {
        claimed
    } else {
        Verdict::Unsure
    };
    remaining.extend(reasons.into_iter().map(|r| format!("unverified: {r}")));
    let mut evidence_list = completion.evidence.clone();
    if let Some((_, command)) = &evidence.last_success {
        evidence_list.push(format!("last successful command: {command}"));
    }
    Review {
        verdict,
        summary: completion.summary.clone(),
        evidence: evidence_list,
        remaining,
        criteria: criteria_reviews,
    }
}

/// The claim made for an agent that reports no criteria of its own (an
/// agent CLI): what the sandbox shows. A criterion is claimed met when the
/// last command that succeeded after the last file change is the one it
/// names (the criterion contains the command, or the command contains a
/// command the criterion quotes in backticks); any other is left without a
/// claim, so the review finds it unsure. The agent's own word is only the
/// summary.
pub(crate) fn observed(summary: String, criteria: &[String], evidence: &Evidence) -> Completion {
    let verified = match (&evidence.last_success, evidence.unverified_change()) {
        (Some((_, command)), None) => Some(command.as_str()),
        _ => None,
    };
    let claims = criteria
        .iter()
        .filter_map(|criterion| {
            let command = verified.filter(|command| names(criterion, command))?;
            Some(CriterionClaim {
                criterion: criterion.clone(),
                verdict: VerdictArg::Met,
                evidence: Some(format!(
                    "`{}` succeeded after the last change",
                    short(command)
                )),
            })
        })
        .collect();
    Completion {
        verdict: VerdictArg::Met,
        summary,
        evidence: verified
            .map(|command| vec![format!("`{}` succeeded", short(command))])
            .unwrap_or_default(),
        remaining: Vec::new(),
        criteria: claims,
    }
}

/// Whether `criterion` names `command` (see [`observed`]).
fn names(criterion: &str, command: &str) -> bool {
    let command = command.trim();
    if !command.is_empty() && criterion.contains(command) {
        return true;
    }
    criterion
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::trim)
        .any(|quoted| !quoted.is_empty() && command.contains(quoted))
}

/// The review of a run that ended without `complete_task`.
pub(crate) fn without_completion(summary: String, remaining: Vec<String>) -> Review {
    Review {
        verdict: Verdict::Unsure,
        summary,
        evidence: Vec::new(),
        remaining,
        criteria: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{ToolRegistry, VerdictArg};

    #[test]
    fn what_the_sandbox_shows_backs_the_criteria_that_name_its_command() {
        let criteria = vec![
            "`sh test.sh` exits 0".to_owned(),
            "the README explains the change".to_owned(),
        ];
        let mut evidence = Evidence::default();
        command(&mut evidence, 1, "sh test.sh", 1);
        write(&mut evidence, 2, "calc.py");
        // a command before the last change backs nothing
        let claim = observed("done".into(), &criteria, &evidence);
        assert!(claim.criteria.is_empty(), "{claim:?}");
        command(&mut evidence, 3, "cd /workspace && sh test.sh", 0);
        let claim = observed("done".into(), &criteria, &evidence);
        assert_eq!(claim.criteria.len(), 1, "{claim:?}");
        assert_eq!(claim.criteria[0].criterion, criteria[0]);
        let review = review(&claim, &criteria, &evidence);
        assert_eq!(review.criteria[0].verdict, Verdict::Met);
        assert_eq!(review.criteria[1].verdict, Verdict::Unsure);
        // one criterion nothing shows: the goal is not shown met
        assert_eq!(review.verdict, Verdict::Unsure);
        let only_tests = &criteria[..1];
        let review = review_of(only_tests, &evidence);
        assert_eq!(review.verdict, Verdict::Met, "{review:?}");
    }

    fn review_of(criteria: &[String], evidence: &Evidence) -> Review {
        review(
            &observed("done".into(), criteria, evidence),
            criteria,
            evidence,
        )
    }

    fn claim(criterion: &str, verdict: VerdictArg, evidence: Option<&str>) -> CriterionClaim {
        CriterionClaim {
            criterion: criterion.into(),
            verdict,
            evidence: evidence.map(Into::into),
        }
    }

    fn met(criteria: Vec<CriterionClaim>) -> Completion {
        Completion {
            verdict: VerdictArg::Met,
            summary: "done".into(),
            evidence: vec!["sh test.sh passed".into()],
            remaining: vec![],
            criteria,
        }
    }

    /// Records call `step` of `tool`, with the role its built-in contract
    /// declares (none for a tool that is not built in).
    fn call(
        evidence: &mut Evidence,
        step: u64,
        tool: &str,
        access: Access,
        status: CallStatus,
        effects: &[Effect],
    ) {
        let role = ToolRegistry::builtin().get(tool).map(|t| t.contract().role);
        evidence.record(&Call {
            step,
            tool,
            access: Some(access),
            role,
            status,
            effects,
        });
    }

    fn write(evidence: &mut Evidence, step: u64, path: &str) {
        let changed = [Effect::FilesChanged {
            paths: vec![path.to_owned()],
        }];
        call(
            evidence,
            step,
            "write_file",
            Access::Mutating,
            CallStatus::Succeeded,
            &changed,
        );
    }

    fn command(evidence: &mut Evidence, step: u64, text: &str, exit_code: i32) {
        let finished = [Effect::CommandFinished {
            command: text.to_owned(),
            exit_code: Some(exit_code),
            success: exit_code == 0,
        }];
        call(
            evidence,
            step,
            "run_command",
            Access::Mutating,
            CallStatus::Succeeded,
            &finished,
        );
    }

    fn read(evidence: &mut Evidence, step: u64, status: CallStatus) {
        call(evidence, step, "read_file", Access::ReadOnly, status, &[]);
    }

    fn verified() -> Evidence {
        let mut evidence = Evidence::default();
        write(&mut evidence, 1, "add.py");
        command(&mut evidence, 2, "sh test.sh", 0);
        evidence
    }

    fn unverified(review: &Review) -> Vec<&str> {
        review
            .remaining
            .iter()
            .filter_map(|r| r.strip_prefix("unverified: "))
            .collect()
    }

    #[test]
    fn met_with_evidence_for_every_criterion_stands() {
        let criteria = vec!["tests pass".to_owned()];
        let completion = met(vec![claim(
            "Tests  PASS",
            VerdictArg::Met,
            Some("sh test.sh: ok"),
        )]);
        let review = review(&completion, &criteria, &verified());
        assert_eq!(
            review,
            Review {
                verdict: Verdict::Met,
                summary: "done".into(),
                evidence: vec![
                    "sh test.sh passed".into(),
                    "last successful command: sh test.sh".into()
                ],
                remaining: vec![],
                criteria: vec![CriterionReview {
                    criterion: "tests pass".into(),
                    verdict: Verdict::Met,
                    evidence: Some("sh test.sh: ok".into()),
                }],
            }
        );
    }

    #[test]
    fn a_criterion_without_evidence_makes_met_unsure() {
        let criteria = vec!["tests pass".to_owned(), "docs updated".to_owned()];
        let completion = met(vec![claim("tests pass", VerdictArg::Met, Some("ok"))]);
        let review = review(&completion, &criteria, &verified());
        assert_eq!(review.verdict, Verdict::Unsure);
        assert_eq!(review.criteria[1].verdict, Verdict::Unsure);
        assert_eq!(
            review.remaining,
            vec!["unverified: no claim or evidence for the criterion \"docs updated\""]
        );
    }

    #[test]
    fn a_met_claim_with_empty_evidence_is_unsure() {
        let criteria = vec!["tests pass".to_owned()];
        let completion = met(vec![claim("tests pass", VerdictArg::Met, Some("  "))]);
        let review = review(&completion, &criteria, &verified());
        assert_eq!(review.verdict, Verdict::Unsure);
        assert_eq!(
            review.remaining,
            vec!["unverified: no evidence that the criterion \"tests pass\" is met"]
        );
    }

    #[test]
    fn a_change_after_the_last_successful_command_makes_met_unsure() {
        let mut evidence = verified();
        write(&mut evidence, 3, "add.py");
        let review = review(&met(vec![]), &[], &evidence);
        assert_eq!(review.verdict, Verdict::Unsure);
        assert_eq!(review.remaining.len(), 1);
        assert!(review.remaining[0].contains("files changed (add.py)"));
    }

    #[test]
    fn a_failing_command_after_the_last_success_makes_met_unsure() {
        let mut evidence = verified();
        command(&mut evidence, 3, "sh test.sh --all\nexit 0", 1);
        let review = review(&met(vec![]), &[], &evidence);
        assert_eq!(review.verdict, Verdict::Unsure);
        assert_eq!(
            unverified(&review),
            [
                "run_command `sh test.sh --all...` exited 1 (call 3); no command succeeded after that"
            ]
        );
        // a command that passes afterwards clears it
        command(&mut evidence, 4, "sh test.sh --all", 0);
        assert_eq!(
            super::review(&met(vec![]), &[], &evidence).verdict,
            Verdict::Met
        );
    }

    #[test]
    fn refused_changes_and_commands_make_met_unsure() {
        // plan mode: the agent reads, its writes and its test run are
        // refused, and it claims success anyway
        let mut evidence = Evidence::default();
        read(&mut evidence, 1, CallStatus::Succeeded);
        call(
            &mut evidence,
            2,
            "write_file",
            Access::Mutating,
            CallStatus::Denied,
            &[],
        );
        call(
            &mut evidence,
            3,
            "run_command",
            Access::Mutating,
            CallStatus::Denied,
            &[],
        );
        call(
            &mut evidence,
            4,
            "edit_file",
            Access::Mutating,
            CallStatus::Denied,
            &[],
        );
        call(
            &mut evidence,
            5,
            "run_command",
            Access::Mutating,
            CallStatus::Denied,
            &[],
        );
        // later successful reads do not show a refused change happened
        read(&mut evidence, 6, CallStatus::Succeeded);
        let criteria = vec!["sh test.sh passes".to_owned()];
        let completion = met(vec![claim(
            "sh test.sh passes",
            VerdictArg::Met,
            Some("sh test.sh exited 0"),
        )]);
        let review = review(&completion, &criteria, &evidence);
        assert_eq!(review.verdict, Verdict::Unsure);
        assert_eq!(
            unverified(&review),
            [
                "write_file denied (call 2), run_command denied (call 3), edit_file denied \
                 (call 4) and 1 more; no command succeeded after that"
            ]
        );
    }

    #[test]
    fn a_refused_call_before_the_last_successful_command_does_not_count() {
        let mut evidence = Evidence::default();
        call(
            &mut evidence,
            1,
            "write_file",
            Access::Mutating,
            CallStatus::Denied,
            &[],
        );
        call(
            &mut evidence,
            2,
            "guess_tool",
            Access::Mutating,
            CallStatus::Failed,
            &[],
        );
        write(&mut evidence, 3, "src/add.py");
        command(&mut evidence, 4, "sh test.sh", 0);
        assert_eq!(review(&met(vec![]), &[], &evidence).verdict, Verdict::Met);
    }

    #[test]
    fn an_unknown_tool_counts_as_a_refused_action() {
        let mut evidence = verified();
        evidence.record(&Call {
            step: 3,
            tool: "apply_patch",
            access: None,
            role: None,
            status: CallStatus::Failed,
            effects: &[],
        });
        read(&mut evidence, 4, CallStatus::Succeeded);
        let review = review(&met(vec![]), &[], &evidence);
        assert_eq!(
            unverified(&review),
            ["apply_patch failed (call 3); no command succeeded after that"]
        );
    }

    #[test]
    fn a_read_only_goal_is_met_on_successful_reads() {
        // "explain X": no command, no change; a failed read was followed by
        // one that worked
        let mut evidence = Evidence::default();
        read(&mut evidence, 1, CallStatus::Failed);
        call(
            &mut evidence,
            2,
            "search",
            Access::ReadOnly,
            CallStatus::Succeeded,
            &[],
        );
        read(&mut evidence, 3, CallStatus::Succeeded);
        let review = review(&met(vec![]), &[], &evidence);
        assert_eq!(review.verdict, Verdict::Met, "{review:?}");
        assert!(review.remaining.is_empty());
    }

    #[test]
    fn a_failed_read_with_nothing_after_it_makes_met_unsure() {
        let mut evidence = Evidence::default();
        read(&mut evidence, 1, CallStatus::Succeeded);
        read(&mut evidence, 2, CallStatus::Failed);
        call(
            &mut evidence,
            3,
            "read_file",
            Access::ReadOnly,
            CallStatus::Hint,
            &[],
        );
        let review = review(&met(vec![]), &[], &evidence);
        assert_eq!(
            unverified(&review),
            [
                "read_file failed (call 2) and read_file refused as a repeat (call 3); no call \
                 succeeded after that"
            ]
        );
    }

    #[test]
    fn side_by_side_reads_settling_out_of_order_are_compared_by_step() {
        let mut evidence = Evidence::default();
        read(&mut evidence, 2, CallStatus::Succeeded);
        read(&mut evidence, 1, CallStatus::Failed);
        assert_eq!(review(&met(vec![]), &[], &evidence).verdict, Verdict::Met);
    }

    #[test]
    fn met_on_free_text_alone_is_unsure() {
        // only control tools ran: a plan, a progress note, the claim
        let mut evidence = Evidence::default();
        for (step, tool) in [(1, "update_plan"), (2, "report_progress")] {
            call(
                &mut evidence,
                step,
                tool,
                Access::ReadOnly,
                CallStatus::Succeeded,
                &[],
            );
        }
        // a malformed control call sets nothing back
        call(
            &mut evidence,
            3,
            "complete_task",
            Access::ReadOnly,
            CallStatus::Failed,
            &[],
        );
        let criteria = vec!["the answer is 4".to_owned()];
        let completion = met(vec![claim(
            "the answer is 4",
            VerdictArg::Met,
            Some("2 + 2 = 4"),
        )]);
        let review = review(&completion, &criteria, &evidence);
        assert_eq!(review.verdict, Verdict::Unsure);
        assert_eq!(
            unverified(&review),
            [
                "no call that reads or changes the workspace succeeded, so nothing the run did \
                 shows the goal met"
            ]
        );
    }

    #[test]
    fn a_paraphrasing_claim_in_the_same_place_is_no_claim() {
        let criteria = vec!["the function adds".to_owned()];
        let completion = met(vec![claim("add works", VerdictArg::Met, Some("test ok"))]);
        let review = review(&completion, &criteria, &verified());
        assert_eq!(review.verdict, Verdict::Unsure);
        assert_eq!(review.criteria[0].verdict, Verdict::Unsure);
        assert_eq!(review.criteria[0].evidence, None);
        assert_eq!(
            unverified(&review),
            ["no claim or evidence for the criterion \"the function adds\""]
        );
    }

    #[test]
    fn a_claim_about_another_criterion_backs_only_that_one() {
        let criteria = vec!["README.md documents fizzbuzz.sh usage".to_owned()];
        let completion = met(vec![claim(
            "sh test.sh passes",
            VerdictArg::Met,
            Some("sh test.sh exited 0"),
        )]);
        let review = review(&completion, &criteria, &verified());
        assert_eq!(review.verdict, Verdict::Unsure);
        assert_eq!(review.criteria[0].verdict, Verdict::Unsure);
        assert_eq!(review.criteria[0].evidence, None);
    }

    #[test]
    fn claims_name_criteria_by_id_in_any_order() {
        let criteria = vec!["the function adds".to_owned(), "no warnings".to_owned()];
        let completion = met(vec![
            claim("C2", VerdictArg::Met, Some("cargo build: 0 warnings")),
            claim("[c1] adds", VerdictArg::Met, Some("test ok")),
        ]);
        let review = review(&completion, &criteria, &verified());
        assert_eq!(review.verdict, Verdict::Met, "{:?}", review.remaining);
        assert_eq!(review.criteria[0].evidence.as_deref(), Some("test ok"));
        assert_eq!(
            review.criteria[1].evidence.as_deref(),
            Some("cargo build: 0 warnings")
        );
        // An id the goal does not have names nothing.
        let unknown = met(vec![claim("c3", VerdictArg::Met, Some("ok"))]);
        let judged = super::review(&unknown, &criteria[..1], &verified());
        assert_eq!(judged.criteria[0].verdict, Verdict::Unsure);
    }

    #[test]
    fn a_criterion_left_without_a_claim_is_unsure_beside_claimed_ones() {
        let criteria = vec!["tests pass".to_owned(), "docs updated".to_owned()];
        let completion = met(vec![claim("tests pass", VerdictArg::Met, Some("ok"))]);
        let review = review(&completion, &criteria, &verified());
        assert_eq!(review.criteria[0].verdict, Verdict::Met);
        assert_eq!(review.criteria[1].verdict, Verdict::Unsure);
        assert_eq!(review.verdict, Verdict::Unsure);
    }

    #[test]
    fn not_met_and_unsure_claims_are_kept_as_they_are() {
        let mut completion = met(vec![]);
        completion.verdict = VerdictArg::NotMet;
        let review = review(&completion, &["x".to_owned()], &Evidence::default());
        assert_eq!(review.verdict, Verdict::NotMet);
        assert!(review.remaining.is_empty());
        assert_eq!(review.criteria[0].verdict, Verdict::Unsure);
    }

    #[test]
    fn met_without_any_evidence_or_criteria_is_unsure() {
        let mut completion = met(vec![]);
        completion.evidence.clear();
        let review = review(&completion, &[], &verified());
        assert_eq!(review.verdict, Verdict::Unsure);
        assert_eq!(
            review.remaining,
            vec!["unverified: the completion names no evidence"]
        );
    }

    #[test]
    fn the_role_not_the_name_makes_a_control_call() {
        // a control tool of an embedder's registry, failing: nothing set back
        let mut evidence = verified();
        let note = |role| Call {
            step: 3,
            tool: "note_to_self",
            access: Some(Access::ReadOnly),
            role: Some(role),
            status: CallStatus::Failed,
            effects: &[],
        };
        evidence.record(&note(Role::Control));
        assert_eq!(evidence, verified());
        assert_eq!(review(&met(vec![]), &[], &evidence).verdict, Verdict::Met);
        // the same call of a workspace tool is a setback nothing cleared
        evidence.record(&note(Role::Workspace));
        assert_eq!(
            unverified(&review(&met(vec![]), &[], &evidence)),
            ["note_to_self failed (call 3); no call succeeded after that"]
        );
    }

    #[test]
    fn long_commands_are_named_by_their_first_words() {
        assert_eq!(short("sh test.sh"), "sh test.sh");
        assert_eq!(short("cat <<EOF\nx\nEOF"), "cat <<EOF...");
        assert_eq!(short(&"a".repeat(70)), format!("{}...", "a".repeat(60)));
    }
}
