//! Capturing a workspace into a [`Manifest`]: a walk that never follows a
//! symlink, hashes only the files whose stat differs from the previous
//! manifest's (or is racy), and stores a file's content only when the blob
//! store does not have it yet.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use nix::dir::{Dir, Type};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat};
use paddock_core::blob::{BlobInfo, BlobKey, BlobStore};
use sha2::{Digest, Sha256};

use super::manifest::{Entry, Manifest, Node, StatKey};
use crate::error::{Limit, SnapshotError, io_err, lossy};
use crate::exclude::Excludes;
use crate::options::Limits;
use crate::pack::MAX_DEPTH;

/// A file whose mtime or ctime falls this close to (or after) the start of
/// the capture that hashed it is hashed again by the next capture: a write
/// in the same clock tick as the capture leaves the stat unchanged.
const RACY_NS: i64 = 100_000_000;
const READ_BUF: usize = 1024 * 1024;

/// What a capture leaves out and how much it takes.
#[derive(Debug, Clone, Default)]
pub struct CaptureOptions {
    /// The same patterns as a snapshot's ([`crate::PackOptions::excludes`]).
    pub excludes: Vec<String>,
    pub limits: Limits,
}

/// What a capture found and did.
#[derive(Debug, Clone, Default)]
pub struct CaptureStats {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    /// File content, all files together.
    pub bytes: u64,
    /// Files read to hash them (the others' stat was unchanged).
    pub hashed_files: u64,
    pub hashed_bytes: u64,
    /// Sockets, fifos, devices and names not in UTF-8: not recorded.
    pub skipped: u64,
    /// Blobs this capture stored (content no earlier capture had stored).
    pub new_blobs: Vec<BlobInfo>,
}

impl CaptureStats {
    pub fn new_bytes(&self) -> u64 {
        self.new_blobs.iter().map(|b| b.size).sum()
    }
}

/// Records the tree at `root`. With `blobs`, every file's content is in the
/// store when this returns (stored now if it was not); without, the
/// capture only looks (what a restore compares against). Files whose stat
/// equals their entry in `previous` keep that entry's hash unread.
pub fn capture(
    root: &Path,
    previous: Option<&Manifest>,
    options: &CaptureOptions,
    blobs: Option<&dyn BlobStore>,
) -> Result<(Manifest, CaptureStats), SnapshotError> {
    let started = now_ns();
    let excludes = Excludes::new(&options.excludes)?;
    let dir = Dir::open(
        root,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|errno| SnapshotError::OpenRoot {
        path: root.to_path_buf(),
        source: io_err(errno),
    })?;
    let mut walker = Walker {
        excludes,
        limits: options.limits,
        previous,
        blobs,
        manifest: Manifest::new(started),
        stats: CaptureStats::default(),
        path: Vec::new(),
        buf: vec![0; READ_BUF],
    };
    walker.walk(dir, 0)?;
    Ok((walker.manifest, walker.stats))
}

fn now_ns() -> i64 {
    let elapsed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(elapsed.as_nanos()).unwrap_or(i64::MAX)
}

struct Walker<'a> {
    excludes: Excludes,
    limits: Limits,
    previous: Option<&'a Manifest>,
    blobs: Option<&'a dyn BlobStore>,
    manifest: Manifest,
    stats: CaptureStats,
    path: Vec<u8>,
    buf: Vec<u8>,
}

impl Walker<'_> {
    fn walk(&mut self, mut dir: Dir, depth: usize) -> Result<(), SnapshotError> {
        let mut names: Vec<(Vec<u8>, Option<Type>)> = Vec::new();
        for entry in dir.iter() {
            let entry = entry.map_err(|errno| self.err_read_dir(errno))?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            names.push((name.to_vec(), entry.file_type()));
        }
        names.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (name, _) in names {
            let parent_len = self.path.len();
            if !self.path.is_empty() {
                self.path.push(b'/');
            }
            self.path.extend_from_slice(&name);
            let result = if self.excludes.matches(&self.path, &name) {
                Ok(())
            } else {
                self.entry(&dir, &name, depth)
            };
            self.path.truncate(parent_len);
            result?;
        }
        Ok(())
    }

    fn entry(&mut self, dir: &Dir, name: &[u8], depth: usize) -> Result<(), SnapshotError> {
        let name = OsStr::from_bytes(name);
        let stat = match fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::ENOENT) => return Ok(()),
            Err(errno) => return Err(self.err_stat(errno)),
        };
        let Ok(path) = std::str::from_utf8(&self.path).map(str::to_owned) else {
            self.stats.skipped += 1;
            return Ok(());
        };
        let mode = stat.st_mode & 0o7777;
        let node = match SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT {
            SFlag::S_IFREG => {
                let (node, key) = self.file(dir, name, &path, &stat)?;
                self.count(Some(&node))?;
                self.stats.files += 1;
                self.manifest.entries.insert(
                    path,
                    Entry {
                        node,
                        mode,
                        stat: Some(key),
                    },
                );
                return Ok(());
            }
            SFlag::S_IFDIR => {
                if depth + 1 >= MAX_DEPTH {
                    return Err(SnapshotError::TooDeep {
                        path,
                        max: MAX_DEPTH,
                    });
                }
                self.count(None)?;
                self.stats.dirs += 1;
                self.manifest.entries.insert(
                    path,
                    Entry {
                        node: Node::Dir,
                        mode,
                        stat: None,
                    },
                );
                let fd = match open_dir_at(dir, name) {
                    Ok(fd) => fd,
                    Err(Errno::ENOENT) => return Ok(()),
                    Err(Errno::ELOOP | Errno::ENOTDIR) => return Err(self.changed()),
                    Err(errno) => return Err(self.err_read_dir(errno)),
                };
                let child = Dir::from_fd(fd).map_err(|errno| self.err_read_dir(errno))?;
                return self.walk(child, depth + 1);
            }
            SFlag::S_IFLNK => {
                let target = match nix::fcntl::readlinkat(dir, name) {
                    Ok(target) => target,
                    Err(Errno::ENOENT) => return Ok(()),
                    Err(Errno::EINVAL) => return Err(self.changed()),
                    Err(errno) => return Err(self.err_stat(errno)),
                };
                let Some(target) = target.to_str().filter(|t| !t.is_empty()) else {
                    self.stats.skipped += 1;
                    return Ok(());
                };
                self.stats.symlinks += 1;
                Node::Symlink {
                    target: target.to_owned(),
                }
            }
            _ => {
                self.stats.skipped += 1;
                return Ok(());
            }
        };
        self.count(None)?;
        self.manifest.entries.insert(
            path,
            Entry {
                node,
                mode,
                stat: None,
            },
        );
        Ok(())
    }

    /// The node of a regular file: the previous hash when its stat is
    /// unchanged, otherwise the hash of its content (stored if new).
    fn file(
        &mut self,
        dir: &Dir,
        name: &OsStr,
        path: &str,
        stat: &FileStat,
    ) -> Result<(Node, StatKey), SnapshotError> {
        let key = stat_key(stat);
        if let Some(previous) = self.previous
            && let Some(Entry {
                node: node @ Node::File { .. },
                stat: Some(seen),
                ..
            }) = previous.entries.get(path)
            && *seen == key
            && key.mtime_ns.max(key.ctime_ns) < previous.captured_at_ns - RACY_NS
        {
            return Ok((node.clone(), key));
        }
        let flags = OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_CLOEXEC
            | OFlag::O_NOCTTY
            | OFlag::O_NONBLOCK;
        let fd = match openat(dir, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT | Errno::ELOOP) => return Err(self.changed()),
            Err(errno) => {
                return Err(SnapshotError::ReadFile {
                    path: path.to_owned(),
                    source: io_err(errno),
                });
            }
        };
        let opened = fstat(&fd).map_err(|errno| self.err_stat(errno))?;
        if SFlag::from_bits_truncate(opened.st_mode) & SFlag::S_IFMT != SFlag::S_IFREG
            || opened.st_ino != stat.st_ino
        {
            return Err(self.changed());
        }
        let mut file = File::from(fd);
        let read_err = |source| SnapshotError::ReadFile {
            path: path.to_owned(),
            source,
        };
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        loop {
            let n = match file.read(&mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(read_err(e)),
            };
            hasher.update(&self.buf[..n]);
            size += n as u64;
        }
        let hash = BlobKey::from_digest(hasher.finalize().into());
        self.stats.hashed_files += 1;
        self.stats.hashed_bytes += size;
        if let Some(blobs) = self.blobs {
            self.store(blobs, &mut file, &hash, path)?;
        }
        // the stat of the bytes hashed: one read after the stat may have
        // seen a later write, which the next capture then sees as a change
        Ok((Node::File { hash, size }, StatKey { size, ..key }))
    }

    /// Stores the content of `file` as `hash` unless the store has it.
    fn store(
        &mut self,
        blobs: &dyn BlobStore,
        file: &mut File,
        hash: &BlobKey,
        path: &str,
    ) -> Result<(), SnapshotError> {
        let blob_err = |what: &str| {
            let what = format!("{what} {hash} for {path:?}");
            move |source| SnapshotError::Blob { what, source }
        };
        if blobs.size(hash).map_err(blob_err("stat"))?.is_some() {
            return Ok(());
        }
        let mut writer = blobs.writer().map_err(blob_err("write"))?;
        file.seek(SeekFrom::Start(0))
            .and_then(|_| io::copy(file, &mut writer))
            .and_then(|_| writer.flush())
            .map_err(|source| SnapshotError::ReadFile {
                path: path.to_owned(),
                source,
            })?;
        let info = writer.commit().map_err(blob_err("commit"))?;
        if info.key != *hash {
            // written while it was read: the stored blob is still a valid
            // blob (of other content), but this file must be captured again
            return Err(self.changed());
        }
        self.stats.new_blobs.push(info);
        Ok(())
    }

    fn count(&mut self, file: Option<&Node>) -> Result<(), SnapshotError> {
        let entries = self.manifest.entries.len() as u64;
        if entries >= self.limits.max_files {
            return Err(SnapshotError::OverLimit {
                limit: Limit::Files(self.limits.max_files),
                path: lossy(&self.path),
            });
        }
        if let Some(Node::File { size, .. }) = file {
            self.stats.bytes = self.stats.bytes.saturating_add(*size);
            if self.stats.bytes > self.limits.max_bytes {
                return Err(SnapshotError::OverLimit {
                    limit: Limit::Bytes(self.limits.max_bytes),
                    path: lossy(&self.path),
                });
            }
        }
        Ok(())
    }

    fn changed(&self) -> SnapshotError {
        SnapshotError::Changed {
            path: lossy(&self.path),
        }
    }

    fn err_stat(&self, errno: Errno) -> SnapshotError {
        SnapshotError::Stat {
            path: lossy(&self.path),
            source: io_err(errno),
        }
    }

    fn err_read_dir(&self, errno: Errno) -> SnapshotError {
        SnapshotError::ReadDir {
            path: if self.path.is_empty() {
                ".".to_owned()
            } else {
                lossy(&self.path)
            },
            source: io_err(errno),
        }
    }
}

fn stat_key(stat: &FileStat) -> StatKey {
    StatKey {
        size: u64::try_from(stat.st_size).unwrap_or(0),
        mtime_ns: stat.st_mtime.saturating_mul(1_000_000_000) + stat.st_mtime_nsec,
        ctime_ns: stat.st_ctime.saturating_mul(1_000_000_000) + stat.st_ctime_nsec,
        ino: stat.st_ino,
        dev: stat.st_dev,
    }
}

pub(super) fn open_dir_at<Fd: AsFd, P: ?Sized + nix::NixPath>(
    parent: Fd,
    path: &P,
) -> nix::Result<OwnedFd> {
    openat(
        parent,
        path,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}
