//! Proof that the process is single-threaded, required by every fork-like
//! clone in this crate.

use crate::JailError;

/// Only [`count_threads`] makes one.
#[derive(Debug)]
pub(crate) struct SingleThreaded(());

/// What [`count_threads`] found.
#[derive(Debug)]
pub(crate) enum Threads {
    One(SingleThreaded),
    Many(u64),
}

pub(crate) fn count_threads() -> std::io::Result<Threads> {
    let threads = crate::init::reaper::thread_count()?;
    Ok(if threads == 1 {
        Threads::One(SingleThreaded(()))
    } else {
        Threads::Many(threads)
    })
}

pub(crate) fn ensure_single_threaded() -> Result<SingleThreaded, JailError> {
    match count_threads().map_err(JailError::CountThreads)? {
        Threads::One(single) => Ok(single),
        Threads::Many(threads) => Err(JailError::NotSingleThreaded { threads }),
    }
}
