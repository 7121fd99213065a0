//! docs/security.md must name every range the address guard refuses.

use crate::guarded::GUARDED;

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
