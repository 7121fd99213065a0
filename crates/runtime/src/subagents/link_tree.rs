//! Read-only children of one spawn batch share file contents: the first one's
//! directory is unpacked, the others get a tree of hard links to it. Nobody
//! writes through those links: every read-only child's sandbox mounts its
//! workspace read-only (mount flag and landlock), so sharing inodes cannot
//! leak a write from one child to another. Build children always get a copy.

use std::fs;
use std::io;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

/// Recreates the tree at `from` under the new directory `to`: directories
/// with their modes, files as hard links, symlinks with their targets (never
/// followed). `from` is a directory this process just unpacked.
pub(crate) fn link_tree(from: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir(to)?;
    link_entries(from, to)?;
    let mode = fs::symlink_metadata(from)?.permissions().mode();
    fs::set_permissions(to, fs::Permissions::from_mode(mode))
}

fn link_entries(from: &Path, to: &Path) -> io::Result<()> {
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let source = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            link_tree(&source, &target)?;
        } else if kind.is_symlink() {
            symlink(fs::read_link(&source)?, &target)?;
        } else if kind.is_file() {
            fs::hard_link(&source, &target)?;
        }
        // nothing else: the unpacker refuses devices, fifos and sockets
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    #[test]
    fn files_are_shared_and_directories_and_symlinks_recreated() -> anyhow::Result<()> {
        let root = tempfile::tempdir()?;
        let from = root.path().join("from");
        fs::create_dir_all(from.join("src/deep"))?;
        fs::write(from.join("src/deep/a.txt"), "a")?;
        symlink("deep/a.txt", from.join("src/link"))?;
        fs::set_permissions(from.join("src"), fs::Permissions::from_mode(0o750))?;
        let to = root.path().join("to");
        link_tree(&from, &to)?;
        let original = fs::metadata(from.join("src/deep/a.txt"))?;
        let linked = fs::metadata(to.join("src/deep/a.txt"))?;
        assert_eq!(original.ino(), linked.ino());
        assert_eq!(fs::read_link(to.join("src/link"))?, Path::new("deep/a.txt"));
        assert_eq!(
            fs::metadata(to.join("src"))?.permissions().mode() & 0o777,
            0o750
        );
        Ok(())
    }
}
