//! docs/security.md must name every rule the code applies.

use crate::host::layout;
use crate::init::{etc, landlock_rules, rlimits};
use crate::seccomp::rules as seccomp_rules;

const DOC: &str = include_str!("../../../../docs/security.md");

fn doc() -> String {
    // Table cells escape the pipes of labels such as `mknod(S_IFCHR|S_IFBLK)`.
    DOC.replace("\\|", "|")
}

fn assert_named(what: &str, names: impl IntoIterator<Item = String>) {
    let doc = doc();
    let missing: Vec<String> = names
        .into_iter()
        .filter(|n| !doc.contains(&format!("`{n}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/security.md lacks {what}: {missing:?}"
    );
}

#[test]
fn every_seccomp_rule_is_documented() {
    assert_named(
        "seccomp rules",
        seccomp_rules::REFUSED
            .iter()
            .chain(seccomp_rules::COMMAND_RULES)
            .map(|r| r.label.to_owned()),
    );
    assert_named(
        "allowed syscalls",
        seccomp_rules::ALLOWED.iter().map(|a| a.name.to_owned()),
    );
    assert_named(
        "syscall argument limits",
        seccomp_rules::ALLOWED
            .iter()
            .filter_map(|a| a.args)
            .map(|a| a.label.to_owned()),
    );
}

#[test]
fn every_landlock_path_is_documented() {
    assert_named(
        "landlock paths",
        landlock_rules::rules(false, &["<path>".to_owned()], &[])
            .iter()
            .map(|r| r.path.to_string()),
    );
}

#[test]
fn every_rlimit_and_etc_entry_is_documented() {
    assert_named(
        "rlimits",
        rlimits::rules(&paddock_proto::SandboxLimits::default())
            .iter()
            .map(|r| r.name.to_owned()),
    );
    assert_named(
        "/etc entries",
        etc::ALLOWLIST.iter().map(|e| e.name.to_owned()),
    );
    assert_named(
        "masked /proc files",
        layout::PROC_MASKED_FILES
            .iter()
            .map(|n| format!("/proc/{n}")),
    );
}
