//! Sessions: create, list, rename, archive, and fork (from now or from the
//! end of an earlier run, into a new workspace directory, sharing the
//! history).

use std::path::Path;

use paddock_core::ids::{GoalId, RunId, SessionId, TenantId, WorkspaceId};
use paddock_core::store::{
    Goal, HistoryPoint, Lease, Page, Session, SessionPatch, SessionStatus, SharedHistory,
    SnapshotRecord, StoreError, Workspace,
};

use crate::error::RuntimeError;
use crate::runtime::Runtime;
use crate::util::error_chain;
use crate::workspace::{self, SnapshotSource};

impl Runtime {
    /// The tenant's workspace for the host directory `dir`, registered on
    /// first use. `dir` must exist; it is identified by its canonical path.
    pub async fn workspace_for_dir(
        &self,
        tenant: &TenantId,
        dir: &Path,
    ) -> Result<Workspace, RuntimeError> {
        let canonical =
            tokio::fs::canonicalize(dir)
                .await
                .map_err(|source| RuntimeError::WorkspaceDir {
                    path: dir.to_path_buf(),
                    source,
                })?;
        if !canonical.is_dir() {
            return Err(RuntimeError::Invalid {
                reason: format!("{} is not a directory", canonical.display()),
            });
        }
        let root = canonical
            .to_str()
            .ok_or_else(|| RuntimeError::Invalid {
                reason: format!("{} is not valid UTF-8", canonical.display()),
            })?
            .to_owned();
        let store = &self.shared.store;
        if let Some(found) = store
            .find_workspace_by_root(tenant, &root)
            .await
            .map_err(RuntimeError::store("find_workspace_by_root"))?
        {
            return Ok(found);
        }
        let name = canonical
            .file_name()
            .map_or_else(|| root.clone(), |n| n.to_string_lossy().into_owned());
        let mut workspace = Workspace::new(tenant.clone(), name, store.now());
        workspace.root = Some(root.clone());
        match store.create_workspace(&workspace).await {
            Ok(()) => Ok(workspace),
            // registered concurrently: use that one
            Err(StoreError::Conflict { .. }) => store
                .find_workspace_by_root(tenant, &root)
                .await
                .map_err(RuntimeError::store("find_workspace_by_root"))?
                .ok_or_else(|| RuntimeError::NotFound {
                    entity: "workspace",
                    id: root,
                }),
            Err(err) => Err(RuntimeError::store("create_workspace")(err)),
        }
    }

    pub async fn create_session(
        &self,
        tenant: &TenantId,
        workspace: &WorkspaceId,
        title: &str,
    ) -> Result<Session, RuntimeError> {
        let store = &self.shared.store;
        store
            .get_workspace(tenant, workspace)
            .await
            .map_err(RuntimeError::store("get_workspace"))?;
        let session = Session::new(tenant.clone(), workspace.clone(), title, store.now());
        store
            .create_session(&session)
            .await
            .map_err(RuntimeError::store("create_session"))?;
        tracing::info!(session_id = %session.id, workspace_id = %workspace, "session created");
        Ok(session)
    }

    pub async fn get_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
    ) -> Result<Session, RuntimeError> {
        self.shared
            .store
            .get_session(tenant, id)
            .await
            .map_err(RuntimeError::store("get_session"))
    }

    pub async fn list_sessions(
        &self,
        tenant: &TenantId,
        workspace: Option<&WorkspaceId>,
        page: &Page,
    ) -> Result<Vec<Session>, RuntimeError> {
        self.shared
            .store
            .list_sessions(tenant, workspace, page)
            .await
            .map_err(RuntimeError::store("list_sessions"))
    }

    pub async fn rename_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
        title: &str,
    ) -> Result<Session, RuntimeError> {
        let patch = SessionPatch {
            title: Some(title.to_owned()),
            status: None,
        };
        self.shared
            .store
            .update_session(tenant, id, &patch)
            .await
            .map_err(RuntimeError::store("update_session"))
    }

    /// Archives the session; refused while one of its runs is in progress here.
    pub async fn archive_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
    ) -> Result<Session, RuntimeError> {
        let busy = self
            .shared
            .active()
            .values()
            .any(|active| active.session == *id);
        if busy {
            return Err(RuntimeError::SessionBusy {
                session: id.clone(),
            });
        }
        let patch = SessionPatch {
            title: None,
            status: Some(SessionStatus::Archived),
        };
        self.shared
            .store
            .update_session(tenant, id, &patch)
            .await
            .map_err(RuntimeError::store("update_session"))
    }

    /// A new session with its own workspace directory, restored from the
    /// end snapshot of `at_run` (or from a fresh snapshot of the session's
    /// workspace when `at_run` is None), sharing the source's history up to
    /// that point (not a copy: see [`SharedHistory`]), with a copy of its
    /// goals and plan then.
    pub async fn fork_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
        at_run: Option<&RunId>,
        title: &str,
    ) -> Result<Session, RuntimeError> {
        let shared = &self.shared;
        let store = &shared.store;
        let source = self.get_session(tenant, id).await?;
        let source_workspace = store
            .get_workspace(tenant, &source.workspace)
            .await
            .map_err(RuntimeError::store("get_workspace"))?;
        let snapshot = match at_run {
            Some(run_id) => {
                let run = self.get_run(tenant, run_id).await?;
                if run.session != source.id {
                    return Err(RuntimeError::RunNotInSession {
                        run: run_id.clone(),
                        session: source.id.clone(),
                    });
                }
                let snapshot_id = run
                    .end_snapshot
                    .ok_or_else(|| RuntimeError::NoEndSnapshot {
                        run: run_id.clone(),
                    })?;
                store
                    .get_snapshot(tenant, &snapshot_id)
                    .await
                    .map_err(RuntimeError::store("get_snapshot"))?
            }
            None => {
                let dir = workspace::locate(&shared.config, &source_workspace)
                    .await?
                    .dir;
                workspace::snapshot_dir(
                    store,
                    &shared.blobs,
                    &shared.config,
                    shared.config.snapshot.limits,
                    SnapshotSource {
                        tenant: tenant.clone(),
                        workspace: source_workspace.clone(),
                        dir,
                        session: Some(source.id.clone()),
                        sandbox: None,
                    },
                )
                .await?
            }
        };

        let workspace = self
            .restore_workspace(tenant, &source_workspace, &snapshot)
            .await?;
        let mut session = Session::new(tenant.clone(), workspace.id.clone(), title, store.now());
        session.forked_from = Some(source.id.clone());
        session.forked_at_run = at_run.cloned();
        session.shared_history = Some(self.history_share(&source, at_run, None).await?);
        store
            .create_session(&session)
            .await
            .map_err(RuntimeError::store("create_session"))?;
        self.copy_goals_and_plan(&source, &session, at_run).await?;
        tracing::info!(
            session_id = %session.id,
            forked_from = %source.id,
            at_run = ?at_run.map(RunId::as_str),
            snapshot_id = %snapshot.id,
            "session forked"
        );
        Ok(session)
    }

    /// A new workspace (under the workspaces root) holding `snapshot`.
    async fn restore_workspace(
        &self,
        tenant: &TenantId,
        source: &Workspace,
        snapshot: &SnapshotRecord,
    ) -> Result<Workspace, RuntimeError> {
        let shared = &self.shared;
        let workspace = Workspace::new(
            tenant.clone(),
            format!("{} (fork)", source.name),
            shared.store.now(),
        );
        let target = workspace::workspace_dir(&shared.config, &workspace);
        workspace::ensure_dir(&shared.config.workspaces_root).await?;
        workspace::restore_into(&shared.blobs, &shared.config, snapshot, &target).await?;
        if let Err(err) = shared.store.create_workspace(&workspace).await {
            if let Err(cleanup) = tokio::fs::remove_dir_all(&target).await {
                tracing::warn!(path = %target.display(), error = %cleanup, "removing an unregistered fork workspace");
            }
            return Err(RuntimeError::store("create_workspace")(err));
        }
        Ok(workspace)
    }

    /// The part of `source`'s history a fork from it shares: through
    /// `at_run` (every message of that run and the runs before it) and
    /// through the point `through` (a checkpoint's), as of that point or,
    /// without one, as of now (the store fixes "now" when it records the fork).
    pub(crate) async fn history_share(
        &self,
        source: &Session,
        at_run: Option<&RunId>,
        through: Option<HistoryPoint>,
    ) -> Result<SharedHistory, RuntimeError> {
        let at = through.unwrap_or(HistoryPoint::NOW);
        let upto_seq = match at_run {
            None => at.message_seq,
            Some(run) => self
                .shared
                .store
                .list_messages(&source.tenant, &source.id, Some(run))
                .await
                .map_err(RuntimeError::store("list_messages"))?
                .last()
                .map_or(0, |m| m.seq)
                .min(at.message_seq),
        };
        Ok(SharedHistory { upto_seq, at })
    }

    /// Copies the goals and the plan of `source` (through `at_run`) to
    /// `fork`, keeping their original run ids. Run ids are time-ordered,
    /// so "through `at_run`" is "run id <= at_run".
    pub(crate) async fn copy_goals_and_plan(
        &self,
        source: &Session,
        fork: &Session,
        at_run: Option<&RunId>,
    ) -> Result<(), RuntimeError> {
        let store = &self.shared.store;
        let tenant = &source.tenant;
        let upto = |run: &RunId| at_run.is_none_or(|at| run.as_str() <= at.as_str());
        let goals = store
            .list_goals(tenant, &source.id)
            .await
            .map_err(RuntimeError::store("list_goals"))?;
        let plan = store
            .get_plan(tenant, &source.id)
            .await
            .map_err(RuntimeError::store("get_plan"))?
            .filter(|plan| upto(&plan.run));

        let lease = store
            .acquire_lease(
                &Lease::session_resource(&fork.id),
                &format!("{}/fork", self.shared.config.node),
                self.shared.config.lease_ttl,
            )
            .await
            .map_err(RuntimeError::store("acquire_lease"))?;
        let copied = async {
            for goal in goals.into_iter().filter(|g| upto(&g.run)) {
                let copy = Goal {
                    id: GoalId::generate(),
                    session: fork.id.clone(),
                    ..goal
                };
                store
                    .create_goal(&lease, &copy)
                    .await
                    .map_err(RuntimeError::store("create_goal"))?;
            }
            if let Some(plan) = plan {
                let copy = paddock_core::store::Plan {
                    session: fork.id.clone(),
                    version: 0,
                    ..plan
                };
                store
                    .save_plan(&lease, &copy)
                    .await
                    .map_err(RuntimeError::store("save_plan"))?;
            }
            Ok::<_, RuntimeError>(())
        }
        .await;
        if let Err(err) = store.release_lease(&lease).await {
            tracing::warn!(session_id = %fork.id, error = %error_chain(&err), "releasing the fork's lease");
        }
        copied
    }
}
