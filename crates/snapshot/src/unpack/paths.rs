//! Path rules of a restore: which entry names and symlink targets are safe.

use crate::error::Refusal;
use crate::pack::MAX_DEPTH;

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

/// Checks that a symlink sitting `depth` directories below the root cannot
/// resolve outside it. Only leading `..` are allowed, and no more of them
/// than `depth`: after a name, `..` would climb out of whatever that name
/// resolves to, which may itself be a symlink, so it cannot be checked by
/// looking at the text.
pub(crate) fn check_symlink_target(depth: usize, target: &[u8]) -> Result<(), Refusal> {
    let shown = || String::from_utf8_lossy(target).into_owned();
    if target.is_empty() {
        return Err(Refusal::EmptySymlink);
    }
    if target.contains(&0) {
        return Err(Refusal::NulByte);
    }
    if target.starts_with(b"/") {
        return Err(Refusal::AbsoluteSymlink { target: shown() });
    }
    let mut ups = 0usize;
    let mut after_name = false;
    for component in target.split(|b| *b == b'/') {
        match component {
            b"" | b"." => {}
            b".." if after_name => return Err(Refusal::SymlinkInnerParent { target: shown() }),
            b".." => ups += 1,
            _ => after_name = true,
        }
    }
    if ups > depth {
        return Err(Refusal::SymlinkEscapes { target: shown() });
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
    fn symlink_targets_must_stay_inside() {
        assert!(check_symlink_target(0, b"sub/file").is_ok());
        assert!(check_symlink_target(1, b"../x").is_ok());
        assert!(check_symlink_target(2, b"../../x/./y").is_ok());
        assert!(check_symlink_target(1, b"..").is_ok());
        assert!(matches!(
            check_symlink_target(0, b".."),
            Err(Refusal::SymlinkEscapes { .. })
        ));
        assert!(matches!(
            check_symlink_target(1, b"../../x"),
            Err(Refusal::SymlinkEscapes { .. })
        ));
        assert!(matches!(
            check_symlink_target(5, b"/"),
            Err(Refusal::AbsoluteSymlink { .. })
        ));
        assert!(matches!(
            check_symlink_target(5, b"a/../b"),
            Err(Refusal::SymlinkInnerParent { .. })
        ));
        assert_eq!(check_symlink_target(0, b""), Err(Refusal::EmptySymlink));
    }
}
