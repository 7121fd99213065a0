//! Sessions over the API: create, read, list, rename, archive, fork and
//! delete (a forced deletion cancels the session's runs first), and the
//! sessions of a workspace about to be deleted.

use paddock_core::ids::{RunId, SessionId, TenantId, WorkspaceId};
use paddock_core::store::{MAX_PAGE, Page, Run, Session, SessionMemory, SessionStatus};
use paddock_runtime::{RuntimeError, SessionDeleted};

use super::{AgentError, AgentService, CreateSession, ForkSession, SessionView, UpdateSession};

/// Longest title accepted, in characters.
const MAX_TITLE_CHARS: usize = 200;

impl AgentService {
    pub async fn create_session(
        &self,
        tenant: &TenantId,
        command: CreateSession,
    ) -> Result<SessionView, AgentError> {
        let title = title_or(command.title.as_deref(), "untitled")?;
        let session = self
            .runtime
            .create_session(tenant, &command.workspace, &title)
            .await
            .map_err(AgentError::runtime("create_session"))?;
        Ok(SessionView::from(&session))
    }

    pub async fn get_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
    ) -> Result<SessionView, AgentError> {
        let mut view = SessionView::from(&self.session(tenant, id).await?);
        view.memory = self.session_memory(tenant, id).await?;
        Ok(view)
    }

    async fn session_memory(
        &self,
        tenant: &TenantId,
        id: &SessionId,
    ) -> Result<Option<SessionMemory>, AgentError> {
        Ok(self
            .runtime
            .session_memory(tenant, id)
            .await
            .map_err(AgentError::runtime("session_memory"))?
            .map(|stored| stored.memory))
    }

    /// Oldest first; `after` (a session id) and `limit` page through them.
    pub async fn list_sessions(
        &self,
        tenant: &TenantId,
        workspace: Option<&WorkspaceId>,
        after: Option<SessionId>,
        limit: Option<u32>,
    ) -> Result<Vec<SessionView>, AgentError> {
        let limit = limit.unwrap_or(100);
        if limit == 0 || limit > MAX_PAGE {
            return Err(AgentError::invalid(
                "limit",
                format!("expected 1 to {MAX_PAGE}"),
            ));
        }
        let page = Page {
            after: after.map(String::from),
            limit,
        };
        let sessions = self
            .runtime
            .list_sessions(tenant, workspace, &page)
            .await
            .map_err(AgentError::runtime("list_sessions"))?;
        let mut views = Vec::with_capacity(sessions.len());
        for session in &sessions {
            let mut view = SessionView::from(session);
            view.memory = self.session_memory(tenant, &session.id).await?;
            views.push(view);
        }
        Ok(views)
    }

    /// Renames and/or archives. An archived session cannot be made active
    /// again (fork it instead).
    pub async fn update_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
        command: UpdateSession,
    ) -> Result<SessionView, AgentError> {
        let current = self.session(tenant, id).await?;
        if command.archived == Some(false) && current.status == SessionStatus::Archived {
            return Err(AgentError::invalid(
                "archived",
                "an archived session stays archived; fork it to continue its work",
            ));
        }
        if command.title.is_none() && command.archived.is_none() {
            return Err(AgentError::invalid(
                "body",
                "give `title`, `archived` or both",
            ));
        }
        let mut session = current;
        if let Some(title) = command.title.as_deref() {
            let title = title_or(Some(title), "")?;
            session = self
                .runtime
                .rename_session(tenant, id, &title)
                .await
                .map_err(AgentError::runtime("rename_session"))?;
        }
        if command.archived == Some(true) && session.status != SessionStatus::Archived {
            session = self.archive(tenant, id).await?;
        }
        Ok(SessionView::from(&session))
    }

    /// Archives the session (idempotent); a run in progress is cancelled first.
    pub async fn archive_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
    ) -> Result<SessionView, AgentError> {
        let session = self.session(tenant, id).await?;
        if session.status == SessionStatus::Archived {
            return Ok(SessionView::from(&session));
        }
        Ok(SessionView::from(&self.archive(tenant, id).await?))
    }

    /// Deletes the session for good (see [`Runtime::delete_session`]); with
    /// `force`, its unfinished runs are cancelled first and waited for (at
    /// most `CANCEL_WAIT`).
    ///
    /// [`Runtime::delete_session`]: paddock_runtime::Runtime::delete_session
    pub async fn delete_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
        force: bool,
    ) -> Result<SessionDeleted, AgentError> {
        if !force {
            return self
                .runtime
                .delete_session(tenant, id)
                .await
                .map_err(AgentError::runtime("delete_session"));
        }
        self.cancel_unfinished(tenant, id).await?;
        // a cancelled run lets go of its session just after it ends
        let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
        loop {
            match self.runtime.delete_session(tenant, id).await {
                Err(RuntimeError::RunInProgress { .. } | RuntimeError::SessionBusy { .. })
                    if tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                done => return done.map_err(AgentError::runtime("delete_session")),
            }
        }
    }

    /// Cancels the session's unfinished runs and waits until they end.
    async fn cancel_unfinished(&self, tenant: &TenantId, id: &SessionId) -> Result<(), AgentError> {
        let unfinished = |runs: Vec<Run>| -> Vec<RunId> {
            runs.into_iter()
                .filter(|run| !run.state.is_terminal())
                .map(|run| run.id)
                .collect()
        };
        let list = || async {
            self.runtime
                .list_runs(tenant, id)
                .await
                .map_err(AgentError::runtime("list_runs"))
        };
        for run in unfinished(list().await?) {
            match self.runtime.cancel_run(tenant, &run).await {
                Ok(_) | Err(RuntimeError::RunNotActive { .. }) => {}
                Err(err) => return Err(AgentError::runtime("cancel_run")(err)),
            }
        }
        let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
        while !unfinished(list().await?).is_empty() {
            if tokio::time::Instant::now() >= deadline {
                return Err(AgentError::runtime("delete_session")(RuntimeError::InUse {
                    entity: "session",
                    id: id.to_string(),
                    reason: format!(
                        "its runs did not end within {} s of being cancelled",
                        CANCEL_WAIT.as_secs()
                    ),
                }));
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// Before a workspace is deleted: refused (409 `workspace_in_use`,
    /// naming them) while a session in it is not archived; otherwise its
    /// archived sessions are deleted ([`Runtime::delete_session`], refused
    /// while one has forks elsewhere). The sandbox service then deletes the
    /// workspace.
    ///
    /// [`Runtime::delete_session`]: paddock_runtime::Runtime::delete_session
    pub async fn delete_workspace_sessions(
        &self,
        tenant: &TenantId,
        id: &WorkspaceId,
    ) -> Result<(), AgentError> {
        let mut sessions = Vec::new();
        let mut page = Page {
            after: None,
            limit: MAX_PAGE,
        };
        loop {
            let batch = self
                .runtime
                .list_sessions(tenant, Some(id), &page)
                .await
                .map_err(AgentError::runtime("list_sessions"))?;
            let Some(last) = batch.last() else { break };
            page.after = Some(last.id.to_string());
            sessions.extend(batch);
        }
        let live: Vec<String> = sessions
            .iter()
            .filter(|s| s.status != SessionStatus::Archived)
            .map(|s| s.id.to_string())
            .collect();
        if !live.is_empty() {
            let shown = live.iter().take(10).cloned().collect::<Vec<_>>().join(", ");
            let more = live.len().saturating_sub(10);
            return Err(AgentError::runtime("delete_workspace")(
                RuntimeError::InUse {
                    entity: "workspace",
                    id: id.to_string(),
                    reason: format!(
                        "sessions not archived work in it: {shown}{}; archive or delete them first",
                        if more > 0 {
                            format!(" and {more} more")
                        } else {
                            String::new()
                        }
                    ),
                },
            ));
        }
        for session in &sessions {
            match self.runtime.delete_session(tenant, &session.id).await {
                // deleted with its parent session (a subagent's)
                Ok(_) | Err(RuntimeError::NotFound { .. }) => {}
                Err(err) => return Err(AgentError::runtime("delete_session")(err)),
            }
        }
        Ok(())
    }

    async fn archive(&self, tenant: &TenantId, id: &SessionId) -> Result<Session, AgentError> {
        self.runtime
            .archive_session(tenant, id)
            .await
            .map_err(AgentError::runtime("archive_session"))
    }

    pub async fn fork_session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
        command: ForkSession,
    ) -> Result<SessionView, AgentError> {
        let title = match command.title.as_deref() {
            Some(title) => title_or(Some(title), "")?,
            None => fork_title(&self.session(tenant, id).await?.title),
        };
        let session = match (&command.at_checkpoint, &command.at_run) {
            (Some(_), Some(_)) => {
                return Err(AgentError::invalid(
                    "at_checkpoint",
                    "give at_run or at_checkpoint, not both",
                ));
            }
            (Some(checkpoint), None) => self
                .runtime
                .fork_at_checkpoint(tenant, id, checkpoint, &title)
                .await
                .map_err(AgentError::runtime("fork_at_checkpoint"))?,
            (None, at_run) => self
                .runtime
                .fork_session(tenant, id, at_run.as_ref(), &title)
                .await
                .map_err(AgentError::runtime("fork_session"))?,
        };
        Ok(SessionView::from(&session))
    }

    pub(super) async fn session(
        &self,
        tenant: &TenantId,
        id: &SessionId,
    ) -> Result<Session, AgentError> {
        self.runtime
            .get_session(tenant, id)
            .await
            .map_err(AgentError::runtime("get_session"))
    }
}

/// The default title of a fork of a session titled `title`.
pub fn fork_title(title: &str) -> String {
    let mut title: String = title.chars().take(MAX_TITLE_CHARS - 7).collect();
    title.push_str(" (fork)");
    title
}

/// A trimmed title, `default` when none is given; refused when empty or too long.
fn title_or(title: Option<&str>, default: &str) -> Result<String, AgentError> {
    let title = title.map_or(default, str::trim);
    if title.is_empty()
        || title.chars().count() > MAX_TITLE_CHARS
        || title.chars().any(char::is_control)
    {
        return Err(AgentError::invalid(
            "title",
            format!("expected 1 to {MAX_TITLE_CHARS} characters without control characters"),
        ));
    }
    Ok(title.to_owned())
}

/// Longest a forced deletion waits for the runs it cancelled to end.
const CANCEL_WAIT: std::time::Duration = std::time::Duration::from_secs(30);
