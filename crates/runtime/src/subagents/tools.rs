//! The root agent's subagent tools. Each holds the family of the root run
//! it was made for, so only root runs with a family are offered them; the
//! runtime's own registry withholds their names, so a subagent that calls one
//! anyway is refused with the reason (depth 1).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::future::join_all;
use paddock_core::store::SubagentProfile;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::apply::{self, Applied, Conflict};
use super::changes;
use super::family::{Child, Family, SpawnError, SpawnRequest};
use super::report::ChangeSetState;
use crate::tools::args::{bounded, contract_for, invalid, non_empty, parse_args};
use crate::tools::{
    Access, Effect, Replay, Role, Tool, ToolContext, ToolContract, ToolError, ToolOutput,
    ToolRegistry, WriteScope, paths,
};

pub(crate) const SPAWN: &str = "spawn_subagent";
pub(crate) const WAIT: &str = "wait_subagents";
pub(crate) const MESSAGE: &str = "message_subagent";
pub(crate) const STOP: &str = "stop_subagent";
pub(crate) const APPLY: &str = "apply_subagent_changes";
pub(crate) const REJECT: &str = "reject_subagent_changes";
const NAMES: [&str; 6] = [SPAWN, WAIT, MESSAGE, STOP, APPLY, REJECT];

const NOT_ROOT: &str = "only a root run has subagents: a subagent cannot spawn or manage \
                        subagents (depth 1); do the work yourself or report it as remaining";

/// Default and longest wait of `wait_subagents`, in seconds.
const WAIT_DEFAULT_SECS: u64 = 600;
const WAIT_MAX_SECS: u64 = 3_600;
/// How long `stop_subagent` waits for the child to end.
const STOP_WAIT: Duration = Duration::from_secs(120);
const MESSAGE_MAX_CHARS: usize = 8_000;

/// Adds the subagent tools of `family`'s root run to the run's registry.
pub(crate) fn register_tools(registry: &mut ToolRegistry, family: &Arc<Family>) {
    let tools: [Arc<dyn Tool>; 6] = [
        Arc::new(SpawnSubagent::new(Arc::clone(family))),
        Arc::new(WaitSubagents::new(Arc::clone(family))),
        Arc::new(MessageSubagent::new(Arc::clone(family))),
        Arc::new(StopSubagent::new(Arc::clone(family))),
        Arc::new(ApplySubagentChanges::new(Arc::clone(family))),
        Arc::new(RejectSubagentChanges::new(Arc::clone(family))),
    ];
    for tool in tools {
        registry.register(tool);
    }
}

/// Refuses the subagent tools' names in a registry without them (the one
/// subagents run with), saying why.
pub(crate) fn withhold_tools(registry: &mut ToolRegistry) {
    for name in NAMES {
        registry.withhold(name, NOT_ROOT);
    }
}

fn child(tool: &str, family: &Family, reference: &str) -> Result<Arc<Child>, ToolError> {
    family.find(reference.trim()).ok_or_else(|| {
        let known: Vec<String> = family
            .children()
            .iter()
            .map(|c| format!("{} (task {})", c.run, c.task_id))
            .collect();
        invalid(
            tool,
            if known.is_empty() {
                format!("no subagent {reference:?}: this run has spawned none")
            } else {
                format!(
                    "no subagent {reference:?}; this run's are: {}",
                    known.join(", ")
                )
            },
        )
    })
}

fn output(content: String, data: Value, is_error: bool) -> ToolOutput {
    ToolOutput {
        content,
        is_error,
        data,
        effects: Vec::new(),
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// What a child's entry in a result looks like, finished or not.
fn view(child: &Child) -> Value {
    match child.report() {
        Some(report) => serde_json::to_value(&report).unwrap_or(Value::Null),
        None => json!({
            "run_id": child.run,
            "session_id": child.session,
            "task_id": child.task_id,
            "profile": child.profile,
            "status": "running",
        }),
    }
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum ProfileArg {
    Explore,
    Plan,
    Review,
    Build,
}

impl From<ProfileArg> for SubagentProfile {
    fn from(profile: ProfileArg) -> Self {
        match profile {
            ProfileArg::Explore => SubagentProfile::Explore,
            ProfileArg::Plan => SubagentProfile::Plan,
            ProfileArg::Review => SubagentProfile::Review,
            ProfileArg::Build => SubagentProfile::Build,
        }
    }
}

/// Start a subagent.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SpawnArgs {
    /// The plan step this subagent works on (its id in update_plan), or a short name.
    task_id: String,
    /// explore, plan and review are read-only; build may change its copy of the workspace.
    profile: ProfileArg,
    /// The task: what to do, what to report back. The subagent sees only this,
    /// the task's plan entry and your goal, not this conversation.
    prompt: String,
    /// build only: the paths (files or directories, relative to the workspace)
    /// it may change; writes elsewhere fail. A missing path with a file
    /// extension (src/new.rs) is made as a file it may write, any other (bin,
    /// or ending in '/') as a directory.
    #[serde(default)]
    write_scope: Option<Vec<String>>,
    /// The subagent's network: none, full or allow:HOST[:PORT],... within
    /// this run's own (default: this run's).
    #[serde(default)]
    network: Option<String>,
}

/// Wait for subagents.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WaitArgs {
    /// Run ids (or task ids) to wait for; empty or missing: every subagent of this run.
    #[serde(default)]
    run_ids: Vec<String>,
    /// Longest wait in seconds (1 to 3600, default 600); those still running
    /// are then reported as running.
    #[serde(default)]
    timeout: Option<u64>,
}

/// Message a subagent.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct MessageArgs {
    /// Run id (or task id) of the subagent.
    run_id: String,
    /// What to tell it; it reads it before its next model turn.
    message: String,
}

/// Name a subagent.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    /// Run id (or task id) of the subagent.
    run_id: String,
}

macro_rules! subagent_tool {
    ($ty:ident, $args:ty, $name:expr, $access:expr, $replay:expr, $timeout:expr, $description:literal) => {
        pub(crate) struct $ty {
            contract: ToolContract,
            family: Arc<Family>,
        }

        impl $ty {
            pub(crate) fn new(family: Arc<Family>) -> Self {
                Self {
                    contract: Self::declared(),
                    family,
                }
            }

            /// The contract, which does not depend on the family.
            fn declared() -> ToolContract {
                // what a subagent did shows something about the workspace
                contract_for::<$args>(
                    $name,
                    $description,
                    Role::Workspace,
                    $access,
                    $replay,
                    $timeout,
                )
            }
        }

        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("parent_run", &self.family.parent().id)
                    .finish_non_exhaustive()
            }
        }
    };
}

subagent_tool!(
    SpawnSubagent,
    SpawnArgs,
    SPAWN,
    Access::ReadOnly,
    Replay::Never,
    Duration::from_secs(600),
    "Start a subagent in its own sandbox on a copy of the workspace as it is now. Profiles: \
     explore (investigate, read-only), plan (plan a task, read-only), review (review a \
     state, read-only), build (make a change; its changes come back as a change set you \
     apply or reject). Returns its run id at once; it runs in parallel (3 at a time, 6 per \
     run). Spawn several in one turn to run them side by side."
);
subagent_tool!(
    WaitSubagents,
    WaitArgs,
    WAIT,
    Access::ReadOnly,
    Replay::Safe,
    Duration::from_secs(WAIT_MAX_SECS + 60),
    "Wait until the named subagents (default: all) finished, or the timeout passed, and \
     return their results: status, summary, evidence, changed paths, usage, blocked reason."
);
subagent_tool!(
    MessageSubagent,
    MessageArgs,
    MESSAGE,
    Access::ReadOnly,
    Replay::Never,
    Duration::from_secs(5),
    "Send a running subagent a message (a correction, an answer); it reads it before its \
     next model turn."
);
subagent_tool!(
    StopSubagent,
    RunArgs,
    STOP,
    Access::ReadOnly,
    Replay::Safe,
    STOP_WAIT,
    "Stop a subagent (its sandbox is torn down) and return its result."
);
subagent_tool!(
    ApplySubagentChanges,
    RunArgs,
    APPLY,
    Access::Mutating,
    Replay::Never,
    Duration::from_secs(300),
    "Apply a finished build subagent's change set to your workspace, all of it or nothing. \
     A file you changed since the spawn that it changed too is a conflict: then nothing is \
     applied and the conflicts are listed. A write that fails midway is undone."
);
subagent_tool!(
    RejectSubagentChanges,
    RunArgs,
    REJECT,
    Access::ReadOnly,
    Replay::Safe,
    Duration::from_secs(5),
    "Discard a finished build subagent's change set."
);

/// A write scope as the sandbox wants it: normalized, relative entries.
fn write_scope(
    entries: Option<Vec<String>>,
    profile: SubagentProfile,
) -> Result<Option<WriteScope>, ToolError> {
    let Some(entries) = entries else {
        return Ok(None);
    };
    if profile != SubagentProfile::Build {
        return Err(invalid(
            SPAWN,
            format!("write_scope is for build subagents; a {profile} subagent is read-only"),
        ));
    }
    let mut normalized = Vec::new();
    for entry in entries {
        let entry = entry.trim();
        let mut path = paths::normalize(entry).map_err(|e| invalid(SPAWN, e.to_string()))?;
        // A trailing '/' asks for a directory when the path is missing
        // (any other missing path is made as a file): kept for the sandbox.
        if entry.ends_with('/') && !path.is_empty() {
            path.push('/');
        }
        if !normalized.contains(&path) {
            normalized.push(path);
        }
    }
    Ok(Some(WriteScope(normalized)))
}

#[async_trait]
impl Tool for SpawnSubagent {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, _ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let family = &self.family;
        let args: SpawnArgs = parse_args(SPAWN, arguments)?;
        non_empty(SPAWN, "task_id", &args.task_id)?;
        non_empty(SPAWN, "prompt", &args.prompt)?;
        let profile = SubagentProfile::from(args.profile);
        let request = SpawnRequest {
            task_id: args.task_id.trim().to_owned(),
            profile,
            prompt: args.prompt,
            write_scope: write_scope(args.write_scope, profile)?,
            network: args
                .network
                .map(|n| n.parse::<paddock_proto::NetworkPolicy>())
                .transpose()
                .map_err(|e| invalid(SPAWN, e.to_string()))?,
        };
        let task_id = request.task_id.clone();
        match family.spawn(request).await {
            Ok((run, session)) => {
                let data = json!({
                    "run_id": run,
                    "session_id": session,
                    "task_id": task_id,
                    "profile": profile,
                });
                Ok(output(
                    format!(
                        "Spawned {profile} subagent {run} for task {task_id}. It runs on its \
                         own; call wait_subagents for its result."
                    ),
                    data,
                    false,
                ))
            }
            Err(SpawnError::Refused(reason)) => Err(ToolError::Denied {
                tool: SPAWN.to_owned(),
                reason,
            }),
            Err(SpawnError::Failed(reason)) => Ok(output(
                format!("The subagent could not be started: {reason}"),
                json!({ "error": reason }),
                true,
            )),
        }
    }
}

#[async_trait]
impl Tool for WaitSubagents {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, _ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let family = &self.family;
        let args: WaitArgs = parse_args(WAIT, arguments)?;
        let timeout = bounded(
            WAIT,
            "timeout",
            args.timeout,
            WAIT_DEFAULT_SECS,
            (1, WAIT_MAX_SECS),
        )?;
        let children = if args.run_ids.is_empty() {
            family.children()
        } else {
            args.run_ids
                .iter()
                .map(|r| child(WAIT, family, r))
                .collect::<Result<Vec<_>, _>>()?
        };
        if children.is_empty() {
            return Ok(output(
                "This run has no subagents to wait for.".to_owned(),
                json!({ "results": [], "all_finished": true }),
                false,
            ));
        }
        let waited = tokio::time::timeout(
            Duration::from_secs(timeout),
            join_all(children.iter().map(|c| c.finished())),
        )
        .await;
        let all_finished = waited.is_ok();
        let results: Vec<Value> = children.iter().map(|c| view(c)).collect();
        let data = json!({ "results": results, "all_finished": all_finished });
        let head = if all_finished {
            "All finished.".to_owned()
        } else {
            format!("Not all finished after {timeout} s; those running are marked running.")
        };
        Ok(output(format!("{head}\n{}", pretty(&data)), data, false))
    }
}

#[async_trait]
impl Tool for MessageSubagent {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, _ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let family = &self.family;
        let args: MessageArgs = parse_args(MESSAGE, arguments)?;
        non_empty(MESSAGE, "message", &args.message)?;
        if args.message.chars().count() > MESSAGE_MAX_CHARS {
            return Err(invalid(
                MESSAGE,
                format!("the message is longer than {MESSAGE_MAX_CHARS} characters"),
            ));
        }
        let child = child(MESSAGE, family, &args.run_id)?;
        Ok(match child.message(args.message) {
            Ok(()) => output(
                format!(
                    "Message queued for subagent {}; it reads it before its next model turn.",
                    child.run
                ),
                json!({ "run_id": child.run, "delivered": true }),
                false,
            ),
            Err(reason) => output(
                reason,
                json!({ "run_id": child.run, "delivered": false }),
                true,
            ),
        })
    }
}

#[async_trait]
impl Tool for StopSubagent {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, _ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let family = &self.family;
        let args: RunArgs = parse_args(STOP, arguments)?;
        let child = child(STOP, family, &args.run_id)?;
        child.stop();
        let stopped = tokio::time::timeout(STOP_WAIT, child.finished())
            .await
            .is_ok();
        let data = view(&child);
        let head = if stopped {
            format!("Subagent {} stopped.", child.run)
        } else {
            format!(
                "Subagent {} was asked to stop and has not ended yet.",
                child.run
            )
        };
        Ok(output(format!("{head}\n{}", pretty(&data)), data, false))
    }
}

/// The child's change set if it can be applied or rejected now; else why not.
fn pending(tool: &str, child: &Child) -> Result<Arc<changes::ChangeSet>, String> {
    if !child.is_finished() {
        return Err(format!(
            "subagent {} is still running; wait_subagents first ({tool} takes finished ones)",
            child.run
        ));
    }
    if child.profile != SubagentProfile::Build {
        return Err(format!(
            "subagent {} is a read-only {} subagent: it has no changes",
            child.run, child.profile
        ));
    }
    let changes = child.changes();
    match &changes.state {
        ChangeSetState::Pending => Ok(Arc::clone(&changes.set)),
        ChangeSetState::None => Err(format!("subagent {} changed nothing", child.run)),
        ChangeSetState::Applied => {
            Err(format!("the changes of {} were already applied", child.run))
        }
        ChangeSetState::Rejected => Err(format!("the changes of {} were rejected", child.run)),
        ChangeSetState::Unavailable { reason } => Err(format!(
            "the changes of {} are not available: {reason}",
            child.run
        )),
    }
}

#[async_trait]
impl Tool for ApplySubagentChanges {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let family = &self.family;
        let args: RunArgs = parse_args(APPLY, arguments)?;
        let child = child(APPLY, family, &args.run_id)?;
        let set = match pending(APPLY, &child) {
            Ok(set) => set,
            Err(reason) => return Ok(output(reason, json!({ "applied": false }), true)),
        };
        let applied = apply::apply(ctx.guest.as_ref(), &set)
            .await
            .map_err(|source| ToolError::Guest {
                tool: APPLY.to_owned(),
                source,
            })?;
        Ok(applied_output(&child, applied))
    }
}

fn listed(conflicts: &[Conflict]) -> String {
    conflicts
        .iter()
        .map(|c| format!("- {}: {}", c.path, c.reason))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The result of `apply_subagent_changes`; moves the change set's state.
fn applied_output(child: &Child, applied: Applied) -> ToolOutput {
    let run = &child.run;
    match applied {
        Applied::Done { written } => {
            child.changes().state = ChangeSetState::Applied;
            let mut out = output(
                format!(
                    "Applied {} change(s) of subagent {run}: {}",
                    written.len(),
                    written.join(", ")
                ),
                json!({ "run_id": run, "applied": true, "written": written }),
                false,
            );
            if !written.is_empty() {
                out.effects.push(Effect::FilesChanged { paths: written });
            }
            out
        }
        Applied::Conflicts(conflicts) => output(
            format!(
                "Conflict: nothing of subagent {run}'s changes was applied.\n{}",
                listed(&conflicts)
            ),
            json!({ "run_id": run, "applied": false, "conflicts": conflicts }),
            true,
        ),
        Applied::RolledBack { failed, restored } => output(
            format!(
                "Nothing of subagent {run}'s changes was applied: writing {} failed ({}); \
                 the {} path(s) written before it were put back as they were. The change \
                 set is still pending: remove the cause and apply it again, or reject it.",
                failed.path,
                failed.reason,
                restored.len()
            ),
            json!({
                "run_id": run,
                "applied": false,
                "failed": failed,
                "restored": restored,
            }),
            true,
        ),
        Applied::Partial { failed, unrestored } => {
            let paths: Vec<String> = unrestored.iter().map(|c| c.path.clone()).collect();
            child.changes().state = ChangeSetState::Unavailable {
                reason: format!(
                    "an apply failed midway and could not put back {}",
                    paths.join(", ")
                ),
            };
            let mut out = output(
                format!(
                    "Applying subagent {run}'s changes failed: writing {} failed ({}), and \
                     these paths could not be put back as they were (they hold the \
                     subagent's version, or a file is missing):\n{}",
                    failed.path,
                    failed.reason,
                    listed(&unrestored)
                ),
                json!({
                    "run_id": run,
                    "applied": false,
                    "failed": failed,
                    "unrestored": unrestored,
                }),
                true,
            );
            out.effects.push(Effect::FilesChanged { paths });
            out
        }
    }
}

#[async_trait]
impl Tool for RejectSubagentChanges {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, _ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let family = &self.family;
        let args: RunArgs = parse_args(REJECT, arguments)?;
        let child = child(REJECT, family, &args.run_id)?;
        Ok(match pending(REJECT, &child) {
            Ok(set) => {
                child.changes().state = ChangeSetState::Rejected;
                output(
                    format!(
                        "Rejected the {} change(s) of subagent {}.",
                        set.changes.len(),
                        child.run
                    ),
                    json!({ "run_id": child.run, "rejected": true }),
                    false,
                )
            }
            Err(reason) => output(reason, json!({ "rejected": false }), true),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::PathArgument;
    use crate::tools::testing::path_argument_problems;

    fn contracts() -> [ToolContract; 6] {
        [
            SpawnSubagent::declared(),
            WaitSubagents::declared(),
            MessageSubagent::declared(),
            StopSubagent::declared(),
            ApplySubagentChanges::declared(),
            RejectSubagentChanges::declared(),
        ]
    }

    #[test]
    fn the_withheld_names_are_the_tools_names() {
        let names: Vec<&str> = contracts().iter().map(|c| c.name).collect();
        assert_eq!(names, NAMES);
        let mut registry = ToolRegistry::new();
        withhold_tools(&mut registry);
        for name in NAMES {
            match registry.missing(name) {
                ToolError::Denied { reason, .. } => assert!(reason.contains("depth 1"), "{reason}"),
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    /// The review weighs them as workspace calls and the policy scopes none
    /// of them, as before contracts declared roles and paths.
    #[test]
    fn every_subagent_tool_is_a_workspace_tool_without_a_path_argument() {
        let declared: Vec<(&str, Role, Access, Option<PathArgument>)> = contracts()
            .iter()
            .map(|c| (c.name, c.role, c.access, c.path_argument))
            .collect();
        assert_eq!(
            declared,
            [
                (SPAWN, Role::Workspace, Access::ReadOnly, None),
                (WAIT, Role::Workspace, Access::ReadOnly, None),
                (MESSAGE, Role::Workspace, Access::ReadOnly, None),
                (STOP, Role::Workspace, Access::ReadOnly, None),
                (APPLY, Role::Workspace, Access::Mutating, None),
                (REJECT, Role::Workspace, Access::ReadOnly, None),
            ]
        );
        for contract in contracts() {
            assert_eq!(path_argument_problems(&contract), Vec::<String>::new());
        }
    }
}
