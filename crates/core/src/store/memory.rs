//! What outlives a run's context: compactions of a session's history, the
//! session's own memory, and project memory records found again by search.

use serde::{Deserialize, Serialize};

use super::Timestamp;
use crate::ids::{MemoryId, RunId, SessionId, TenantId, WorkspaceId};

/// One compaction of a session's history: the messages up to and including
/// `through_seq` were replaced by `summary` in the context a model sees. The
/// stored messages stay; a later run rebuilds its context from the latest
/// compaction plus the messages after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compaction {
    pub tenant: TenantId,
    pub session: SessionId,
    pub run: RunId,
    /// Per-session number, from 1; the latest compaction has the highest.
    pub seq: u64,
    /// The last message sequence number the summary replaces.
    pub through_seq: u64,
    /// Messages the summary replaced (the previous summary among them).
    pub replaced_messages: u64,
    pub summary: String,
    /// The summary was built without the model (its call failed).
    pub fallback: bool,
    /// Estimated request tokens before and after.
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub created_at: Timestamp,
}

/// What a session knows about itself, updated at the end of every run and at
/// each compaction, so an old session can be understood without its history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionMemory {
    pub summary: String,
    #[serde(default)]
    pub open_questions: Vec<String>,
    #[serde(default)]
    pub next_steps: Vec<String>,
    /// Facts about the workspace learned on the way (build commands, layout).
    #[serde(default)]
    pub facts: Vec<String>,
}

/// A session's memory as stored: which run wrote it last, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSessionMemory {
    pub tenant: TenantId,
    pub session: SessionId,
    pub run: RunId,
    pub memory: SessionMemory,
    pub updated_at: Timestamp,
}

text_enum!(
    /// What a memory record is about.
    MemoryKind {
        /// How the user likes things done.
        Preference => "preference",
        /// How this code base does things.
        Convention => "convention",
        /// Something that went wrong and how to avoid it.
        Pitfall => "pitfall",
        Fact => "fact",
        /// A rule that must be followed.
        Rule => "rule",
    }
);

text_enum!(
    /// Who a memory record is for.
    MemoryScope {
        /// Every workspace of the tenant.
        Tenant => "tenant",
        /// One workspace (`MemoryRecord::workspace`).
        Workspace => "workspace",
        /// The workspaces of one project (`MemoryRecord::project`).
        Project => "project",
    }
);

text_enum!(
    /// Whether a memory record is in force.
    MemoryStatus {
        /// Retrieved into runs and found by recall.
        Active => "active",
        /// Written by a run (its `remember` tool, or an end-of-run review),
        /// waiting for a person to approve it; not retrieved before.
        Proposed => "proposed",
    }
);

/// One project memory record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryRecord {
    pub id: MemoryId,
    pub tenant: TenantId,
    pub scope: MemoryScope,
    /// Set for workspace scope.
    pub workspace: Option<WorkspaceId>,
    /// Set for project scope.
    pub project: Option<String>,
    pub kind: MemoryKind,
    pub text: String,
    pub status: MemoryStatus,
    pub source_run: Option<RunId>,
    pub source_session: Option<SessionId>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// The record that replaced this one; a superseded record is not recalled.
    pub superseded_by: Option<MemoryId>,
}

/// Which memory records a listing or a search sees: the tenant's own, those
/// of `workspace` and of `project` when given; active ones unless
/// `include_proposed`; never superseded ones unless `include_superseded`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemoryFilter {
    pub workspace: Option<WorkspaceId>,
    pub project: Option<String>,
    pub kind: Option<MemoryKind>,
    pub include_proposed: bool,
    pub include_superseded: bool,
    pub limit: u32,
}

/// Where a record applies once a person approves it. A run only ever
/// proposes records of its own workspace; widening one to every workspace
/// of the tenant is a person's explicit choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryApproval {
    /// The scope it was written with.
    #[default]
    AsWritten,
    /// Every workspace of the tenant (its workspace or project is dropped).
    WidenToTenant,
}

/// Most characters of one memory record's text.
pub const MEMORY_TEXT_MAX: usize = 2_000;
