//! File operations. Every one resolves through [`Workspace`] first and then
//! acts with `*at()` calls relative to the resolved directory fd.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat, renameat};
use nix::sys::stat::{Mode, fchmod, fstat, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, unlinkat};
use paddock_proto::{
    DirEntry, ErrorCode, ErrorInfo, FileStat, FsPath, MAX_PAYLOAD_LEN, escape_path,
};

use super::path::{Workspace, WsPath};
use super::stat::{is_dir, lstat_at, to_file_stat};
use crate::error::{io_error, resolve_error};

const DEFAULT_FILE_MODE: u32 = 0o644;
const DIR_MODE: u32 = 0o755;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn root_refused(action: &str) -> ErrorInfo {
    ErrorInfo::new(
        ErrorCode::PermissionDenied,
        format!("{action} the workspace root is not allowed"),
    )
}

/// Reads at most one frame's worth of `[offset, offset+len)`, clamped to the
/// file. Returns the file's size, the offset actually read from and the bytes.
pub fn read(
    ws: &Workspace,
    path: &WsPath,
    offset: u64,
    len: Option<u64>,
) -> Result<(u64, u64, Vec<u8>), ErrorInfo> {
    let shown = path.to_string();
    // O_NONBLOCK: opening a FIFO must not hang the agent.
    let fd = ws
        .open(
            path,
            OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY,
            Mode::empty(),
        )
        .map_err(|e| resolve_error(&shown, e))?;
    let raw = fstat(&fd).map_err(|e| io_error("reading", &shown, e))?;
    if is_dir(&raw) {
        return Err(io_error("reading", &shown, Errno::EISDIR));
    }
    if to_file_stat(&raw, None).kind != paddock_proto::FileKind::File {
        return Err(ErrorInfo::new(
            ErrorCode::BadRequest,
            format!("reading {shown}: not a regular file"),
        ));
    }
    let size = u64::try_from(raw.st_size).unwrap_or(0);
    let offset = offset.min(size);
    let want = len
        .unwrap_or(u64::MAX)
        .min(u64::from(MAX_PAYLOAD_LEN))
        .min(size - offset);
    let file = File::from(fd);
    let mut buf = vec![0u8; usize::try_from(want).unwrap_or(0)];
    let mut filled = 0;
    while filled < buf.len() {
        match file.read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(crate::error::from_io("reading", &shown, &e)),
        }
    }
    buf.truncate(filled);
    Ok((size, offset, buf))
}

/// Atomically replaces (or creates) `path` with `data`: a temporary file in
/// the same directory, renamed over the target. A symlink at `path` is
/// replaced, never followed. Without `mode`, an existing file keeps its mode.
/// A regular file that cannot be replaced (a file of a write scope: a mount
/// point, or in a read-only directory) is rewritten in place instead.
pub fn write(
    ws: &Workspace,
    path: &WsPath,
    data: &[u8],
    mode: Option<u32>,
    create_parents: bool,
) -> Result<u64, ErrorInfo> {
    let shown = path.to_string();
    let Some((parent, name)) = path.split_last() else {
        return Err(io_error("writing", &shown, Errno::EISDIR));
    };
    let dir = if create_parents {
        mkdir_all(ws, &parent)?
    } else {
        ws.open_dir(&parent)?
    };
    let existing = match fstatat(&dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(raw) => Some(raw),
        Err(Errno::ENOENT) => None,
        Err(e) => return Err(io_error("writing", &shown, e)),
    };
    if existing.as_ref().is_some_and(is_dir) {
        return Err(io_error("writing", &shown, Errno::EISDIR));
    }
    let existing_file = existing
        .as_ref()
        .is_some_and(|raw| to_file_stat(raw, None).kind == paddock_proto::FileKind::File);
    let asked_mode = mode.map(|m| m & 0o7777);
    let kept_mode = match &existing {
        Some(raw) if existing_file => raw.st_mode & 0o7777,
        _ => DEFAULT_FILE_MODE,
    };
    let mode = asked_mode.unwrap_or(kept_mode);

    let temp = format!(
        ".paddock-write-{}-{}.tmp",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let fd = match openat(
        &dir,
        temp.as_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    ) {
        Ok(fd) => fd,
        // A file of a write scope: its directory is on the read-only
        // workspace mount, the file itself is writable (its own mount), so
        // it is rewritten in place. (Only EROFS: a directory the sandbox may
        // not write by its permissions keeps refusing the write.)
        Err(Errno::EROFS) if existing_file => {
            return rewrite_in_place(&dir, name, data, asked_mode)
                .map_err(|e| io_error("writing", &shown, e));
        }
        Err(e) => return Err(io_error("writing", &shown, e)),
    };
    let result = fill_and_rename(&dir, &temp, name, fd, data, mode);
    if result.is_err() {
        let _ = unlinkat(&dir, temp.as_str(), UnlinkatFlags::NoRemoveDir);
    }
    match result {
        Ok(()) => Ok(data.len() as u64),
        // The target is a mount point (a file of a write scope inside a
        // writable directory): it cannot be replaced, only rewritten.
        Err(Errno::EBUSY) if existing_file => rewrite_in_place(&dir, name, data, asked_mode)
            .map_err(|e| io_error("writing", &shown, e)),
        Err(e) => Err(io_error("writing", &shown, e)),
    }
}

/// Truncates and rewrites the regular file `name` (never following a
/// symlink): not atomic, the one way to change a file that cannot be
/// replaced. Its mode changes only when one was asked.
fn rewrite_in_place(
    dir: &OwnedFd,
    name: &OsStr,
    data: &[u8],
    mode: Option<u32>,
) -> Result<u64, Errno> {
    let fd = openat(
        dir,
        name,
        OFlag::O_WRONLY | OFlag::O_TRUNC | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let mut file = File::from(fd);
    file.write_all(data).map_err(errno_of)?;
    if let Some(mode) = mode {
        fchmod(&file, Mode::from_bits_truncate(mode))?;
    }
    Ok(data.len() as u64)
}

fn fill_and_rename(
    dir: &OwnedFd,
    temp: &str,
    name: &OsStr,
    fd: OwnedFd,
    data: &[u8],
    mode: u32,
) -> Result<(), Errno> {
    let mut file = File::from(fd);
    file.write_all(data).map_err(errno_of)?;
    // fchmod, not the create mode, so the umask does not alter the request.
    fchmod(&file, Mode::from_bits_truncate(mode))?;
    drop(file);
    renameat(dir, temp, dir, name)
}

fn errno_of(err: std::io::Error) -> Errno {
    err.raw_os_error()
        .map(Errno::from_raw)
        .unwrap_or(Errno::EIO)
}

/// Entries of a directory (symlinks listed, not followed), sorted by name:
/// every name, UTF-8 or not.
pub fn list(ws: &Workspace, path: &WsPath) -> Result<Vec<DirEntry>, ErrorInfo> {
    let shown = path.to_string();
    let fd = ws.open_dir(path)?;
    let names = read_names(fd.as_fd()).map_err(|e| io_error("listing", &shown, e))?;
    let mut entries = Vec::with_capacity(names.len());
    for name in names {
        match lstat_at(&fd, OsStr::from_bytes(&name)) {
            Ok(stat) => entries.push(DirEntry {
                name: FsPath::from(name),
                stat,
            }),
            // Removed while listing.
            Err(Errno::ENOENT) => {}
            Err(e) => return Err(io_error("listing", &shown, e)),
        }
    }
    Ok(entries)
}

/// Names in a directory (without `.` and `..`), sorted by their bytes:
/// every name, UTF-8 or not ([`FsPath`] carries any on the wire).
pub fn read_names(dir: std::os::fd::BorrowedFd<'_>) -> Result<Vec<Vec<u8>>, Errno> {
    let fd = openat(
        dir,
        ".",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let mut reader = nix::dir::Dir::from_fd(fd)?;
    let mut names = Vec::new();
    for entry in reader.iter() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(name.to_vec());
        }
    }
    names.sort();
    Ok(names)
}

/// `lstat` semantics: a final symlink is described, not followed.
pub fn stat(ws: &Workspace, path: &WsPath) -> Result<FileStat, ErrorInfo> {
    let shown = path.to_string();
    match ws.open_parent(path)? {
        None => {
            let raw = fstat(ws.root_fd()).map_err(|e| io_error("stat of", &shown, e))?;
            Ok(to_file_stat(&raw, None))
        }
        Some((dir, name)) => lstat_at(&dir, name).map_err(|e| io_error("stat of", &shown, e)),
    }
}

pub fn mkdir(ws: &Workspace, path: &WsPath, parents: bool) -> Result<(), ErrorInfo> {
    let shown = path.to_string();
    if parents {
        return mkdir_all(ws, path).map(drop);
    }
    let Some((dir, name)) = ws.open_parent(path)? else {
        return Err(io_error("creating directory", &shown, Errno::EEXIST));
    };
    mkdirat(&dir, name, Mode::from_bits_truncate(DIR_MODE))
        .map_err(|e| io_error("creating directory", &shown, e))
}

/// Creates every missing directory of `path` and returns an fd on the last.
/// Each step is resolved from the root again, so a symlink met on the way is
/// followed only while it stays beneath the root, and `mkdirat` never creates
/// through one (an existing name of any kind is EEXIST).
fn mkdir_all(ws: &Workspace, path: &WsPath) -> Result<OwnedFd, ErrorInfo> {
    let mut current = ws.open_dir(&WsPath::root())?;
    let mut prefix = WsPath::root();
    for name in path.components() {
        match mkdirat(
            &current,
            name.as_slice(),
            Mode::from_bits_truncate(DIR_MODE),
        ) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => {
                return Err(io_error(
                    "creating directory",
                    &prefix.join(name).to_string(),
                    e,
                ));
            }
        }
        prefix = prefix.join(name);
        current = ws.open_dir(&prefix)?;
    }
    Ok(current)
}

/// Removes a file, symlink or (with `recursive`) a whole tree. Symlinks inside
/// the tree are unlinked, never followed.
pub fn remove(ws: &Workspace, path: &WsPath, recursive: bool) -> Result<(), ErrorInfo> {
    let shown = path.to_string();
    let Some((dir, name)) = ws.open_parent(path)? else {
        return Err(root_refused("removing"));
    };
    let raw = fstatat(&dir, name, AtFlags::AT_SYMLINK_NOFOLLOW)
        .map_err(|e| io_error("removing", &shown, e))?;
    if !is_dir(&raw) {
        return unlinkat(&dir, name, UnlinkatFlags::NoRemoveDir)
            .map_err(|e| io_error("removing", &shown, e));
    }
    if recursive {
        return remove_tree(&dir, name, &shown);
    }
    unlinkat(&dir, name, UnlinkatFlags::RemoveDir).map_err(|e| {
        // Some filesystems report a non-empty directory as EEXIST.
        let e = if e == Errno::EEXIST {
            Errno::ENOTEMPTY
        } else {
            e
        };
        io_error("removing", &shown, e)
    })
}

fn remove_tree(parent: &OwnedFd, name: &OsStr, shown: &str) -> Result<(), ErrorInfo> {
    // O_NOFOLLOW: the entry was a directory when checked; if it has been
    // swapped for a symlink since, this fails instead of following it.
    let dir = openat(
        parent,
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io_error("removing", shown, e))?;
    let children = read_names(dir.as_fd()).map_err(|e| io_error("removing", shown, e))?;
    for child in children {
        let child_shown = format!("{shown}/{}", escape_path(&child));
        let child = OsStr::from_bytes(&child);
        let raw = match fstatat(&dir, child, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(raw) => raw,
            Err(Errno::ENOENT) => continue,
            Err(e) => return Err(io_error("removing", &child_shown, e)),
        };
        if is_dir(&raw) {
            remove_tree(&dir, child, &child_shown)?;
        } else {
            match unlinkat(&dir, child, UnlinkatFlags::NoRemoveDir) {
                Ok(()) | Err(Errno::ENOENT) => {}
                Err(e) => return Err(io_error("removing", &child_shown, e)),
            }
        }
    }
    unlinkat(parent, name, UnlinkatFlags::RemoveDir).map_err(|e| io_error("removing", shown, e))
}

pub fn rename(ws: &Workspace, from: &WsPath, to: &WsPath) -> Result<(), ErrorInfo> {
    let Some((from_dir, from_name)) = ws.open_parent(from)? else {
        return Err(root_refused("renaming"));
    };
    let Some((to_dir, to_name)) = ws.open_parent(to)? else {
        return Err(root_refused("replacing"));
    };
    renameat(&from_dir, from_name, &to_dir, to_name)
        .map_err(|e| io_error("renaming", &format!("{from} to {to}"), e))
}
