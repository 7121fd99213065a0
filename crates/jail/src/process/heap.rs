//! How much freed memory the agent's heap keeps. glibc trims the heap top
//! (and moves its mmap threshold) as it goes, so a command's buffers (two
//! 64 KiB output reads, its frames) were a brk grow and shrink, and fresh
//! pages to fault in, every time: under gVisor's ptrace platform each brk
//! and each fault is a trap into the sentry (about 0.1 ms for a brk, as
//! `runsc --strace` timed it here).

use std::io;

/// Keeps up to `kept` bytes of freed heap instead of trimming it, and
/// gives allocations from `own_mapping_from` bytes up a mapping of their
/// own at a fixed threshold. Call before other threads exist.
pub fn keep_freed_heap(kept: usize, own_mapping_from: usize) -> io::Result<()> {
    for (option, value) in [
        (libc::M_TRIM_THRESHOLD, kept),
        (libc::M_MMAP_THRESHOLD, own_mapping_from),
    ] {
        let value = libc::c_int::try_from(value)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "heap setting too large"))?;
        crate::sys::mallopt(option, value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_glibc_takes_are_accepted_and_oversized_ones_refused() {
        keep_freed_heap(8 << 20, 1 << 20).unwrap();
        // Past what mallopt takes (an int): refused, not truncated.
        assert!(keep_freed_heap(usize::MAX, 1 << 20).is_err());
    }
}
