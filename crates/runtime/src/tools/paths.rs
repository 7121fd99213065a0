//! Lexical workspace paths: what the policy compares against a write scope
//! and what tools report as changed. The guest resolves the real path (and
//! refuses escapes, symlinks included); this only has to be exact about text.

use paddock_proto::WORKSPACE_MOUNT;

/// Why a path cannot name something in the workspace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("{path:?} is absolute; use a path relative to {WORKSPACE_MOUNT}")]
    Absolute { path: String },
    #[error("{path:?} leaves the workspace")]
    Escapes { path: String },
}

/// `path` relative to the workspace root with `.`, `..` and repeated slashes
/// resolved ("" is the root). `/workspace/...` is accepted and made relative,
/// since the model sees that mount in command output; other absolute paths
/// are refused.
pub fn normalize(path: &str) -> Result<String, PathError> {
    let relative = if let Some(rest) = path.strip_prefix(WORKSPACE_MOUNT) {
        if rest.is_empty() || rest.starts_with('/') {
            rest
        } else {
            // "/workspacefoo" is not under the mount.
            return Err(PathError::Absolute {
                path: path.to_owned(),
            });
        }
    } else if path.starts_with('/') {
        return Err(PathError::Absolute {
            path: path.to_owned(),
        });
    } else {
        path
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(PathError::Escapes {
                        path: path.to_owned(),
                    });
                }
            }
            name => parts.push(name),
        }
    }
    Ok(parts.join("/"))
}

/// Whether normalized `path` is `entry` or lies under it (entry "" is the
/// whole workspace). Compares whole components: "src" does not cover "src2".
pub fn is_within(path: &str, entry: &str) -> bool {
    entry.is_empty()
        || path == entry
        || path
            .strip_prefix(entry)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_dots_slashes_and_the_mount_prefix() {
        let cases = [
            ("src/a.rs", "src/a.rs"),
            ("./src//a.rs", "src/a.rs"),
            ("src/../docs/a.md", "docs/a.md"),
            ("/workspace/src/a.rs", "src/a.rs"),
            ("/workspace", ""),
            (".", ""),
            ("", ""),
            ("a/b/", "a/b"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(input).unwrap(), want, "{input}");
        }
    }

    #[test]
    fn refuses_escapes_and_foreign_absolute_paths() {
        assert!(matches!(normalize("../x"), Err(PathError::Escapes { .. })));
        assert!(matches!(
            normalize("src/../../x"),
            Err(PathError::Escapes { .. })
        ));
        assert!(matches!(
            normalize("/workspace/../etc/passwd"),
            Err(PathError::Escapes { .. })
        ));
        assert!(matches!(
            normalize("/etc/passwd"),
            Err(PathError::Absolute { .. })
        ));
        assert!(matches!(
            normalize("/workspacefoo/a"),
            Err(PathError::Absolute { .. })
        ));
    }

    #[test]
    fn within_compares_whole_components() {
        assert!(is_within("src/a.rs", "src"));
        assert!(is_within("src", "src"));
        assert!(is_within("anything", ""));
        assert!(is_within("docs/a.md", "docs/a.md"));
        assert!(!is_within("src2/a.rs", "src"));
        assert!(!is_within("sr", "src"));
        assert!(!is_within("docs/a.md.bak", "docs/a.md"));
    }
}
