//! Disk use as `du` counts it, for tests that check the server's own
//! accounting against something independent of it.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Blocks under `dir` (st_blocks * 512), symlinks not followed; entries
/// that vanish while it walks are passed over.
pub fn du(dir: &Path) -> u64 {
    let mut total = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            total += meta.blocks() * 512;
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    total
}
