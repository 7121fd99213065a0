//! `paddock doctor` over the API and the CLI: the rows the store took out
//! of their tables because they failed validation when read.

use paddock_core::ids::TenantId;
use paddock_core::store::{MAX_PAGE, QuarantinedRow};
use serde::{Deserialize, Serialize};

use super::{AgentError, AgentService};

/// One quarantined row as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct QuarantineView {
    /// The table the row was moved out of (`messages`, `run_events`,
    /// `goals`, `memories`, `session_memories`; a `runs` or `sandboxes` row
    /// is copied and left in place, since other rows refer to it).
    pub table: String,
    /// The row's key in that table, e.g. `session_id=ses_... seq=4`.
    pub key: String,
    /// The row's tenant column as stored.
    pub tenant: Option<String>,
    /// Why it failed validation.
    pub reason: String,
    /// The row's columns as stored.
    #[schema(value_type = Object)]
    pub raw: serde_json::Value,
    pub quarantined_at: String,
}

impl From<&QuarantinedRow> for QuarantineView {
    fn from(row: &QuarantinedRow) -> Self {
        Self {
            table: row.table.clone(),
            key: row.key.clone(),
            tenant: row.tenant.clone(),
            reason: row.reason.clone(),
            raw: serde_json::from_str(&row.raw)
                .unwrap_or_else(|_| serde_json::Value::String(row.raw.clone())),
            quarantined_at: row.quarantined_at.to_string(),
        }
    }
}

impl AgentService {
    /// The tenant's quarantined rows, newest first.
    pub async fn quarantined(&self, tenant: &TenantId) -> Result<Vec<QuarantineView>, AgentError> {
        let rows = self
            .runtime()
            .quarantined(Some(tenant), MAX_PAGE)
            .await
            .map_err(AgentError::runtime("list_quarantined"))?;
        Ok(rows.iter().map(QuarantineView::from).collect())
    }
}
