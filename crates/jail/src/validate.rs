//! Checks on the names that become paths (cgroups) and the hostname.

use std::path::PathBuf;

use paddock_proto::{
    MissingScopePath, NetworkPolicy, SandboxLimits, check_writable_paths, writable_path_parts,
};

use crate::JailError;

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

/// A policy with egress needs the host's network namespace (where its egress
/// proxy listens); one without egress must not name one (fail closed both ways).
pub(crate) fn network(policy: &NetworkPolicy, netns: Option<&PathBuf>) -> Result<(), JailError> {
    policy.validate().map_err(|e| JailError::InvalidSpec {
        field: "network",
        reason: e.to_string(),
    })?;
    match (policy.has_egress(), netns) {
        (true, None) => Err(JailError::InvalidSpec {
            field: "netns",
            reason: format!(
                "network {} needs the host's egress namespace, none was given",
                policy.label()
            ),
        }),
        (false, Some(path)) => Err(JailError::InvalidSpec {
            field: "netns",
            reason: format!("{} given for a sandbox with no network", path.display()),
        }),
        _ => Ok(()),
    }
}

/// SandboxLimits of 0 would mean "unlimited" (tmpfs size) or an unusable sandbox.
pub(crate) fn limits(limits: &SandboxLimits) -> Result<(), JailError> {
    let zero = [
        ("limits.tmp_bytes", Some(limits.tmp_bytes)),
        ("limits.open_files", Some(limits.open_files)),
        ("limits.memory_bytes", limits.memory_bytes),
        ("limits.pids", limits.pids),
        ("limits.cpu_millis", limits.cpu_millis),
        ("limits.workspace_bytes", limits.workspace_bytes),
        ("limits.workspace_inodes", limits.workspace_inodes),
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

/// One path of a checked write scope: relative to the workspace root,
/// without its trailing `/`, and what it is made as if missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScopeEntry {
    pub rel: String,
    pub missing: MissingScopePath,
}

/// What every tier checks of its spec first, trusting no caller: the
/// sandbox id (it names paths and the hostname), the policy's limits, and
/// its write scope ([`writable_paths`], whose entries are returned).
pub(crate) fn spec<T>(spec: &crate::GuestSpec<T>) -> Result<Vec<ScopeEntry>, JailError> {
    sandbox_id(&spec.sandbox_id)?;
    limits(&spec.policy.limits)?;
    // the host's mount rule, checked again by whatever mounts them
    paddock_proto::check_volume_mounts(&spec.policy.volumes).map_err(|e| {
        JailError::InvalidSpec {
            field: "volumes",
            reason: e.to_string(),
        }
    })?;
    writable_paths(&spec.policy.writable_paths, spec.policy.read_only)
}

/// The relative paths of `entries`, in order (what is mounted, ruled and
/// reported).
pub(crate) fn scope_rels(entries: &[ScopeEntry]) -> Vec<String> {
    entries.iter().map(|e| e.rel.clone()).collect()
}

/// The write scope, checked by the one rule the host uses too
/// ([`paddock_proto::check_writable_paths`]: normalized relative paths, at
/// most [`paddock_proto::MAX_WRITABLE_PATHS`], not with read-only mode).
/// Returns the paths to mount, sorted, without duplicates and without paths
/// inside another one (that one covers them). A path given both with and
/// without its trailing `/` is kept once, as a directory.
pub(crate) fn writable_paths(
    paths: &[String],
    read_only: bool,
) -> Result<Vec<ScopeEntry>, JailError> {
    check_writable_paths(paths, read_only).map_err(JailError::InvalidWritablePaths)?;
    let mut sorted: Vec<ScopeEntry> = paths
        .iter()
        .map(|path| {
            let (rel, missing) = writable_path_parts(path);
            ScopeEntry {
                rel: rel.to_owned(),
                missing,
            }
        })
        .collect();
    // Directory before File for the same path, so the directory is kept.
    sorted.sort_by(|a, b| {
        a.rel.cmp(&b.rel).then_with(|| {
            (a.missing == MissingScopePath::File).cmp(&(b.missing == MissingScopePath::File))
        })
    });
    let mut cover: Vec<ScopeEntry> = Vec::with_capacity(sorted.len());
    for entry in sorted {
        let covered = cover.iter().any(|kept| {
            entry.rel == kept.rel
                || entry
                    .rel
                    .strip_prefix(kept.rel.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        });
        if !covered {
            cover.push(entry);
        }
    }
    Ok(cover)
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
    use paddock_proto::{
        InvalidSandboxSpec, MAX_WRITABLE_PATH_LEN, MAX_WRITABLE_PATHS, error_chain,
    };

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
        assert!(limits(&SandboxLimits::default()).is_ok());
        let zero_tmp = SandboxLimits {
            tmp_bytes: 0,
            ..SandboxLimits::default()
        };
        assert!(matches!(
            limits(&zero_tmp),
            Err(JailError::InvalidSpec {
                field: "limits.tmp_bytes",
                ..
            })
        ));
        let zero_pids = SandboxLimits {
            pids: Some(0),
            ..SandboxLimits::default()
        };
        assert!(limits(&zero_pids).is_err());
    }

    fn strings(paths: &[&str]) -> Vec<String> {
        paths.iter().map(|p| (*p).to_owned()).collect()
    }

    fn rels(paths: &[String]) -> Vec<String> {
        scope_rels(&writable_paths(paths, false).unwrap())
    }

    #[test]
    fn writable_paths_must_be_normalized_and_relative() {
        let ok = strings(&["src", "a/b.txt", ".hidden", "x..y", "with space"]);
        assert_eq!(
            rels(&ok),
            strings(&[".hidden", "a/b.txt", "src", "with space", "x..y"])
        );
        for bad in [
            "", "/etc", "src//", "/", "a//b", ".", "./src", "src/.", "..", "../x", "a/../b",
            "a/..", "a\0b",
        ] {
            let err = writable_paths(&strings(&[bad]), false).unwrap_err();
            assert!(
                matches!(
                    &err,
                    JailError::InvalidWritablePaths(InvalidSandboxSpec::WritablePath { path, .. }) if path == bad
                ),
                "{bad:?}: {err}"
            );
            assert!(
                error_chain(&err).contains(&format!("{bad:?}")),
                "{bad:?}: {}",
                error_chain(&err)
            );
        }
    }

    #[test]
    fn writable_paths_contradict_read_only_and_are_bounded() {
        assert!(writable_paths(&[], true).unwrap().is_empty());
        let err = error_chain(&writable_paths(&strings(&["src"]), true).unwrap_err());
        assert!(err.contains("read-only"), "{err}");
        let many: Vec<String> = (0..=MAX_WRITABLE_PATHS).map(|i| format!("d{i}")).collect();
        let err = error_chain(&writable_paths(&many, false).unwrap_err());
        assert!(err.contains("at most 64"), "{err}");
        assert_eq!(
            writable_paths(&many[..MAX_WRITABLE_PATHS], false)
                .unwrap()
                .len(),
            64
        );
        let longest = "x".repeat(MAX_WRITABLE_PATH_LEN);
        assert!(writable_paths(std::slice::from_ref(&longest), false).is_ok());
        let err = error_chain(&writable_paths(&[longest + "y"], false).unwrap_err());
        assert!(err.contains("longer than the 1024 bytes"), "{err}");
    }

    #[test]
    fn nested_and_duplicate_writable_paths_collapse_into_the_outer_one() {
        let paths = strings(&[
            "src/deep",
            "src-x",
            "src",
            "docs/a",
            "src",
            "docs/ab",
            "src/deep/er",
        ]);
        assert_eq!(
            rels(&paths),
            strings(&["docs/a", "docs/ab", "src", "src-x"])
        );
    }

    #[test]
    fn a_trailing_slash_asks_for_a_directory_and_wins_over_the_same_path_without() {
        use MissingScopePath::{Directory, File};
        let paths = strings(&["new.txt", "build/", "out", "out/", "build/x", ".env"]);
        let entry = |rel: &str, missing| ScopeEntry {
            rel: rel.to_owned(),
            missing,
        };
        assert_eq!(
            writable_paths(&paths, false).unwrap(),
            [
                entry(".env", Directory),
                entry("build", Directory),
                entry("new.txt", File),
                entry("out", Directory)
            ]
        );
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
