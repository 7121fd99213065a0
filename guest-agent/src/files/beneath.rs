//! `RESOLVE_BENEATH` resolution without openat2, for kernels that lack it
//! (gVisor's sentry in Debian 12's runsc). Walks the components one at a
//! time from the root fd with `O_NOFOLLOW`, expanding each symlink itself:
//! an absolute target or a `..` above the root fails with EXDEV, as the
//! kernel's flag does; `..` steps back through the directories walked (a
//! stack of fds, never a path lookup), so a concurrent rename cannot lead
//! out; more than 40 expansions fail with ELOOP.

use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat, readlinkat};
use nix::sys::stat::{Mode, SFlag, fstatat};

/// Symlink expansions allowed in one resolution (the kernel's MAXSYMLINKS).
const MAX_SYMLINKS: usize = 40;

fn is_symlink(dir: &OwnedFd, name: &OsStr) -> Result<bool, Errno> {
    let st = fstatat(dir.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW)?;
    Ok(st.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFLNK.bits())
}

/// Pushes the components of `text` (a relative symlink target or the
/// request's path, any bytes) on `pending`, first component on top.
fn push_components(pending: &mut Vec<Vec<u8>>, text: &[u8]) {
    for part in text.split(|b| *b == b'/').rev() {
        if !part.is_empty() && part != b"." {
            pending.push(part.to_vec());
        }
    }
}

/// Opens `relative` beneath `root` with `flags` (and `mode` when creating).
pub(super) fn open_beneath(
    root: &OwnedFd,
    relative: &[u8],
    flags: OFlag,
    mode: Mode,
) -> Result<OwnedFd, Errno> {
    let mut dirs: Vec<OwnedFd> = vec![
        root.as_fd()
            .try_clone_to_owned()
            .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(Errno::EBADF as i32)))?,
    ];
    let mut pending = Vec::new();
    push_components(&mut pending, relative);
    let mut expansions = 0;
    let dir_flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    loop {
        let Some(name) = pending.pop() else {
            // The path named a directory itself ("." or ending in a link to one).
            let dir = dirs.pop().ok_or(Errno::EXDEV)?;
            return openat(&dir, ".", flags | OFlag::O_CLOEXEC, mode);
        };
        if name == b".." {
            if dirs.len() == 1 {
                return Err(Errno::EXDEV);
            }
            dirs.pop();
            continue;
        }
        let dir = dirs.last().ok_or(Errno::EXDEV)?;
        let name = OsStr::from_bytes(&name);
        if is_symlink(dir, name).unwrap_or(false) {
            expansions += 1;
            if expansions > MAX_SYMLINKS {
                return Err(Errno::ELOOP);
            }
            let target = readlinkat(dir, name)?;
            if target.as_bytes().starts_with(b"/") {
                return Err(Errno::EXDEV);
            }
            push_components(&mut pending, target.as_bytes());
            continue;
        }
        if pending.is_empty() {
            // The final component: a real entry (or a missing one to create).
            return openat(
                dir,
                name,
                flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                mode,
            );
        }
        let next = openat(dir, name, dir_flags, Mode::empty())?;
        dirs.push(next);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use nix::fcntl::open;

    use super::*;

    fn root(dir: &std::path::Path) -> OwnedFd {
        open(dir, OFlag::O_PATH | OFlag::O_DIRECTORY, Mode::empty()).unwrap()
    }

    #[test]
    fn follows_links_that_stay_beneath_and_refuses_the_others() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join("a/b")).unwrap();
        std::fs::write(ws.path().join("a/b/f"), b"x").unwrap();
        symlink("a/b", ws.path().join("inside")).unwrap();
        symlink("../..", ws.path().join("a/up2")).unwrap();
        symlink("/etc", ws.path().join("abs")).unwrap();
        symlink("loop", ws.path().join("loop")).unwrap();
        let fd = root(ws.path());
        let read = |p: &str| open_beneath(&fd, p.as_bytes(), OFlag::O_RDONLY, Mode::empty());
        assert!(read("a/b/f").is_ok());
        assert!(read("inside/f").is_ok());
        assert!(read("a/b/../b/f").is_ok());
        assert!(read(".").is_ok());
        assert_eq!(read("a/up2/etc/passwd").unwrap_err(), Errno::EXDEV);
        assert_eq!(read("abs/passwd").unwrap_err(), Errno::EXDEV);
        assert_eq!(read("..").unwrap_err(), Errno::EXDEV);
        assert_eq!(read("loop").unwrap_err(), Errno::ELOOP);
        assert_eq!(read("a/missing").unwrap_err(), Errno::ENOENT);
        let created = open_beneath(
            &fd,
            b"a/new",
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL,
            Mode::from_bits_truncate(0o644),
        );
        assert!(created.is_ok());
        assert!(ws.path().join("a/new").is_file());
    }
}
