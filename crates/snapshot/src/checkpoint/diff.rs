//! What changed between two manifests, and the unified diff of a text file.

use paddock_proto::FsPath;
use serde::Serialize;

use super::manifest::{Manifest, Node};

/// How a path differs between two manifests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Removed,
    /// Another content, kind, symlink target or mode.
    Changed,
}

/// One path that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathChange {
    pub path: FsPath,
    pub change: ChangeKind,
    pub before: Option<Node>,
    pub after: Option<Node>,
}

/// The paths that differ from `from` to `to`, in path order. A path whose
/// content, kind or symlink target is the same but whose mode is not is
/// changed too.
pub fn diff(from: &Manifest, to: &Manifest) -> Vec<PathChange> {
    let mut changes = Vec::new();
    let mut before = from.entries.iter().peekable();
    let mut after = to.entries.iter().peekable();
    loop {
        let change = match (before.peek(), after.peek()) {
            (None, None) => break,
            (Some((path, entry)), None) => {
                let change = removed(path, &entry.node);
                before.next();
                change
            }
            (None, Some((path, entry))) => {
                let change = added(path, &entry.node);
                after.next();
                change
            }
            (Some((a, was)), Some((b, is))) => match a.cmp(b) {
                std::cmp::Ordering::Less => {
                    let change = removed(a, &was.node);
                    before.next();
                    change
                }
                std::cmp::Ordering::Greater => {
                    let change = added(b, &is.node);
                    after.next();
                    change
                }
                std::cmp::Ordering::Equal => {
                    let change = (was.node != is.node || was.mode != is.mode).then(|| PathChange {
                        path: (*a).clone(),
                        change: ChangeKind::Changed,
                        before: Some(was.node.clone()),
                        after: Some(is.node.clone()),
                    });
                    before.next();
                    after.next();
                    match change {
                        Some(change) => change,
                        None => continue,
                    }
                }
            },
        };
        changes.push(change);
    }
    changes
}

fn added(path: &FsPath, node: &Node) -> PathChange {
    PathChange {
        path: path.clone(),
        change: ChangeKind::Added,
        before: None,
        after: Some(node.clone()),
    }
}

fn removed(path: &FsPath, node: &Node) -> PathChange {
    PathChange {
        path: path.clone(),
        change: ChangeKind::Removed,
        before: Some(node.clone()),
        after: None,
    }
}

/// The unified diff (3 lines of context, `a/` and `b/` headers) of a file
/// from `before` to `after` (None: absent on that side); None when either
/// side is not text (not UTF-8, or holding a NUL byte). `path` is shown in
/// the headers (a display form: [`FsPath::display`]).
pub fn unified_text(path: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> Option<String> {
    fn text(bytes: Option<&[u8]>) -> Option<&str> {
        match bytes {
            None => Some(""),
            Some(bytes) if bytes.contains(&0) => None,
            Some(bytes) => std::str::from_utf8(bytes).ok(),
        }
    }
    let (old, new) = (text(before)?, text(after)?);
    let old_name = if before.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".to_owned()
    };
    let new_name = if after.is_some() {
        format!("b/{path}")
    } else {
        "/dev/null".to_owned()
    };
    Some(
        similar::TextDiff::from_lines(old, new)
            .unified_diff()
            .context_radius(3)
            .header(&old_name, &new_name)
            .to_string(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use paddock_core::blob::BlobKey;

    use super::*;
    use crate::checkpoint::Entry;

    fn manifest(entries: &[(&str, u8, u32)]) -> Manifest {
        let mut m = Manifest::new(0);
        for (path, byte, mode) in entries {
            m.entries.insert(
                (*path).into(),
                Entry {
                    node: Node::File {
                        hash: BlobKey::from_digest([*byte; 32]),
                        size: 1,
                    },
                    mode: *mode,
                    stat: None,
                },
            );
        }
        m
    }

    #[test]
    fn paths_added_removed_and_changed_are_listed_in_order() {
        let from = manifest(&[
            ("a", 1, 0o644),
            ("b", 2, 0o644),
            ("c", 3, 0o644),
            ("d", 4, 0o644),
        ]);
        let to = manifest(&[
            ("b", 2, 0o644),
            ("c", 9, 0o644),
            ("d", 4, 0o755),
            ("e", 5, 0o644),
        ]);
        let changes = diff(&from, &to);
        let got: Vec<(String, ChangeKind)> = changes
            .iter()
            .map(|c| (c.path.display(), c.change))
            .collect();
        assert_eq!(
            got,
            [
                ("a".to_owned(), ChangeKind::Removed),
                ("c".to_owned(), ChangeKind::Changed),
                ("d".to_owned(), ChangeKind::Changed),
                ("e".to_owned(), ChangeKind::Added),
            ]
        );
        assert!(diff(&from, &from).is_empty());
    }

    #[test]
    fn text_files_get_a_unified_diff_and_binary_ones_none() {
        let patch = unified_text("src/a.txt", Some(b"one\ntwo\n"), Some(b"one\nthree\n")).unwrap();
        assert!(patch.contains("--- a/src/a.txt"), "{patch}");
        assert!(patch.contains("+++ b/src/a.txt"), "{patch}");
        assert!(patch.contains("-two\n+three\n"), "{patch}");
        let added = unified_text("new", None, Some(b"x\n")).unwrap();
        assert!(
            added.contains("--- /dev/null") && added.contains("+x"),
            "{added}"
        );
        assert_eq!(unified_text("bin", Some(b"\0\x01"), Some(b"x")), None);
    }
}
