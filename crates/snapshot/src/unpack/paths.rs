//! Path rules of a restore: which entry names and symlink targets are safe.

use crate::error::Refusal;
use crate::tree_walk::MAX_DEPTH;

/// Longest path component (Linux NAME_MAX).
const NAME_MAX: usize = 255;

/// The components of an entry path, checked: relative, no `..`, no NUL, no
/// over-long names, not too deep. `.` and empty components are dropped, so
/// `./a//b` is `a/b`; an empty result is the root itself (`./`).
pub(crate) fn components(path: &[u8]) -> Result<Vec<&[u8]>, Refusal> {
    if path.contains(&0) {
        return Err(Refusal::NulByte);
    }
    if path.starts_with(b"/") {
        return Err(Refusal::AbsolutePath);
    }
    let mut components = Vec::new();
    for component in path.split(|b| *b == b'/') {
        match component {
            b"" | b"." => {}
            b".." => return Err(Refusal::ParentComponent),
            name if name.len() > NAME_MAX => return Err(Refusal::NameTooLong),
            name => components.push(name),
        }
    }
    if components.len() > MAX_DEPTH {
        return Err(Refusal::TooDeep);
    }
    Ok(components)
}

/// Checks a symlink's target: any text the kernel takes, absolute or with
/// `..` included. A link is created as a link and never followed while the
/// tree is written (every component is opened `O_NOFOLLOW`, and an entry
/// whose path goes through a symlink is refused), so where it points only
/// matters to whoever resolves it later: the sandbox, inside its own root.
pub(crate) fn check_symlink_target(target: &[u8]) -> Result<(), Refusal> {
    if target.is_empty() {
        return Err(Refusal::EmptySymlink);
    }
    if target.contains(&0) {
        return Err(Refusal::NulByte);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_paths_are_normalised_or_refused() {
        assert_eq!(components(b"./a//b/").unwrap(), vec![&b"a"[..], b"b"]);
        assert!(components(b"./").unwrap().is_empty());
        assert_eq!(components(b"/etc/x"), Err(Refusal::AbsolutePath));
        assert_eq!(components(b"a/../../x"), Err(Refusal::ParentComponent));
        assert_eq!(components(b"../x"), Err(Refusal::ParentComponent));
        assert_eq!(components(b"a\0b"), Err(Refusal::NulByte));
        assert_eq!(components(&[b'n'; 256]), Err(Refusal::NameTooLong));
        let deep = "d/".repeat(MAX_DEPTH + 1);
        assert_eq!(components(deep.as_bytes()), Err(Refusal::TooDeep));
    }

    #[test]
    fn symlink_targets_are_any_text_but_empty_or_nul() {
        for target in [
            &b"sub/file"[..],
            b"../x",
            b"..",
            b"/",
            b"/usr/bin/python3",
            b"a/../b",
        ] {
            assert_eq!(check_symlink_target(target), Ok(()));
        }
        assert_eq!(check_symlink_target(b""), Err(Refusal::EmptySymlink));
        assert_eq!(check_symlink_target(b"a\0b"), Err(Refusal::NulByte));
    }
}
