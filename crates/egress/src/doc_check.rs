//! docs/security.md must name every range the address guard refuses and
//! every rule of the microVM's tap.

use crate::guarded::GUARDED;
use crate::tap::{TAP_FULL_IPTABLES_RULES, TAP_IPTABLES_RULES};

const DOC: &str = include_str!("../../../docs/security.md");

#[test]
fn every_guarded_range_is_documented() {
    let missing: Vec<String> = GUARDED
        .iter()
        .map(|g| g.net.to_string())
        .filter(|net| !DOC.contains(&format!("| `{net}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/security.md's guard table lacks {missing:?}"
    );
}

/// `TABLE CHAIN ARGS` of every `-A` line of an iptables-restore text.
fn rules(text: &str) -> Vec<String> {
    let mut table = "";
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix('*') {
            table = name;
        } else if let Some(rule) = line.strip_prefix("-A ") {
            out.push(format!("{table} {rule}"));
        }
    }
    out
}

#[test]
fn every_tap_rule_is_documented() {
    let missing: Vec<String> = [TAP_IPTABLES_RULES, TAP_FULL_IPTABLES_RULES]
        .into_iter()
        .flat_map(rules)
        .filter(|rule| !DOC.contains(&format!("| `{rule}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/security.md's tap table lacks {missing:?}"
    );
}
