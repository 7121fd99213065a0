//! Project memory in a run: the records relevant to its goal go into the
//! system prompt at the start, the agent adds and finds records with the
//! `remember` and `recall` tools ([`tools`]), and the end of a root run
//! proposes what it learned ([`candidates`]).

pub(crate) mod candidates;
mod service;
pub(crate) mod tools;

pub use service::NewMemory;

use std::sync::Arc;

use paddock_core::ids::{MemoryId, RunId, SessionId, TenantId, WorkspaceId};
use paddock_core::store::{
    MemoryFilter, MemoryKind, MemoryRecord, MemoryScope, MemoryStatus, Store, StoreError,
};

/// Most records put into a run's system prompt.
pub(crate) const PROMPT_RECORDS: u32 = 8;
/// Most characters of one record quoted in the prompt or a recall.
const QUOTE_CHARS: usize = 400;

/// Where a run's memory is read from and written to: its tenant and
/// workspace, on behalf of its session and run.
#[derive(Debug, Clone)]
pub(crate) struct MemoryPlace {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) tenant: TenantId,
    pub(crate) workspace: WorkspaceId,
    pub(crate) session: SessionId,
    pub(crate) run: RunId,
}

impl MemoryPlace {
    /// What this run sees: the tenant's records and its workspace's.
    pub(crate) fn filter(&self, limit: u32) -> MemoryFilter {
        MemoryFilter {
            workspace: Some(self.workspace.clone()),
            limit,
            ..MemoryFilter::default()
        }
    }

    /// A new record from this run.
    pub(crate) fn record(
        &self,
        scope: MemoryScope,
        kind: MemoryKind,
        text: &str,
        status: MemoryStatus,
    ) -> MemoryRecord {
        let now = self.store.now();
        MemoryRecord {
            id: MemoryId::generate(),
            tenant: self.tenant.clone(),
            scope,
            workspace: (scope == MemoryScope::Workspace).then(|| self.workspace.clone()),
            project: None,
            kind,
            text: text.trim().to_owned(),
            status,
            source_run: Some(self.run.clone()),
            source_session: Some(self.session.clone()),
            created_at: now,
            updated_at: now,
            superseded_by: None,
        }
    }

    /// The records relevant to `goal`, with the rules always among them.
    pub(crate) async fn for_goal(&self, goal: &str) -> Result<Vec<MemoryRecord>, StoreError> {
        let mut found = self
            .store
            .search_memories(&self.tenant, goal, &self.filter(PROMPT_RECORDS))
            .await?;
        let rules = MemoryFilter {
            kind: Some(MemoryKind::Rule),
            ..self.filter(PROMPT_RECORDS)
        };
        for rule in self.store.list_memories(&self.tenant, &rules).await? {
            if found.len() >= PROMPT_RECORDS as usize {
                break;
            }
            if !found.iter().any(|r| r.id == rule.id) {
                found.push(rule);
            }
        }
        Ok(found)
    }
}

/// One record as the model reads it.
pub(crate) fn quote(record: &MemoryRecord) -> String {
    let text: String = record.text.chars().take(QUOTE_CHARS).collect();
    format!("- [{}] {} ({})", record.kind, text.trim(), record.id)
}

/// The system prompt's section of project memory; None without records.
pub(crate) fn prompt_section(records: &[MemoryRecord]) -> Option<String> {
    if records.is_empty() {
        return None;
    }
    let lines: Vec<String> = records.iter().map(quote).collect();
    Some(format!(
        "Project memory (kept from earlier sessions of this workspace; check before relying \
         on it, and use recall to search for more):\n{}\n",
        lines.join("\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_core::store::Timestamp;

    #[test]
    fn the_prompt_section_quotes_kind_text_and_id() {
        assert_eq!(prompt_section(&[]), None);
        let id = MemoryId::generate();
        let record = MemoryRecord {
            id: id.clone(),
            tenant: TenantId::parse("acme").unwrap(),
            scope: MemoryScope::Tenant,
            workspace: None,
            project: None,
            kind: MemoryKind::Convention,
            text: format!("  use nextest {}", "x".repeat(500)),
            status: MemoryStatus::Active,
            source_run: None,
            source_session: None,
            created_at: Timestamp::from_millis(0),
            updated_at: Timestamp::from_millis(0),
            superseded_by: None,
        };
        let section = prompt_section(&[record]).unwrap();
        assert!(section.starts_with("Project memory"));
        assert!(section.contains("- [convention] use nextest xxx"));
        assert!(section.contains(&format!("({id})")));
        assert!(section.len() < 700);
    }
}
