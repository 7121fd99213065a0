//! `remember` and `recall`: the agent's hands on project memory. Both are
//! control tools that never touch the workspace (read-only for the policy),
//! so plan mode and read-only subagents have them too. `remember` stores a
//! *proposed* record of the run's own workspace (not replayed after a crash:
//! it would store it twice): what an agent writes reaches no system prompt
//! until a person approves it, and reaches another workspace's only when
//! that person widens it to the tenant (`paddock memory approve --tenant`).
//! The agent may run untrusted code, so it never chooses either. `recall`
//! searches what the run sees (its tenant's and its workspace's active
//! records).

use std::time::Duration;

use async_trait::async_trait;
use paddock_core::store::{MemoryKind, MemoryScope, MemoryStatus};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{MemoryPlace, quote};
use crate::tools::args::{contract_for, invalid, non_empty, parse_args};
use crate::tools::{
    Access, Replay, Role, Tool, ToolContext, ToolContract, ToolError, ToolOutput, ToolRegistry,
};
use crate::util::error_chain;

pub(crate) const REMEMBER: &str = "remember";
pub(crate) const RECALL: &str = "recall";
/// A store round trip; bounded so a stuck database fails the call, not the run.
const MEMORY_TIMEOUT: Duration = Duration::from_secs(10);
const RECALL_DEFAULT: u32 = 5;
const RECALL_MAX: u32 = 20;

/// [`MemoryKind`] as a tool argument.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum KindArg {
    Preference,
    Convention,
    Pitfall,
    Fact,
    Rule,
}

impl From<KindArg> for MemoryKind {
    fn from(kind: KindArg) -> Self {
        match kind {
            KindArg::Preference => MemoryKind::Preference,
            KindArg::Convention => MemoryKind::Convention,
            KindArg::Pitfall => MemoryKind::Pitfall,
            KindArg::Fact => MemoryKind::Fact,
            KindArg::Rule => MemoryKind::Rule,
        }
    }
}

/// Keep something for later sessions.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    /// What it is: preference, convention, pitfall, fact or rule.
    kind: KindArg,
    /// One self-contained sentence or two (at most 2000 characters).
    text: String,
}

/// Search project memory.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RecallArgs {
    /// Words to search for.
    query: String,
    /// Most records to return (default 5, at most 20).
    #[serde(default)]
    limit: Option<u32>,
}

/// Adds `remember` and `recall` for a run at `place` to its registry.
pub(crate) fn register(registry: &mut ToolRegistry, place: &MemoryPlace) {
    registry.register(std::sync::Arc::new(Remember::new(place.clone())));
    registry.register(std::sync::Arc::new(Recall::new(place.clone())));
}

#[derive(Debug)]
pub(crate) struct Remember {
    contract: ToolContract,
    place: MemoryPlace,
}

impl Remember {
    pub(crate) fn new(place: MemoryPlace) -> Self {
        Self {
            contract: contract_for::<RememberArgs>(
                REMEMBER,
                "Propose a preference, convention, pitfall, fact or rule about this workspace \
                 for later sessions; later runs see it once a person approves it. Keep it \
                 short and self-contained; do not store secrets.",
                Role::Control,
                Access::ReadOnly,
                Replay::Never,
                MEMORY_TIMEOUT,
            ),
            place,
        }
    }
}

fn failed(what: &str, err: &dyn std::error::Error) -> ToolOutput {
    ToolOutput {
        is_error: true,
        ..ToolOutput::text(format!("{what} failed: {}", error_chain(err)))
    }
}

#[async_trait]
impl Tool for Remember {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, _ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let args: RememberArgs = parse_args(REMEMBER, arguments)?;
        non_empty(REMEMBER, "text", &args.text)?;
        if args.text.chars().count() > paddock_core::store::MEMORY_TEXT_MAX {
            return Err(invalid(REMEMBER, "text is longer than 2000 characters"));
        }
        let record = self.place.record(
            MemoryScope::Workspace,
            args.kind.into(),
            &args.text,
            MemoryStatus::Proposed,
        );
        if let Err(err) = self.place.store.create_memory(&record).await {
            return Ok(failed("remember", &err));
        }
        Ok(ToolOutput {
            data: json!({
                "id": record.id,
                "kind": record.kind,
                "scope": record.scope,
                "status": record.status,
            }),
            ..ToolOutput::text(format!(
                "Proposed as {} for this workspace; later runs see it once a person approves it.",
                record.id
            ))
        })
    }
}

#[derive(Debug)]
pub(crate) struct Recall {
    contract: ToolContract,
    place: MemoryPlace,
}

impl Recall {
    pub(crate) fn new(place: MemoryPlace) -> Self {
        Self {
            contract: contract_for::<RecallArgs>(
                RECALL,
                "Search project memory (preferences, conventions, pitfalls, facts and rules \
                 kept from earlier sessions) for the given words; best matches first.",
                Role::Control,
                Access::ReadOnly,
                Replay::Safe,
                MEMORY_TIMEOUT,
            ),
            place,
        }
    }
}

#[async_trait]
impl Tool for Recall {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, _ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let args: RecallArgs = parse_args(RECALL, arguments)?;
        non_empty(RECALL, "query", &args.query)?;
        let limit = args.limit.unwrap_or(RECALL_DEFAULT).clamp(1, RECALL_MAX);
        let found = match self
            .place
            .store
            .search_memories(&self.place.tenant, &args.query, &self.place.filter(limit))
            .await
        {
            Ok(found) => found,
            Err(err) => return Ok(failed("recall", &err)),
        };
        let content = if found.is_empty() {
            "No memory matches.".to_owned()
        } else {
            found.iter().map(quote).collect::<Vec<_>>().join("\n")
        };
        let ids: Vec<&str> = found.iter().map(|r| r.id.as_str()).collect();
        Ok(ToolOutput {
            data: json!({"ids": ids}),
            ..ToolOutput::text(content)
        })
    }
}
