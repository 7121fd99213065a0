//! Project memory over the API and the CLI: typed commands and views over
//! the runtime's memory operations.

use paddock_core::ids::{MemoryId, RunId, SessionId, TenantId, WorkspaceId};
use paddock_core::store::{
    MEMORY_TEXT_MAX, MemoryApproval, MemoryFilter, MemoryKind, MemoryRecord, MemoryScope,
    MemoryStatus,
};
use paddock_runtime::NewMemory;
use serde::{Deserialize, Serialize};

use super::{AgentError, AgentService};

/// Most records one listing or search returns.
pub const MEMORY_PAGE_MAX: u32 = 200;

/// A memory record as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MemoryView {
    pub id: MemoryId,
    pub scope: MemoryScope,
    pub workspace: Option<WorkspaceId>,
    pub project: Option<String>,
    pub kind: MemoryKind,
    pub text: String,
    pub status: MemoryStatus,
    pub source_run: Option<RunId>,
    pub source_session: Option<SessionId>,
    pub created_at: String,
    pub updated_at: String,
    pub superseded_by: Option<MemoryId>,
}

impl From<&MemoryRecord> for MemoryView {
    fn from(r: &MemoryRecord) -> Self {
        Self {
            id: r.id.clone(),
            scope: r.scope,
            workspace: r.workspace.clone(),
            project: r.project.clone(),
            kind: r.kind,
            text: r.text.clone(),
            status: r.status,
            source_run: r.source_run.clone(),
            source_session: r.source_session.clone(),
            created_at: r.created_at.to_string(),
            updated_at: r.updated_at.to_string(),
            superseded_by: r.superseded_by.clone(),
        }
    }
}

/// Add a memory record.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddMemory {
    pub kind: MemoryKind,
    /// At most 2000 characters.
    #[schema(
        pattern = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub text: String,
    /// Default: `workspace` when `workspace` is given, `project` when
    /// `project` is, else `tenant`.
    #[serde(default)]
    pub scope: Option<MemoryScope>,
    #[serde(default)]
    pub workspace: Option<WorkspaceId>,
    #[serde(default)]
    pub project: Option<String>,
    /// A record this one replaces (it is no longer recalled).
    #[serde(default)]
    pub supersedes: Option<MemoryId>,
}

/// Where an approved record applies beyond what it was written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WidenMemory {
    /// Every workspace of the tenant.
    Tenant,
}

impl WidenMemory {
    /// The store's approval for an optional widening.
    pub fn approval(widen: Option<Self>) -> MemoryApproval {
        match widen {
            None => MemoryApproval::AsWritten,
            Some(Self::Tenant) => MemoryApproval::WidenToTenant,
        }
    }
}

/// Which records a listing or search sees.
#[derive(Debug, Clone, Default)]
pub struct MemoryQuery {
    /// Full-text search words; None lists, newest first.
    pub text: Option<String>,
    pub workspace: Option<WorkspaceId>,
    pub project: Option<String>,
    pub kind: Option<MemoryKind>,
    pub include_proposed: bool,
    pub include_superseded: bool,
    pub limit: Option<u32>,
}

impl AddMemory {
    /// The checked record to add (the CLI adds through the runtime directly).
    pub fn validate(self) -> Result<NewMemory, AgentError> {
        let text = self.text.trim();
        if text.is_empty() {
            return Err(AgentError::invalid("text", "empty"));
        }
        if text.chars().count() > MEMORY_TEXT_MAX {
            return Err(AgentError::invalid("text", "longer than 2000 characters"));
        }
        let project = self.project.map(|p| p.trim().to_owned());
        if project
            .as_deref()
            .is_some_and(|p| p.is_empty() || p.len() > 200)
        {
            return Err(AgentError::invalid(
                "project",
                "expected 1 to 200 characters",
            ));
        }
        let scope = self.scope.unwrap_or(match (&self.workspace, &project) {
            (Some(_), _) => MemoryScope::Workspace,
            (None, Some(_)) => MemoryScope::Project,
            (None, None) => MemoryScope::Tenant,
        });
        let fits = match scope {
            MemoryScope::Tenant => self.workspace.is_none() && project.is_none(),
            MemoryScope::Workspace => self.workspace.is_some() && project.is_none(),
            MemoryScope::Project => self.workspace.is_none() && project.is_some(),
        };
        if !fits {
            return Err(AgentError::invalid(
                "scope",
                "workspace scope takes a workspace, project scope a project, tenant scope neither",
            ));
        }
        Ok(NewMemory {
            scope,
            workspace: self.workspace,
            project,
            kind: self.kind,
            text: text.to_owned(),
            supersedes: self.supersedes,
        })
    }
}

impl AgentService {
    pub async fn add_memory(
        &self,
        tenant: &TenantId,
        command: AddMemory,
    ) -> Result<MemoryView, AgentError> {
        let new = command.validate()?;
        let record = self
            .runtime()
            .add_memory(tenant, new)
            .await
            .map_err(AgentError::runtime("add_memory"))?;
        Ok(MemoryView::from(&record))
    }

    pub async fn memories(
        &self,
        tenant: &TenantId,
        query: MemoryQuery,
    ) -> Result<Vec<MemoryView>, AgentError> {
        let limit = query.limit.unwrap_or(50);
        if limit == 0 || limit > MEMORY_PAGE_MAX {
            return Err(AgentError::invalid(
                "limit",
                format!("expected 1 to {MEMORY_PAGE_MAX}"),
            ));
        }
        let filter = MemoryFilter {
            workspace: query.workspace,
            project: query.project,
            kind: query.kind,
            include_proposed: query.include_proposed,
            include_superseded: query.include_superseded,
            limit,
        };
        let records = match query.text.as_deref().map(str::trim) {
            Some(text) if !text.is_empty() => self
                .runtime()
                .search_memories(tenant, text, &filter)
                .await
                .map_err(AgentError::runtime("search_memories"))?,
            Some(_) => return Err(AgentError::invalid("q", "empty")),
            None => self
                .runtime()
                .memories(tenant, &filter)
                .await
                .map_err(AgentError::runtime("list_memories"))?,
        };
        Ok(records.iter().map(MemoryView::from).collect())
    }

    pub async fn memory(&self, tenant: &TenantId, id: &MemoryId) -> Result<MemoryView, AgentError> {
        let record = self
            .runtime()
            .memory(tenant, id)
            .await
            .map_err(AgentError::runtime("get_memory"))?;
        Ok(MemoryView::from(&record))
    }

    /// A person approves a record; `widen` makes it the tenant's.
    pub async fn approve_memory(
        &self,
        tenant: &TenantId,
        id: &MemoryId,
        widen: Option<WidenMemory>,
    ) -> Result<MemoryView, AgentError> {
        let record = self
            .runtime()
            .approve_memory(tenant, id, WidenMemory::approval(widen))
            .await
            .map_err(AgentError::runtime("approve_memory"))?;
        Ok(MemoryView::from(&record))
    }

    pub async fn forget(&self, tenant: &TenantId, id: &MemoryId) -> Result<(), AgentError> {
        self.runtime()
            .forget(tenant, id)
            .await
            .map_err(AgentError::runtime("delete_memory"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(json: serde_json::Value) -> Result<NewMemory, AgentError> {
        serde_json::from_value::<AddMemory>(json)
            .unwrap()
            .validate()
    }

    #[test]
    fn the_scope_follows_what_is_named_and_must_fit() {
        let ws = WorkspaceId::generate();
        assert_eq!(
            add(serde_json::json!({"kind": "fact", "text": " x ", "workspace": ws}))
                .unwrap()
                .scope,
            MemoryScope::Workspace
        );
        let tenant = add(serde_json::json!({"kind": "rule", "text": "y"})).unwrap();
        assert_eq!(
            (tenant.scope, tenant.text.as_str()),
            (MemoryScope::Tenant, "y")
        );
        assert!(
            add(serde_json::json!({"kind": "fact", "text": "x", "scope": "workspace"})).is_err()
        );
        assert!(add(serde_json::json!({"kind": "fact", "text": "  "})).is_err());
        assert!(add(serde_json::json!({"kind": "fact", "text": "x".repeat(2_001)})).is_err());
    }
}
