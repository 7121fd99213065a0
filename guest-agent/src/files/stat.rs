//! Converting `stat(2)` results to the protocol's [`FileStat`].

use std::ffi::OsStr;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;

use nix::fcntl::{AtFlags, readlinkat};
use nix::sys::stat::{FileStat as RawStat, SFlag, fstatat};
use paddock_proto::{FileKind, FileStat, FsPath};

pub fn kind_of(raw: &RawStat) -> FileKind {
    match SFlag::from_bits_truncate(raw.st_mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFREG => FileKind::File,
        SFlag::S_IFDIR => FileKind::Dir,
        SFlag::S_IFLNK => FileKind::Symlink,
        _ => FileKind::Other,
    }
}

pub fn is_dir(raw: &RawStat) -> bool {
    kind_of(raw) == FileKind::Dir
}

/// Builds a [`FileStat`]; `link_target` is read only for symlinks.
pub fn to_file_stat(raw: &RawStat, link_target: Option<FsPath>) -> FileStat {
    FileStat {
        kind: kind_of(raw),
        size: u64::try_from(raw.st_size).unwrap_or(0),
        mode: raw.st_mode & 0o7777,
        mtime_ms: raw.st_mtime * 1000 + raw.st_mtime_nsec / 1_000_000,
        link_target,
    }
}

/// `lstat` of `name` in `dir`, with the link target of a symlink (its bytes).
pub fn lstat_at<Fd: AsFd>(dir: Fd, name: &OsStr) -> nix::Result<FileStat> {
    let raw = fstatat(dir.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW)?;
    let target = if kind_of(&raw) == FileKind::Symlink {
        readlinkat(dir.as_fd(), name)
            .ok()
            .map(|t| FsPath::from(t.as_bytes()))
    } else {
        None
    };
    Ok(to_file_stat(&raw, target))
}
