//! What files cost on disk, in one place: the tenant disk quota counts it
//! (`paddock_api`'s storage accounting) and an unpack charges it before it
//! writes ([`crate::UnpackOptions::max_disk_bytes`]).
//!
//! An entry costs its allocated blocks (`st_blocks * 512`, what `du`
//! counts, not its declared size) plus [`INODE_BYTES`], its share of the
//! file system's inode table, which `st_blocks` leaves out: a 1-byte file
//! costs a block and an inode, an empty file or a short symlink an inode.
//! A directory costs its own blocks and inode like any entry. Hard links
//! are counted once per name (more than the disk holds, never less).

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The allocation unit charged for file content before it is written
/// (ext4, xfs and tmpfs allocate 4 KiB blocks by default).
pub const BLOCK_BYTES: u64 = 4096;
/// What one entry's inode costs (ext4's default inode size).
pub const INODE_BYTES: u64 = 256;

/// What an entry holding `size` bytes of content will cost once written:
/// its content rounded up to whole blocks, plus its inode.
pub fn estimate(size: u64) -> u64 {
    size.div_ceil(BLOCK_BYTES)
        .saturating_mul(BLOCK_BYTES)
        .saturating_add(INODE_BYTES)
}

/// What a directory costs once made: one block and its inode.
pub const DIR_BYTES: u64 = BLOCK_BYTES + INODE_BYTES;

/// What an existing entry costs (its metadata, not followed).
pub fn cost(meta: &std::fs::Metadata) -> u64 {
    meta.blocks()
        .saturating_mul(512)
        .saturating_add(INODE_BYTES)
}

/// What everything under `dir` costs, `dir` itself included; 0 if it is
/// missing. Symlinks are not followed; entries removed while walking are
/// skipped.
pub fn usage(dir: &Path) -> io::Result<u64> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut total = cost(&meta);
    if !meta.is_dir() {
        return Ok(total);
    }
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            // The entry's own metadata: a symlink is not followed.
            let meta = match entry.metadata() {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            total = total.saturating_add(cost(&meta));
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_blocks_and_inodes_without_following_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("big"), vec![1u8; 4 << 20]).unwrap();
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        std::fs::write(tmp.path().join("d/f"), vec![1u8; 1 << 20]).unwrap();
        std::os::unix::fs::symlink(outside.path(), tmp.path().join("out")).unwrap();
        let used = usage(tmp.path()).unwrap();
        assert!(used >= 1 << 20, "{used}");
        assert!(used < 2 << 20, "{used}");
        assert_eq!(usage(&tmp.path().join("missing")).unwrap(), 0);
    }

    #[test]
    fn a_one_byte_file_costs_a_block_and_an_inode() {
        let tmp = tempfile::tempdir().unwrap();
        let empty = usage(tmp.path()).unwrap();
        for i in 0..100 {
            std::fs::write(tmp.path().join(i.to_string()), b"x").unwrap();
        }
        let used = usage(tmp.path()).unwrap() - empty;
        // tmpfs and ext4 both allocate a block per non-empty file
        assert!(used >= 100 * (BLOCK_BYTES + INODE_BYTES), "{used}");
        assert_eq!(estimate(1), BLOCK_BYTES + INODE_BYTES);
        assert_eq!(estimate(0), INODE_BYTES);
    }
}
