//! Host id blocks for sandboxes started by host root: each sandbox gets its
//! own block of 65536 uids/gids, so no two sandboxes share a host uid and
//! the kernel's per-user counters (inotify instances, user namespaces,
//! processes) are charged to the sandbox, not shared with host root or with
//! other sandboxes.
//!
//! A block is taken by holding an exclusive `flock` on `<dir>/<host base>`:
//! the monitor keeps the descriptor open for its whole life and the kernel
//! drops the lock when it exits, however it exits. Every server and every
//! `paddock sandbox run` on the host uses the same directory, so two of them
//! never hand out the same block.
//!
//! The container tier takes its blocks here too ([`allocate_block`]): a
//! container runs as the first id of its block (the engine has no user
//! namespace per container), and the backend holds the lock until the
//! container is gone.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::spec::IdPool;
use crate::{IdMapping, JailError};

/// Where the block locks live.
pub(crate) const LOCK_DIR: &str = "/run/paddock/ids";
/// Ids per block: a full 16-bit range, as a distribution's /etc/subuid grants.
pub(crate) const BLOCK_IDS: u32 = 65_536;

/// A block held by this process (and the children that inherit the descriptor).
#[derive(Debug)]
pub struct IdBlock {
    pub mapping: IdMapping,
    /// Holds the lock; closing the last copy releases it.
    _lock: File,
}

/// The first free block of `pool` (the default pool when None), locked in
/// the host's one lock directory: the same blocks native sandboxes take.
/// Needs host root (the directory is root's).
pub fn allocate_block(pool: Option<IdPool>) -> Result<IdBlock, JailError> {
    allocate(&pool.unwrap_or_default(), Path::new(LOCK_DIR))
}

/// The block of `pool` that starts at `host_base`, locked again by this
/// process (a saved container sandbox's, taken back when it is restored),
/// or [`JailError::IdBlockTaken`] when another holds it.
pub fn take_block(pool: Option<IdPool>, host_base: u32) -> Result<IdBlock, JailError> {
    take(&pool.unwrap_or_default(), Path::new(LOCK_DIR), host_base)
}

pub(crate) fn take(pool: &IdPool, dir: &Path, host_base: u32) -> Result<IdBlock, JailError> {
    let offset = host_base.checked_sub(pool.base);
    let in_pool = offset.is_some_and(|o| o % BLOCK_IDS == 0 && o / BLOCK_IDS < pool.blocks);
    if !in_pool {
        return Err(JailError::InvalidSpec {
            field: "id_pool",
            reason: format!("{host_base} does not start a block of the pool"),
        });
    }
    let path = dir.join(host_base.to_string());
    let file = lock_file(&path)?;
    match file.try_lock() {
        Ok(()) => Ok(IdBlock {
            mapping: IdMapping {
                host_base,
                count: BLOCK_IDS,
            },
            _lock: file,
        }),
        Err(TryLockError::WouldBlock) => Err(JailError::IdBlockTaken { host_base }),
        Err(TryLockError::Error(source)) => Err(JailError::IdPoolLock { path, source }),
    }
}

fn lock_file(path: &Path) -> Result<File, JailError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|source| JailError::IdPoolLock {
            path: path.to_path_buf(),
            source,
        })
}

/// The first free block of `pool`, locked.
pub(crate) fn allocate(pool: &IdPool, dir: &Path) -> Result<IdBlock, JailError> {
    let bad = |reason: String| JailError::InvalidSpec {
        field: "id_pool",
        reason,
    };
    if pool.base == 0 {
        return Err(bad("the pool may not start at host uid 0".into()));
    }
    if pool.blocks == 0 {
        return Err(bad("the pool has no blocks".into()));
    }
    let end = u64::from(pool.base) + u64::from(pool.blocks) * u64::from(BLOCK_IDS);
    if end > u64::from(u32::MAX) {
        return Err(bad(format!(
            "{} blocks of {BLOCK_IDS} ids from {} do not fit in u32",
            pool.blocks, pool.base
        )));
    }
    let lock_error = |path: PathBuf| {
        move |source| JailError::IdPoolLock {
            path: path.clone(),
            source,
        }
    };
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(lock_error(dir.to_path_buf()))?;
    for block in 0..pool.blocks {
        let host_base = pool.base + block * BLOCK_IDS;
        let path = dir.join(host_base.to_string());
        let file = lock_file(&path)?;
        match file.try_lock() {
            Ok(()) => {
                return Ok(IdBlock {
                    mapping: IdMapping {
                        host_base,
                        count: BLOCK_IDS,
                    },
                    _lock: file,
                });
            }
            Err(TryLockError::WouldBlock) => continue,
            Err(TryLockError::Error(source)) => return Err(lock_error(path)(source)),
        }
    }
    Err(JailError::IdPoolExhausted {
        blocks: pool.blocks,
        base: pool.base,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_never_shared_while_held_and_reused_once_released() {
        let dir = tempfile::tempdir().unwrap();
        let pool = IdPool {
            base: 200_000,
            blocks: 2,
        };
        let first = allocate(&pool, dir.path()).unwrap();
        let second = allocate(&pool, dir.path()).unwrap();
        assert_eq!(first.mapping.host_base, 200_000);
        assert_eq!(second.mapping.host_base, 200_000 + BLOCK_IDS);
        assert_eq!(second.mapping.count, BLOCK_IDS);
        assert!(matches!(
            allocate(&pool, dir.path()),
            Err(JailError::IdPoolExhausted { blocks: 2, .. })
        ));
        drop(first);
        let again = allocate(&pool, dir.path()).unwrap();
        assert_eq!(again.mapping.host_base, 200_000);
    }

    #[test]
    fn a_held_block_is_taken_back_only_once_released_and_only_at_a_block_start() {
        let dir = tempfile::tempdir().unwrap();
        let pool = IdPool {
            base: 200_000,
            blocks: 2,
        };
        let held = allocate(&pool, dir.path()).unwrap();
        assert!(matches!(
            take(&pool, dir.path(), 200_000),
            Err(JailError::IdBlockTaken { host_base: 200_000 })
        ));
        drop(held);
        let again = take(&pool, dir.path(), 200_000).unwrap();
        assert_eq!(again.mapping.host_base, 200_000);
        for outside in [200_001, 199_999, 200_000 + 2 * BLOCK_IDS] {
            assert!(
                matches!(
                    take(&pool, dir.path(), outside),
                    Err(JailError::InvalidSpec { .. })
                ),
                "{outside}"
            );
        }
    }

    #[test]
    fn a_pool_that_reaches_host_root_or_overflows_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for pool in [
            IdPool { base: 0, blocks: 1 },
            IdPool {
                base: 100_000,
                blocks: 0,
            },
            IdPool {
                base: u32::MAX - BLOCK_IDS,
                blocks: 2,
            },
        ] {
            assert!(
                matches!(
                    allocate(&pool, dir.path()),
                    Err(JailError::InvalidSpec { .. })
                ),
                "{pool:?}"
            );
        }
    }
}
