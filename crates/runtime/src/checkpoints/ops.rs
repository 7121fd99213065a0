//! What front ends do with checkpoints besides rewinding: list them, diff
//! two (or one and the workspace now), fork a session at one, and restore a
//! run's last one (a resumed run's fresh start).

use std::path::Path;
use std::sync::Arc;

use paddock_core::blob::{BlobKey, BlobStore};
use paddock_core::ids::{CheckpointId, RunId, SessionId, TenantId};
use paddock_core::store::{Checkpoint, HistoryPoint, Session, Workspace};
use paddock_snapshot::checkpoint::{
    CaptureOptions, ChangeKind, Manifest, Node, RestoreStats, diff, unified_text,
};
use serde::Serialize;

use super::{blocking, capture_stored, latest_of_workspace, load_manifest, read_blob};
use crate::error::RuntimeError;
use crate::runtime::Runtime;
use crate::workspace;

/// Largest file (each side) given a text diff.
const MAX_PATCH_FILE_BYTES: u64 = 1024 * 1024;
/// Most patch text one diff carries; later files get none.
const MAX_PATCH_TOTAL: usize = 4 * 1024 * 1024;

/// What changed between two checkpoints (or a checkpoint and the workspace now).
#[derive(Debug, Clone, Serialize)]
pub struct CheckpointDiff {
    /// None: from an empty workspace (the session had no checkpoint before).
    pub from: Option<CheckpointId>,
    /// None: to the workspace as it is now.
    pub to: Option<CheckpointId>,
    pub changes: Vec<FileChange>,
}

/// One path that differs.
#[derive(Debug, Clone, Serialize)]
pub struct FileChange {
    /// The path for display: bytes not in UTF-8 as `\xNN`
    /// ([`paddock_proto::FsPath::display`]).
    pub path: String,
    /// The path's raw bytes in standard base64 when it is not UTF-8 (None:
    /// `path` is the path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    pub change: ChangeKind,
    pub before: Option<Node>,
    pub after: Option<Node>,
    /// The unified diff of a text file (None: not text, too large, or not a
    /// file on either side).
    pub patch: Option<String>,
}

impl Runtime {
    /// The session's checkpoints, oldest first.
    pub async fn list_checkpoints(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Vec<Checkpoint>, RuntimeError> {
        self.get_session(tenant, session).await?;
        self.shared
            .store
            .list_checkpoints(tenant, session)
            .await
            .map_err(RuntimeError::store("list_checkpoints"))
    }

    /// A checkpoint of `session`.
    pub async fn get_checkpoint(
        &self,
        tenant: &TenantId,
        session: &SessionId,
        id: &CheckpointId,
    ) -> Result<Checkpoint, RuntimeError> {
        let checkpoint = self
            .shared
            .store
            .get_checkpoint(tenant, id)
            .await
            .map_err(RuntimeError::store("get_checkpoint"))?;
        if checkpoint.session != *session {
            return Err(RuntimeError::CheckpointNotInSession {
                checkpoint: id.clone(),
                session: session.clone(),
            });
        }
        Ok(checkpoint)
    }

    /// What changed from `from` to `to`. Without `to`: to the workspace now
    /// (captured for the purpose); without `from`: from the checkpoint
    /// before `to` (the latest one when `to` is the workspace now), or from
    /// nothing when there is none.
    pub async fn diff_checkpoints(
        &self,
        tenant: &TenantId,
        session_id: &SessionId,
        from: Option<&CheckpointId>,
        to: Option<&CheckpointId>,
    ) -> Result<CheckpointDiff, RuntimeError> {
        let shared = &self.shared;
        let blobs = shared.blobs.tenant(tenant);
        let session = self.get_session(tenant, session_id).await?;
        let all = self.list_checkpoints(tenant, session_id).await?;
        let find = |id: &CheckpointId| {
            all.iter().find(|c| c.id == *id).cloned().ok_or_else(|| {
                RuntimeError::CheckpointNotInSession {
                    checkpoint: id.clone(),
                    session: session_id.clone(),
                }
            })
        };
        let to_row = to.map(find).transpose()?;
        let from_row = match from {
            Some(id) => Some(find(id)?),
            None => match &to_row {
                Some(to) => all.iter().rev().find(|c| c.id < to.id).cloned(),
                None => all.last().cloned(),
            },
        };
        let before = match &from_row {
            Some(c) => load_manifest(&blobs, &c.manifest_hash).await?,
            None => Manifest::new(0),
        };
        let after = match &to_row {
            Some(c) => load_manifest(&blobs, &c.manifest_hash).await?,
            None => {
                let workspace = self.workspace_of(&session).await?;
                let dir = workspace::locate(&shared.config, &workspace).await?.dir;
                let previous = from_row.is_some().then(|| Arc::new(before.clone()));
                capture_stored(&blobs, &dir, previous, self.capture_options())
                    .await?
                    .manifest
            }
        };
        let mut changes = Vec::new();
        let mut patch_bytes = 0usize;
        for change in diff(&before, &after) {
            let shown = change.path.display();
            let patch = if patch_bytes < MAX_PATCH_TOTAL {
                self.patch(
                    &blobs,
                    &shown,
                    change.before.as_ref(),
                    change.after.as_ref(),
                )
                .await?
            } else {
                None
            };
            patch_bytes += patch.as_ref().map_or(0, String::len);
            changes.push(FileChange {
                path_bytes: change.path.bytes_b64(),
                path: shown,
                change: change.change,
                before: change.before,
                after: change.after,
                patch,
            });
        }
        Ok(CheckpointDiff {
            from: from_row.map(|c| c.id),
            to: to_row.map(|c| c.id),
            changes,
        })
    }

    async fn patch(
        &self,
        blobs: &Arc<dyn BlobStore>,
        path: &str,
        before: Option<&Node>,
        after: Option<&Node>,
    ) -> Result<Option<String>, RuntimeError> {
        let content = |node: Option<&Node>| match node {
            None => Ok(None),
            Some(Node::File { hash, size }) if *size <= MAX_PATCH_FILE_BYTES => {
                Ok(Some(hash.clone()))
            }
            Some(_) => Err(()),
        };
        let (Ok(old), Ok(new)) = (content(before), content(after)) else {
            return Ok(None);
        };
        let read = |key: Option<BlobKey>| async move {
            match key {
                Some(key) => read_blob(blobs, &key, MAX_PATCH_FILE_BYTES).await.map(Some),
                None => Ok(None),
            }
        };
        let old = read(old).await?;
        let new = read(new).await?;
        Ok(unified_text(path, old.as_deref(), new.as_deref()))
    }

    /// A new session with a workspace of its own holding the checkpoint's
    /// files, and the history, goals and plan of `session` up to it.
    pub async fn fork_at_checkpoint(
        &self,
        tenant: &TenantId,
        session_id: &SessionId,
        checkpoint_id: &CheckpointId,
        title: &str,
    ) -> Result<Session, RuntimeError> {
        let shared = &self.shared;
        let store = &shared.store;
        let source = self.get_session(tenant, session_id).await?;
        let checkpoint = self
            .get_checkpoint(tenant, session_id, checkpoint_id)
            .await?;
        let manifest =
            load_manifest(&shared.blobs.tenant(tenant), &checkpoint.manifest_hash).await?;
        let source_workspace = self.workspace_of(&source).await?;
        let workspace = Workspace::new(
            tenant.clone(),
            format!("{} (fork)", source_workspace.name),
            store.now(),
        );
        let target = workspace::workspace_dir(&shared.config, &workspace);
        workspace::ensure_dir(&target).await?;
        let restored = self.restore_manifest(tenant, &target, manifest, None).await;
        let created = match restored {
            Ok(_) => store
                .create_workspace(&workspace)
                .await
                .map_err(RuntimeError::store("create_workspace")),
            Err(err) => Err(err),
        };
        if let Err(err) = created {
            if let Err(cleanup) = tokio::fs::remove_dir_all(&target).await {
                tracing::warn!(path = %target.display(), error = %cleanup, "removing an unregistered fork workspace");
            }
            return Err(err);
        }
        let mut session = Session::new(tenant.clone(), workspace.id.clone(), title, store.now());
        session.forked_from = Some(source.id.clone());
        session.forked_at_run = Some(checkpoint.run.clone());
        session.shared_history = Some(
            self.history_share(
                &source,
                Some(&checkpoint.run),
                Some(HistoryPoint::of(&checkpoint)),
            )
            .await?,
        );
        store
            .create_session(&session)
            .await
            .map_err(RuntimeError::store("create_session"))?;
        self.copy_goals_and_plan(&source, &session, Some(&checkpoint.run))
            .await?;
        tracing::info!(
            session_id = %session.id,
            forked_from = %source.id,
            checkpoint_id = %checkpoint.id,
            "session forked at a checkpoint"
        );
        Ok(session)
    }

    /// The last checkpoint `run` took of its session's workspace, else the
    /// session's latest one of it from before `run`.
    pub(crate) async fn last_checkpoint_of(
        &self,
        tenant: &TenantId,
        run: &RunId,
    ) -> Result<Option<Checkpoint>, RuntimeError> {
        let run = self.get_run(tenant, run).await?;
        let session = self.get_session(tenant, &run.session).await?;
        let all = self.list_checkpoints(tenant, &session.id).await?;
        let own = all
            .iter()
            .rev()
            .find(|c| c.run == run.id && c.workspace == session.workspace);
        let earlier = || {
            all.iter()
                .rev()
                .find(|c| c.workspace == session.workspace && c.run.as_str() < run.id.as_str())
        };
        Ok(own.or_else(earlier).cloned())
    }

    /// Makes `dir` what `manifest` (of `tenant`'s checkpoints) records;
    /// `hint` saves re-hashing files whose stat it has.
    pub(crate) async fn restore_manifest(
        &self,
        tenant: &TenantId,
        dir: &Path,
        manifest: Manifest,
        hint: Option<Manifest>,
    ) -> Result<RestoreStats, RuntimeError> {
        let blobs = self.shared.blobs.tenant(tenant);
        let options = self.capture_options();
        let path = dir.to_path_buf();
        blocking(format!("restoring {}", dir.display()), move || {
            paddock_snapshot::checkpoint::restore(
                &path,
                &manifest,
                hint.as_ref(),
                &options,
                blobs.as_ref(),
            )
            .map_err(|source| RuntimeError::Checkpoint { path, source })
        })
        .await
    }

    /// What a checkpoint leaves out and may hold: the snapshot settings.
    pub(crate) fn capture_options(&self) -> CaptureOptions {
        capture_options(&self.shared.config)
    }

    pub(crate) async fn workspace_of(&self, session: &Session) -> Result<Workspace, RuntimeError> {
        self.shared
            .store
            .get_workspace(&session.tenant, &session.workspace)
            .await
            .map_err(RuntimeError::store("get_workspace"))
    }

    /// The latest checkpoint of the session's workspace, if any.
    pub(crate) async fn latest_checkpoint(
        &self,
        session: &Session,
    ) -> Result<Option<Checkpoint>, RuntimeError> {
        latest_of_workspace(
            &self.shared.store,
            &session.tenant,
            &session.id,
            &session.workspace,
        )
        .await
    }
}

pub(crate) fn capture_options(config: &crate::config::RuntimeConfig) -> CaptureOptions {
    CaptureOptions {
        excludes: config.snapshot.excludes.clone(),
        limits: config.snapshot.limits,
        disk_budget: None,
    }
}
