//! What front ends do with memory, through the [`Runtime`]: a session's
//! memory, and project memory records (list, search, add, show, approve,
//! supersede, remove).

use paddock_core::ids::{MemoryId, SessionId, TenantId};
use paddock_core::store::{
    MemoryApproval, MemoryFilter, MemoryKind, MemoryRecord, MemoryScope, MemoryStatus,
    QuarantinedRow, StoredSessionMemory,
};

use crate::error::RuntimeError;
use crate::runtime::Runtime;

/// A record a person adds (`paddock memory add`, `POST /v1/memory`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMemory {
    pub scope: MemoryScope,
    pub workspace: Option<paddock_core::ids::WorkspaceId>,
    pub project: Option<String>,
    pub kind: MemoryKind,
    pub text: String,
    /// The record this one replaces.
    pub supersedes: Option<MemoryId>,
}

impl Runtime {
    /// The rows the store took out because they failed validation when read
    /// (`paddock doctor`): `tenant`'s, or with None every tenant's.
    pub async fn quarantined(
        &self,
        tenant: Option<&TenantId>,
        limit: u32,
    ) -> Result<Vec<QuarantinedRow>, RuntimeError> {
        self.shared
            .store
            .list_quarantined(tenant, limit)
            .await
            .map_err(RuntimeError::store("list_quarantined"))
    }

    /// The session's memory, if a run ever left one.
    pub async fn session_memory(
        &self,
        tenant: &TenantId,
        session: &SessionId,
    ) -> Result<Option<StoredSessionMemory>, RuntimeError> {
        self.shared
            .store
            .get_session_memory(tenant, session)
            .await
            .map_err(RuntimeError::store("get_session_memory"))
    }

    pub async fn add_memory(
        &self,
        tenant: &TenantId,
        new: NewMemory,
    ) -> Result<MemoryRecord, RuntimeError> {
        let store = &self.shared.store;
        if let Some(ws) = &new.workspace {
            store
                .get_workspace(tenant, ws)
                .await
                .map_err(RuntimeError::store("get_workspace"))?;
        }
        let now = store.now();
        let record = MemoryRecord {
            id: MemoryId::generate(),
            tenant: tenant.clone(),
            scope: new.scope,
            workspace: new.workspace,
            project: new.project,
            kind: new.kind,
            text: new.text.trim().to_owned(),
            status: MemoryStatus::Active,
            source_run: None,
            source_session: None,
            created_at: now,
            updated_at: now,
            superseded_by: None,
        };
        store
            .create_memory(&record)
            .await
            .map_err(RuntimeError::store("create_memory"))?;
        if let Some(old) = &new.supersedes {
            store
                .supersede_memory(tenant, old, &record.id)
                .await
                .map_err(RuntimeError::store("supersede_memory"))?;
        }
        Ok(record)
    }

    pub async fn memories(
        &self,
        tenant: &TenantId,
        filter: &MemoryFilter,
    ) -> Result<Vec<MemoryRecord>, RuntimeError> {
        self.shared
            .store
            .list_memories(tenant, filter)
            .await
            .map_err(RuntimeError::store("list_memories"))
    }

    pub async fn search_memories(
        &self,
        tenant: &TenantId,
        query: &str,
        filter: &MemoryFilter,
    ) -> Result<Vec<MemoryRecord>, RuntimeError> {
        self.shared
            .store
            .search_memories(tenant, query, filter)
            .await
            .map_err(RuntimeError::store("search_memories"))
    }

    pub async fn memory(
        &self,
        tenant: &TenantId,
        id: &MemoryId,
    ) -> Result<MemoryRecord, RuntimeError> {
        self.shared
            .store
            .get_memory(tenant, id)
            .await
            .map_err(RuntimeError::store("get_memory"))
    }

    /// A person approves a record (a run's proposal), widening it to every
    /// workspace of the tenant only when `approval` says so.
    pub async fn approve_memory(
        &self,
        tenant: &TenantId,
        id: &MemoryId,
        approval: MemoryApproval,
    ) -> Result<MemoryRecord, RuntimeError> {
        self.shared
            .store
            .approve_memory(tenant, id, approval)
            .await
            .map_err(RuntimeError::store("approve_memory"))
    }

    pub async fn forget(&self, tenant: &TenantId, id: &MemoryId) -> Result<(), RuntimeError> {
        self.shared
            .store
            .delete_memory(tenant, id)
            .await
            .map_err(RuntimeError::store("delete_memory"))
    }
}
