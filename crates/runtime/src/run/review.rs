//! The end-of-run review: the agent's `complete_task` claim, checked against
//! what the run actually did. "met" only stands when every success criterion
//! has evidence and nothing changed after the last successful command; the
//! honest answer otherwise is "unsure".

use paddock_core::store::{CriterionReview, Review, Verdict};

use crate::tools::{Completion, CriterionClaim};

/// What the run did that can back a claim; positions are 1-based call numbers.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Evidence {
    /// The last call that changed workspace files, and the paths it changed.
    last_change: Option<(u64, Vec<String>)>,
    /// The last command that exited 0, and its text.
    last_success: Option<(u64, String)>,
}

impl Evidence {
    /// Call `step` (1-based, in call order) changed `paths`.
    pub(crate) fn files_changed(&mut self, step: u64, paths: &[String]) {
        if !paths.is_empty() {
            self.last_change = Some((step, paths.to_vec()));
        }
    }

    /// Call `step` ran `command`.
    pub(crate) fn command_finished(&mut self, step: u64, command: &str, success: bool) {
        if success && self.last_success.as_ref().is_none_or(|(at, _)| *at < step) {
            self.last_success = Some((step, command.to_owned()));
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
}

fn normalize(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The claim about `criterion`: the one naming it, else the one at the same
/// position if that one names no criterion of the goal.
fn claim_for<'a>(
    criterion: &str,
    index: usize,
    claims: &'a [CriterionClaim],
    criteria: &[String],
) -> Option<&'a CriterionClaim> {
    let wanted = normalize(criterion);
    if let Some(claim) = claims.iter().find(|c| normalize(&c.criterion) == wanted) {
        return Some(claim);
    }
    let positional = claims.get(index)?;
    let names_another = criteria
        .iter()
        .any(|c| normalize(c) == normalize(&positional.criterion));
    (!names_another).then_some(positional)
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
            let claim = claim_for(criterion, index, &completion.criteria, criteria);
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
        if let Some(paths) = evidence.unverified_change() {
            reasons.push(format!(
                "files changed ({}) and no command succeeded after the last change, so \
                 nothing shows the final state works",
                paths.join(", ")
            ));
        }
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
    use crate::tools::VerdictArg;

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

    fn verified() -> Evidence {
        let mut evidence = Evidence::default();
        evidence.files_changed(1, &["add.py".into()]);
        evidence.command_finished(2, "sh test.sh", true);
        evidence
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
        evidence.files_changed(3, &["add.py".into()]);
        evidence.command_finished(4, "sh test.sh", false);
        let review = review(&met(vec![]), &[], &evidence);
        assert_eq!(review.verdict, Verdict::Unsure);
        assert_eq!(review.remaining.len(), 1);
        assert!(review.remaining[0].contains("files changed (add.py)"));
    }

    #[test]
    fn claims_are_matched_by_position_when_they_paraphrase() {
        let criteria = vec!["the function adds".to_owned()];
        let completion = met(vec![claim("add works", VerdictArg::Met, Some("test ok"))]);
        assert_eq!(
            review(&completion, &criteria, &verified()).verdict,
            Verdict::Met
        );
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
        let review = review(&completion, &[], &Evidence::default());
        assert_eq!(review.verdict, Verdict::Unsure);
        assert_eq!(
            review.remaining,
            vec!["unverified: the completion names no evidence"]
        );
    }
}
