//! Checks on the names that become paths (cgroups) and the hostname.

use crate::{JailError, Limits};

const MAX_ID_LEN: usize = 64;
const HOSTNAME_ID_CHARS: usize = 12;

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Same rule as the core's SandboxId: 1 to 64 ASCII letters, digits, - or _.
pub(crate) fn sandbox_id(id: &str) -> Result<(), JailError> {
    if id.is_empty() || id.len() > MAX_ID_LEN || !id.bytes().all(is_name_byte) {
        return Err(JailError::InvalidSpec {
            field: "sandbox_id",
            reason: format!("{id:?} is not 1 to {MAX_ID_LEN} ASCII letters, digits, '-' or '_'"),
        });
    }
    Ok(())
}

/// Relative path of one or more components made of name bytes and dots, with
/// no empty, "." or ".." component.
pub(crate) fn cgroup_parent(parent: &str) -> Result<(), JailError> {
    let ok = !parent.is_empty()
        && parent.split('/').all(|c| {
            !c.is_empty()
                && c != "."
                && c != ".."
                && c.bytes().all(|b| is_name_byte(b) || b == b'.')
        });
    if ok {
        Ok(())
    } else {
        Err(JailError::InvalidSpec {
            field: "cgroup_parent",
            reason: format!("{parent:?} is not a relative cgroup path"),
        })
    }
}

/// Limits of 0 would mean "unlimited" (tmpfs size) or an unusable sandbox.
pub(crate) fn limits(limits: &Limits) -> Result<(), JailError> {
    let zero = [
        ("limits.tmp_bytes", Some(limits.tmp_bytes)),
        ("limits.open_files", Some(limits.open_files)),
        ("limits.memory_bytes", limits.memory_bytes),
        ("limits.pids", limits.pids),
        ("limits.cpu_millis", limits.cpu_millis),
    ]
    .into_iter()
    .find(|(_, value)| *value == Some(0));
    match zero {
        Some((field, _)) => Err(JailError::InvalidSpec {
            field,
            reason: "must be greater than 0".into(),
        }),
        None => Ok(()),
    }
}

/// `paddock-<short id>`: the last 12 letters/digits of the id, lowercased
/// (ids are `sb-<uuidv7>`, whose tail is the random part).
pub(crate) fn hostname(sandbox_id: &str) -> String {
    let chars: Vec<char> = sandbox_id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let short: String = chars[chars.len().saturating_sub(HOSTNAME_ID_CHARS)..]
        .iter()
        .collect();
    format!("paddock-{short}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_ids_are_single_safe_components() {
        assert!(sandbox_id("sb-0190a5b2_X").is_ok());
        for bad in ["", "../x", "a/b", "a.b", "a b", &"x".repeat(65)] {
            assert!(sandbox_id(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn cgroup_parents_stay_below_the_hierarchy_root() {
        assert!(cgroup_parent("paddock").is_ok());
        assert!(cgroup_parent("system.slice/paddock").is_ok());
        for bad in [
            "", "/paddock", "paddock/", "a//b", "..", "a/../b", "./a", "a b",
        ] {
            assert!(cgroup_parent(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn zero_limits_are_refused() {
        assert!(limits(&Limits::default()).is_ok());
        let zero_tmp = Limits {
            tmp_bytes: 0,
            ..Limits::default()
        };
        assert!(matches!(
            limits(&zero_tmp),
            Err(JailError::InvalidSpec {
                field: "limits.tmp_bytes",
                ..
            })
        ));
        let zero_pids = Limits {
            pids: Some(0),
            ..Limits::default()
        };
        assert!(limits(&zero_pids).is_err());
    }

    #[test]
    fn hostname_uses_the_random_tail_of_the_id() {
        assert_eq!(
            hostname("sb-0190a5b27c3e7d21a9f0bb12CAFE3456"),
            "paddock-bb12cafe3456"
        );
        assert_eq!(hostname("sb-1"), "paddock-sb1");
    }
}
