//! Resource exhaustion: a fork bomb, a memory bomb and filling /tmp. Each is
//! bounded, so a sandbox without limits ends the probe instead of the host.

use std::ffi::CString;
use std::os::fd::RawFd;
use std::ptr;

use crate::Battery;
use crate::child::{
    Outcome, errno, errno_name, in_child_with_progress, kill_and_reap, report_progress, signal_name,
};

const MIB: u64 = 1 << 20;
/// The fork bomb gives up (and reports "not blocked") after this many children.
const FORK_BOMB_MAX: usize = 4096;
/// Without a configured limit, the memory bomb stops here.
const MEMORY_BOMB_DEFAULT_CAP: u64 = 1 << 30;
const MEMORY_CHUNK: usize = 8 << 20;
const FILL_CHUNK: usize = 1 << 20;
const TMP_FILL_PATH: &str = "/tmp/paddock-battery-fill";

pub fn run(b: &mut Battery, pids_limit: Option<u64>, memory_limit: Option<u64>) {
    b.probe("fork bomb", || fork_bomb(pids_limit));
    b.probe("fill /tmp", fill_tmp);
    b.probe("memory bomb", || memory_bomb(memory_limit));
}

fn fork_bomb(pids_limit: Option<u64>) -> (bool, String) {
    let mut children = Vec::new();
    let mut failure = None;
    while children.len() < FORK_BOMB_MAX {
        // SAFETY: the battery is single-threaded; the child only pauses until
        // the SIGKILL below (or its alarm) ends it.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: alarm arms a timer; pause waits for a signal.
            unsafe {
                libc::alarm(60);
                loop {
                    libc::pause();
                }
            }
        }
        if pid < 0 {
            failure = Some(errno());
            break;
        }
        children.push(pid);
    }
    for pid in &children {
        kill_and_reap(*pid);
    }
    let n = children.len() as u64;
    match (failure, pids_limit) {
        (Some(e), Some(limit)) if n < limit => (
            true,
            format!(
                "fork failed with {} after {n} children (pids limit {limit})",
                errno_name(e)
            ),
        ),
        (Some(e), Some(limit)) => (
            false,
            format!(
                "{n} children before fork failed ({}): NOT below the pids limit {limit}",
                errno_name(e)
            ),
        ),
        (Some(e), None) => (
            true,
            format!(
                "fork failed with {} after {n} children (no limit given)",
                errno_name(e)
            ),
        ),
        (None, _) => (false, format!("FORKED {n} children without failing")),
    }
}

/// Allocates and touches memory in a child until it is stopped.
fn memory_bomb(limit: Option<u64>) -> (bool, String) {
    let cap = limit.map_or(MEMORY_BOMB_DEFAULT_CAP, |l| l.saturating_mul(2));
    let (outcome, allocated) = in_child_with_progress(|fd| allocate_until(fd, cap));
    let mib = allocated / MIB;
    // Stopped "near the limit": not past it by more than 10 %.
    let within = limit.is_none_or(|l| allocated <= l + l / 10);
    let limit_text = limit.map_or("none given".to_string(), |l| format!("{} MiB", l / MIB));
    match outcome {
        Outcome::Signaled(libc::SIGKILL) if within => (
            true,
            format!("OOM-killed after {mib} MiB (limit {limit_text})"),
        ),
        Outcome::Exited(e) if e == libc::ENOMEM && within => (
            true,
            format!("allocation failed (ENOMEM) after {mib} MiB (limit {limit_text})"),
        ),
        Outcome::Exited(0) => (
            false,
            format!("ALLOCATED {mib} MiB (twice the limit {limit_text}) without being stopped"),
        ),
        other => (
            false,
            format!("stopped after {mib} MiB (limit {limit_text}) by {other:?}"),
        ),
    }
}

fn allocate_until(progress: RawFd, cap: u64) -> Result<(), i32> {
    // Volunteer as the OOM killer's first choice (may be refused: /proc is read-only).
    let _ = std::fs::write("/proc/self/oom_score_adj", "1000");
    let mut allocated = 0u64;
    while allocated < cap {
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let p = unsafe {
            libc::mmap(
                ptr::null_mut(),
                MEMORY_CHUNK,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(errno());
        }
        let base = p.cast::<u8>();
        for offset in (0..MEMORY_CHUNK).step_by(4096) {
            // SAFETY: `offset` is inside the MEMORY_CHUNK-byte mapping just made.
            unsafe { base.add(offset).write_volatile(1) };
        }
        allocated += MEMORY_CHUNK as u64;
        report_progress(progress, allocated);
    }
    Ok(())
}

/// Writes to /tmp in a child until the tmpfs is full.
fn fill_tmp() -> (bool, String) {
    let size = tmp_size();
    let cap = size.map_or(4 << 30, |s| s.saturating_mul(2) + 64 * MIB);
    let (outcome, written) = in_child_with_progress(|fd| write_until(fd, cap));
    let _ = std::fs::remove_file(TMP_FILL_PATH);
    let mib = written / MIB;
    let size_text = size.map_or("unknown".to_string(), |s| format!("{} MiB", s / MIB));
    let within = size.is_none_or(|s| written <= s + FILL_CHUNK as u64);
    match outcome {
        Outcome::Exited(e) if (e == libc::ENOSPC || e == libc::EFBIG) && within => (
            true,
            format!("{} after {mib} MiB (tmpfs size {size_text})", errno_name(e)),
        ),
        Outcome::Signaled(s) if (s == libc::SIGKILL || s == libc::SIGXFSZ) && within => (
            true,
            format!(
                "writer killed by {} after {mib} MiB (memory or file size limit; tmpfs size {size_text})",
                signal_name(s)
            ),
        ),
        other => (
            false,
            format!("WROTE {mib} MiB to /tmp (size {size_text}), ended by {other:?}"),
        ),
    }
}

fn write_until(progress: RawFd, cap: u64) -> Result<(), i32> {
    let path = CString::new(TMP_FILL_PATH).map_err(|_| crate::child::PROBE_ERROR)?;
    // SAFETY: a NUL-terminated path.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(errno());
    }
    let chunk = vec![0x5au8; FILL_CHUNK];
    let mut written = 0u64;
    while written < cap {
        // SAFETY: writes from a live buffer of FILL_CHUNK bytes.
        let n = unsafe { libc::write(fd, chunk.as_ptr().cast(), chunk.len()) };
        if n < 0 {
            return Err(errno());
        }
        if n == 0 {
            return Err(libc::ENOSPC);
        }
        written += n as u64;
        report_progress(progress, written);
    }
    Ok(())
}

fn tmp_size() -> Option<u64> {
    // SAFETY: statvfs is plain old data; all-zero is a valid value to fill.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a live statvfs to fill.
    if unsafe { libc::statvfs(c"/tmp".as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_blocks.saturating_mul(st.f_frsize))
}
