//! Proof that the process is single-threaded, required by every fork-like
//! clone in this crate.

use crate::JailError;

/// Only [`ensure_single_threaded`] makes one.
#[derive(Debug)]
pub(crate) struct SingleThreaded(());

pub(crate) fn ensure_single_threaded() -> Result<SingleThreaded, JailError> {
    let threads = crate::reaper::thread_count().map_err(JailError::CountThreads)?;
    if threads == 1 {
        Ok(SingleThreaded(()))
    } else {
        Err(JailError::NotSingleThreaded { threads })
    }
}
