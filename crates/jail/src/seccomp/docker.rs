//! The container engine's seccomp profile (docker's JSON format), generated
//! from the same allowlist the native jail and the guest compile
//! (seccomp/rules.rs), so there is one list of allowed calls with its reasons.
//!
//! Default deny (EPERM, as [`DEFAULT_DENY`]); every allowed call an ALLOW
//! entry with its reason, a call limited in its arguments one entry per
//! alternative (docker ANDs the checks of one entry and ORs the entries);
//! the refusals that must answer ENOSYS (clone3) their own ERRNO entry. Only
//! x86_64 is listed: libseccomp refuses calls of any other ABI (x32, i386),
//! as the native prelude does. This is the outer layer; the guest installs
//! the exact program inside as well.

use serde_json::{Value, json};

use crate::seccomp::rules::{ALLOWED, Allowed, Check, DEFAULT_DENY, Deny, REFUSED};

/// The profile, ready for `--security-opt seccomp=<json>`.
pub fn docker_seccomp_profile() -> Value {
    let mut syscalls: Vec<Value> = ALLOWED.iter().flat_map(allow_entries).collect();
    syscalls.extend(
        REFUSED
            .iter()
            .filter(|refused| refused.deny != DEFAULT_DENY)
            .map(|refused| {
                json!({
                    "names": [refused.label],
                    "action": "SCMP_ACT_ERRNO",
                    "errnoRet": errno(refused.deny),
                    "comment": format!("{}: {}", refused.label, refused.reason),
                })
            }),
    );
    json!({
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": errno(DEFAULT_DENY),
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": syscalls,
    })
}

fn errno(deny: Deny) -> i64 {
    i64::from(match deny {
        Deny::Eperm => libc::EPERM,
        Deny::Enosys => libc::ENOSYS,
    })
}

fn allow_entries(allowed: &Allowed) -> Vec<Value> {
    let entry = |args: Vec<Value>, comment: String| {
        json!({
            "names": [allowed.name],
            "action": "SCMP_ACT_ALLOW",
            "args": args,
            "comment": comment,
        })
    };
    match &allowed.args {
        None => vec![entry(
            Vec::new(),
            format!("{}: {}", allowed.name, allowed.reason),
        )],
        Some(limit) => limit
            .allowed_when
            .iter()
            .map(|alternative| {
                entry(
                    alternative.iter().map(|check| arg(*check)).collect(),
                    format!(
                        "{}: {}; refused otherwise ({}): {}",
                        allowed.name, allowed.reason, limit.label, limit.why
                    ),
                )
            })
            .collect(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_allowed_call_and_alternative_becomes_an_entry_with_its_reason() {
        let profile = docker_seccomp_profile();
        assert_eq!(profile["defaultAction"], "SCMP_ACT_ERRNO");
        assert_eq!(profile["defaultErrnoRet"], libc::EPERM);
        assert_eq!(profile["architectures"], json!(["SCMP_ARCH_X86_64"]));
        let syscalls = profile["syscalls"].as_array().unwrap();
        let allows: Vec<&Value> = syscalls
            .iter()
            .filter(|e| e["action"] == "SCMP_ACT_ALLOW")
            .collect();
        let expected: usize = ALLOWED
            .iter()
            .map(|a| a.args.map_or(1, |limit| limit.allowed_when.len()))
            .sum();
        assert_eq!(allows.len(), expected);
        for entry in syscalls {
            assert!(entry["comment"].as_str().unwrap().contains(": "));
        }
        let named = |name: &str| -> Vec<&Value> {
            syscalls.iter().filter(|e| e["names"][0] == name).collect()
        };
        // Refused calls are simply absent (the default), except ENOSYS ones.
        assert!(named("mount").is_empty());
        assert!(named("ptrace").is_empty());
        let clone3 = named("clone3");
        assert_eq!(clone3.len(), 1);
        assert_eq!(clone3[0]["action"], "SCMP_ACT_ERRNO");
        assert_eq!(clone3[0]["errnoRet"], libc::ENOSYS);
        // clone is allowed only without CLONE_NEW* flags.
        let clone = named("clone");
        assert_eq!(clone.len(), 1);
        assert_eq!(clone[0]["args"][0]["op"], "SCMP_CMP_MASKED_EQ");
        assert_eq!(clone[0]["args"][0]["valueTwo"], 0);
        // socket: one entry per allowed family/type; no AF_PACKET entry.
        let sockets = named("socket");
        assert!(
            sockets
                .iter()
                .any(|e| e["args"][0]["value"] == libc::AF_UNIX)
        );
        assert!(
            !sockets
                .iter()
                .any(|e| e["args"][0]["value"] == libc::AF_PACKET)
        );
        assert_eq!(named("read")[0]["args"], json!([]));
    }
}
