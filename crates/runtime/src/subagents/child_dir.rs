//! A child's workspace directory on the host, from its copy to its removal.
//!
//! Nothing reads it once the child's run ended: the run task returns only
//! after its sandbox was destroyed (the monitor reaped) and its end snapshot
//! packed, and the change set is read from the blob store, never from the
//! directory. So it is removed as soon as the run ended with an end snapshot
//! recorded; without one, when the parent ends. A child whose run task
//! failed keeps its directory: whether its sandbox is gone is not known.
//! Read-only children that share files through hard links lose nothing when
//! another one's tree goes: the inodes live while any link does.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DirState {
    /// The child's run may still use it.
    InUse,
    /// The run ended and its sandbox is gone.
    Idle,
    /// The run task failed: its sandbox may still be going down.
    Unknown,
    Removed,
}

#[derive(Debug)]
pub(crate) struct ChildDir {
    path: PathBuf,
    state: Mutex<DirState>,
}

impl ChildDir {
    pub(crate) fn new(path: PathBuf) -> Self {
        Self {
            path,
            state: Mutex::new(DirState::InUse),
        }
    }

    fn set(&self, state: DirState) -> DirState {
        let mut current = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *current, state)
    }

    /// The child's run task returned: its sandbox is gone. The directory is
    /// removed now if the run's end snapshot was recorded.
    pub(crate) async fn run_ended(&self, end_snapshot: bool) {
        self.set(DirState::Idle);
        if end_snapshot {
            self.release().await;
        }
    }

    /// The child's run task failed: the directory is kept.
    pub(crate) fn run_lost(&self) {
        self.set(DirState::Unknown);
        tracing::warn!(
            path = %self.path.display(),
            "keeping a subagent's workspace: its run task failed, its sandbox may still use it"
        );
    }

    /// Removes the directory if its run ended (the parent calls this when it ends).
    pub(crate) async fn release(&self) {
        let previous = self.set(DirState::Removed);
        if previous != DirState::Idle {
            self.set(previous);
            return;
        }
        remove(&self.path).await;
    }
}

/// Removes a subagent's workspace directory; one that is not there is fine.
pub(crate) async fn remove(dir: &Path) {
    match tokio::fs::remove_dir_all(dir).await {
        Ok(()) => tracing::debug!(path = %dir.display(), "removed a subagent's workspace"),
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => {
            tracing::warn!(path = %dir.display(), error = %err, "removing a subagent's workspace");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_directory_goes_only_once_its_run_ended() -> anyhow::Result<()> {
        let root = tempfile::tempdir()?;
        let path = root.path().join("child");
        std::fs::create_dir_all(path.join("src"))?;
        std::fs::write(path.join("src/a.txt"), "a")?;
        let dir = ChildDir::new(path.clone());
        dir.release().await;
        assert!(path.exists(), "in use: kept");
        dir.run_lost();
        dir.release().await;
        assert!(path.exists(), "its sandbox may be up: kept");

        let dir = ChildDir::new(path.clone());
        dir.run_ended(false).await;
        assert!(path.exists(), "no end snapshot: kept until the parent ends");
        dir.release().await;
        assert!(!path.exists());
        dir.release().await;
        Ok(())
    }
}
