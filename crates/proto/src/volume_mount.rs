//! Where a named volume may be mounted inside a sandbox: the rule as data
//! ([`MOUNT_PATH_RULES`], a reason per rule), checked by [`check_volume_mounts`]
//! on the host before a sandbox starts and again by whatever mounts it.

use serde::{Deserialize, Serialize};

/// A named volume mounted into a sandbox at `path`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct VolumeMount {
    /// The tenant's volume (`POST /v1/volumes`).
    pub name: String,
    /// Where inside the sandbox: absolute and normalized, outside the
    /// places [`MOUNT_PATH_RULES`] keeps.
    pub path: String,
    /// Mounted read-only (many sandboxes may; one at a time read-write).
    #[serde(default)]
    pub read_only: bool,
}

/// The host uid and gid every file of a named volume is owned by on disk,
/// whichever sandbox wrote it: a container or microVM with a read-write
/// volume runs as it, and the native jail maps it to sandbox root with an
/// idmapped mount. So a volume passes between sandboxes and backends, each
/// writer free to change what the one before it made. (The uid the server
/// gives the workspaces it adopts, and the first of the native id pool's.)
pub const VOLUME_OWNER_ID: u32 = 100_000;

/// Most volumes one sandbox mounts.
pub const MAX_VOLUME_MOUNTS: usize = 8;
/// Longest mount path, in bytes.
pub const MAX_MOUNT_PATH_LEN: usize = 1024;

/// How a rule's path matches a mount path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The path itself and anything under it.
    Subtree,
    /// The path itself only (what is under it may hold a volume).
    Exact,
}

/// One place a volume may not be mounted, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MountPathRule {
    pub path: &'static str,
    pub reach: Reach,
    pub reason: &'static str,
}

/// The places no volume is mounted over. docs/security.md lists them.
pub const MOUNT_PATH_RULES: &[MountPathRule] = &[
    MountPathRule {
        path: "/",
        reach: Reach::Exact,
        reason: "it would hide the whole root filesystem, the workspace's parent included",
    },
    MountPathRule {
        path: "/workspace",
        reach: Reach::Exact,
        reason: "the workspace is mounted there; a volume goes beside it or inside it",
    },
    MountPathRule {
        path: "/proc",
        reach: Reach::Subtree,
        reason: "the kernel's process view, masked and read-only where it matters",
    },
    MountPathRule {
        path: "/sys",
        reach: Reach::Subtree,
        reason: "the kernel's device and cgroup view",
    },
    MountPathRule {
        path: "/dev",
        reach: Reach::Subtree,
        reason: "the device nodes the sandbox is given, and nothing else",
    },
    MountPathRule {
        path: "/etc",
        reach: Reach::Subtree,
        reason: "the sandbox's identity, resolver and hosts files, written at start",
    },
    MountPathRule {
        path: "/usr",
        reach: Reach::Subtree,
        reason: "the image's programs: a volume there could replace what a later sandbox runs",
    },
    MountPathRule {
        path: "/bin",
        reach: Reach::Subtree,
        reason: "the image's programs (or the link to /usr/bin)",
    },
    MountPathRule {
        path: "/sbin",
        reach: Reach::Subtree,
        reason: "the image's programs (or the link to /usr/sbin)",
    },
    MountPathRule {
        path: "/lib",
        reach: Reach::Subtree,
        reason: "the image's libraries and loader",
    },
    MountPathRule {
        path: "/lib64",
        reach: Reach::Subtree,
        reason: "the image's loader",
    },
    MountPathRule {
        path: "/run",
        reach: Reach::Subtree,
        reason: "the guest agent's sockets and run state",
    },
    MountPathRule {
        path: "/tmp",
        reach: Reach::Exact,
        reason: "the sandbox's own size-capped tmpfs; a volume goes under it, not over it",
    },
];

/// A volume mount no sandbox may start with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidVolumeMount {
    #[error("volume mount path {path:?} {problem}")]
    Path { path: String, problem: &'static str },
    #[error("volume mount path {path:?} is refused: {reason}")]
    Refused { path: String, reason: &'static str },
    #[error("{count} volume mounts, at most {MAX_VOLUME_MOUNTS} are allowed")]
    TooMany { count: usize },
    #[error("volume {name:?} is mounted twice")]
    SameVolume { name: String },
    #[error("volume mount paths {outer:?} and {inner:?} overlap")]
    Overlap { outer: String, inner: String },
}

/// Checks the mounts: at most [`MAX_VOLUME_MOUNTS`], each volume once, each
/// path absolute and normalized (no `.`, `..`, empty component or trailing
/// `/`, no NUL, at most [`MAX_MOUNT_PATH_LEN`] bytes), none matched by a
/// [`MOUNT_PATH_RULES`] rule, and no path at or under another's.
pub fn check_volume_mounts(mounts: &[VolumeMount]) -> Result<(), InvalidVolumeMount> {
    if mounts.len() > MAX_VOLUME_MOUNTS {
        return Err(InvalidVolumeMount::TooMany {
            count: mounts.len(),
        });
    }
    for (i, mount) in mounts.iter().enumerate() {
        check_mount_path(&mount.path)?;
        for other in &mounts[..i] {
            if other.name == mount.name {
                return Err(InvalidVolumeMount::SameVolume {
                    name: mount.name.clone(),
                });
            }
            for (outer, inner) in [(other, mount), (mount, other)] {
                if is_within(&inner.path, &outer.path) {
                    return Err(InvalidVolumeMount::Overlap {
                        outer: outer.path.clone(),
                        inner: inner.path.clone(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// One mount path against the shape rules and [`MOUNT_PATH_RULES`].
pub fn check_mount_path(path: &str) -> Result<(), InvalidVolumeMount> {
    let bad = |problem| {
        Err(InvalidVolumeMount::Path {
            path: path.chars().take(MAX_MOUNT_PATH_LEN).collect(),
            problem,
        })
    };
    if path.len() > MAX_MOUNT_PATH_LEN {
        return bad("is too long");
    }
    if path.contains('\0') {
        return bad("contains NUL");
    }
    let Some(rest) = path.strip_prefix('/') else {
        return bad("is not absolute");
    };
    if !rest.is_empty()
        && rest
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return bad("is not normalized (an empty, `.` or `..` component, or a trailing `/`)");
    }
    if let Some(rule) = MOUNT_PATH_RULES.iter().find(|rule| match rule.reach {
        Reach::Exact => path == rule.path,
        Reach::Subtree => is_within(path, rule.path),
    }) {
        return Err(InvalidVolumeMount::Refused {
            path: path.to_owned(),
            reason: rule.reason,
        });
    }
    Ok(())
}

/// `path` is `base` or under it (both normalized).
fn is_within(path: &str, base: &str) -> bool {
    path == base
        || path
            .strip_prefix(base)
            .is_some_and(|rest| base == "/" || rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(name: &str, path: &str) -> VolumeMount {
        VolumeMount {
            name: name.to_owned(),
            path: path.to_owned(),
            read_only: false,
        }
    }

    #[test]
    fn every_rule_has_a_reason_and_a_normalized_path() {
        for rule in MOUNT_PATH_RULES {
            assert!(!rule.reason.is_empty(), "{}", rule.path);
            assert!(
                rule.path == "/" || !rule.path.ends_with('/'),
                "{}",
                rule.path
            );
        }
    }

    #[test]
    fn traversal_and_odd_shapes_are_refused() {
        for path in [
            "",
            "data",
            "./data",
            "/data/../etc",
            "/data/.",
            "//data",
            "/data/",
            "/a//b",
            "/a\0b",
        ] {
            assert!(
                matches!(check_mount_path(path), Err(InvalidVolumeMount::Path { .. })),
                "{path:?} was accepted"
            );
        }
        assert!(check_mount_path(&format!("/{}", "a".repeat(MAX_MOUNT_PATH_LEN))).is_err());
    }

    #[test]
    fn the_kept_places_are_refused_with_their_reason() {
        for path in [
            "/",
            "/workspace",
            "/proc",
            "/proc/self",
            "/sys/fs",
            "/dev",
            "/dev/shm",
            "/etc",
            "/etc/ssl",
            "/usr/bin",
            "/bin",
            "/lib/x",
            "/run/paddock",
            "/tmp",
        ] {
            assert!(
                matches!(
                    check_mount_path(path),
                    Err(InvalidVolumeMount::Refused { .. })
                ),
                "{path:?} was accepted"
            );
        }
    }

    #[test]
    fn places_beside_or_under_the_workspace_are_allowed() {
        for path in [
            "/data",
            "/workspace/cache",
            "/tmp/x",
            "/home/user/.cache",
            "/procfs",
            "/opt/models",
        ] {
            assert_eq!(check_mount_path(path), Ok(()), "{path:?}");
        }
    }

    #[test]
    fn mounts_are_unique_and_never_nested() {
        assert_eq!(
            check_volume_mounts(&[mount("a", "/data"), mount("b", "/cache")]),
            Ok(())
        );
        assert!(matches!(
            check_volume_mounts(&[mount("a", "/data"), mount("a", "/cache")]),
            Err(InvalidVolumeMount::SameVolume { .. })
        ));
        for (x, y) in [
            ("/data", "/data"),
            ("/data", "/data/x"),
            ("/data/x", "/data"),
        ] {
            assert!(
                matches!(
                    check_volume_mounts(&[mount("a", x), mount("b", y)]),
                    Err(InvalidVolumeMount::Overlap { .. })
                ),
                "{x} {y}"
            );
        }
        assert_eq!(
            check_volume_mounts(&[mount("a", "/data"), mount("b", "/database")]),
            Ok(())
        );
        let many: Vec<_> = (0..=MAX_VOLUME_MOUNTS)
            .map(|i| mount(&format!("v{i}"), &format!("/v{i}")))
            .collect();
        assert!(matches!(
            check_volume_mounts(&many),
            Err(InvalidVolumeMount::TooMany { .. })
        ));
    }
}

#[cfg(test)]
mod doc_check {
    use super::MOUNT_PATH_RULES;

    #[test]
    fn docs_security_lists_every_mount_path_rule_with_its_reason() {
        let doc = include_str!("../../../docs/security.md");
        for rule in MOUNT_PATH_RULES {
            assert!(
                doc.lines()
                    .any(|line| line.starts_with(&format!("| `{}` |", rule.path))
                        && line.contains(rule.reason)),
                "docs/security.md lacks the volume mount rule for {} ({})",
                rule.path,
                rule.reason
            );
        }
    }
}
