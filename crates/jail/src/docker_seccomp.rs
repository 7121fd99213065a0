//! The container engine's seccomp profile (docker's JSON format), generated
//! from the same rule table the native jail and the guest compile
//! (seccomp_rules.rs), so there is one list of denied calls with its reasons.
//!
//! Default allow, each rule an ERRNO entry, every alternative of a
//! conditional rule its own entry (docker ANDs the arguments of one entry).
//! Only x86_64 is listed: libseccomp kills calls of any other ABI (x32,
//! i386), as the native prelude does. This is the outer layer; the guest
//! installs the exact 32-bit-argument program inside as well.

use serde_json::{Value, json};

use crate::seccomp_rules::{Check, Deny, RULES, SyscallRule};

/// The profile, ready for `--security-opt seccomp=<json>`.
pub fn docker_seccomp_profile() -> Value {
    let syscalls: Vec<Value> = RULES.iter().flat_map(entries).collect();
    json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": syscalls,
    })
}

fn errno(rule: &SyscallRule) -> i64 {
    i64::from(match rule.deny {
        Deny::Eperm => libc::EPERM,
        Deny::Enosys => libc::ENOSYS,
    })
}

fn entries(rule: &SyscallRule) -> Vec<Value> {
    let entry = |args: Vec<Value>| {
        json!({
            "names": [syscall_name(rule)],
            "action": "SCMP_ACT_ERRNO",
            "errnoRet": errno(rule),
            "args": args,
            "comment": format!("{}: {}", rule.label, rule.reason),
        })
    };
    if rule.when.is_empty() {
        return vec![entry(Vec::new())];
    }
    rule.when
        .iter()
        .map(|alternative| entry(alternative.iter().map(|c| arg(*c)).collect()))
        .collect()
}

/// libseccomp compares all 64 bits; the argument tests here are on int
/// arguments, so masks and values are the low-half ones of the table.
fn arg(check: Check) -> Value {
    match check {
        Check::Eq { arg, value } => {
            json!({"index": arg, "value": value, "valueTwo": 0, "op": "SCMP_CMP_EQ"})
        }
        Check::Ne { arg, value } => {
            json!({"index": arg, "value": value, "valueTwo": 0, "op": "SCMP_CMP_NE"})
        }
        Check::MaskedEq { arg, mask, value } => {
            json!({"index": arg, "value": mask, "valueTwo": value, "op": "SCMP_CMP_MASKED_EQ"})
        }
    }
}

/// The kernel's name of the rule's call: the label up to its first '('.
fn syscall_name(rule: &SyscallRule) -> &'static str {
    rule.label.split('(').next().unwrap_or(rule.label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_and_alternative_becomes_an_entry_with_its_reason() {
        let profile = docker_seccomp_profile();
        let syscalls = profile["syscalls"].as_array().unwrap();
        let expected: usize = RULES.iter().map(|r| r.when.len().max(1)).sum();
        assert_eq!(syscalls.len(), expected);
        for entry in syscalls {
            assert!(entry["comment"].as_str().unwrap().contains(": "));
            assert_eq!(entry["action"], "SCMP_ACT_ERRNO");
        }
        let mount = syscalls.iter().find(|e| e["names"][0] == "mount").unwrap();
        assert_eq!(mount["errnoRet"], libc::EPERM);
        assert!(mount["args"].as_array().unwrap().is_empty());
        let clone3 = syscalls.iter().find(|e| e["names"][0] == "clone3").unwrap();
        assert_eq!(clone3["errnoRet"], libc::ENOSYS);
        let clones = syscalls.iter().filter(|e| e["names"][0] == "clone").count();
        assert_eq!(clones, 7, "one entry per CLONE_NEW* flag");
        let packet = syscalls
            .iter()
            .find(|e| e["names"][0] == "socket" && e["args"][0]["value"] == libc::AF_PACKET)
            .unwrap();
        assert_eq!(packet["args"][0]["op"], "SCMP_CMP_EQ");
        assert_eq!(profile["architectures"], json!(["SCMP_ARCH_X86_64"]));
    }
}
