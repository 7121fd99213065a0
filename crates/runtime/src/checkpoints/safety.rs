//! Nothing a rewind or a resume's restore overwrites is lost. Before either
//! writes, the workspace as it is is captured and compared with the
//! checkpoint it was last recorded in: a path that differs was changed
//! outside paddock (or by an interrupted run's last calls), and the
//! overwrite is refused naming it unless the caller forces it
//! ([`RuntimeError::WorkspaceChanged`]). Going on, the capture is recorded
//! as a `run_start` checkpoint of the run that overwrites (the state a user
//! can always go back to) before anything is written, so a rewind to it
//! undoes the overwrite.

use paddock_core::ids::{CheckpointId, SessionId};
use paddock_core::store::CheckpointReason;
use paddock_snapshot::checkpoint::{Manifest, diff};

use super::{Capture, Checkpointer};
use crate::error::RuntimeError;

/// Most paths an answer names; the rest are counted.
const NAMED_PATHS: usize = 20;

/// The workspace as it is, captured (its files stored, no row yet), and
/// the paths that differ from the checkpoint it was compared with.
#[derive(Debug)]
pub(crate) struct Guarded {
    pub(crate) capture: Capture,
    pub(crate) changed: Vec<String>,
}

impl Guarded {
    /// The manifest of the workspace as it was captured.
    pub(crate) fn manifest(&self) -> &Manifest {
        &self.capture.manifest
    }
}

/// The last recorded state an overwrite is checked against: a checkpoint
/// and its manifest (None: it could not be read, so every path counts as
/// changed; the check fails closed).
pub(crate) struct Baseline<'a> {
    pub(crate) checkpoint: &'a CheckpointId,
    pub(crate) manifest: Option<&'a Manifest>,
}

/// Captures the workspace of `checkpointer` and compares it with `last`;
/// refused when something differs and `force` is false.
pub(crate) async fn guard(
    checkpointer: &mut Checkpointer,
    session: &SessionId,
    last: Baseline<'_>,
    force: bool,
) -> Result<Guarded, RuntimeError> {
    let Some(capture) = checkpointer.capture(CheckpointReason::RunStart).await? else {
        // only a tool batch's capture may be skipped
        return Err(RuntimeError::Invalid {
            reason: "the workspace's capture before an overwrite was skipped".to_owned(),
        });
    };
    let empty;
    let before = match last.manifest {
        Some(manifest) => manifest,
        None => {
            empty = Manifest::new(0);
            &empty
        }
    };
    let changed: Vec<String> = diff(before, &capture.manifest)
        .into_iter()
        .map(|change| change.path.display())
        .collect();
    if !changed.is_empty() {
        tracing::info!(
            session_id = %session,
            checkpoint_id = %last.checkpoint,
            changed = changed.len(),
            force,
            "the workspace changed since its last checkpoint"
        );
        if !force {
            return Err(RuntimeError::WorkspaceChanged {
                session: session.clone(),
                checkpoint: last.checkpoint.clone(),
                paths: changed,
            });
        }
    }
    Ok(Guarded { capture, changed })
}

/// `paths` for people: the first [`NAMED_PATHS`], then how many more.
pub(crate) fn name_paths(paths: &[String]) -> String {
    let mut named = paths
        .iter()
        .take(NAMED_PATHS)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > NAMED_PATHS {
        named.push_str(&format!(" and {} more", paths.len() - NAMED_PATHS));
    }
    named
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_list_is_cut_and_counted() {
        let paths: Vec<String> = (0..25).map(|i| format!("f{i}")).collect();
        let named = name_paths(&paths);
        assert!(named.starts_with("f0, f1, "), "{named}");
        assert!(named.ends_with("f19 and 5 more"), "{named}");
        assert_eq!(name_paths(&["a".to_owned()]), "a");
    }
}
