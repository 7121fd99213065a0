//! Subagents end to end with scripted models (one script per child, picked
//! by task id), a real SQLite store and real native sandboxes: parallel
//! children in their own sandboxes, isolation until the parent applies,
//! read-only profiles and write scopes at both layers, the limits, parent
//! cancellation, conflicting change sets, an apply undone when a write fails
//! midway, and no child workspace directory left behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use paddock_core::blob::{BlobKey, BlobStore};
use paddock_core::ids::{RunId, SessionId};
use paddock_core::model::ModelProvider;
use paddock_core::store::{
    Run, RunMode, RunState, SandboxState, SnapshotFilter, SnapshotRecord, SubagentProfile,
};
use paddock_proto::ExecSpec;
use paddock_runtime::StartRun;
use paddock_runtime::subagents::SubagentModels;
use paddock_runtime::tools::{
    Access, Replay, Role, Tool, ToolContext, ToolContract, ToolError, ToolOutput, ToolRegistry,
};
use paddock_snapshot::{Limit, LocalBlobStore, SnapshotError, UnpackOptions};
use serde_json::{Value, json};
use support::{Harness, Recording, call, tool_results, turn};

/// Each child's model by task id.
#[derive(Debug, Default)]
struct Models(HashMap<String, Arc<Recording>>);

impl SubagentModels for Models {
    fn model(&self, _profile: SubagentProfile, task_id: &str) -> Option<Arc<dyn ModelProvider>> {
        self.0
            .get(task_id)
            .map(|m| Arc::clone(m) as Arc<dyn ModelProvider>)
    }
}

fn done(summary: &str) -> Value {
    call(
        "complete_task",
        json!({"verdict": "met", "summary": summary, "evidence": ["scripted"]}),
    )
}

fn spawn(task: &str, profile: &str, prompt: &str) -> Value {
    call(
        "spawn_subagent",
        json!({"task_id": task, "profile": profile, "prompt": prompt}),
    )
}

fn spawn_scoped(task: &str, prompt: &str, scope: &[&str]) -> Value {
    call(
        "spawn_subagent",
        json!({"task_id": task, "profile": "build", "prompt": prompt, "write_scope": scope}),
    )
}

fn wait_all() -> Value {
    call("wait_subagents", json!({"timeout": 120}))
}

/// Runs the parent to its end with `models` for its children.
async fn run_parent(
    h: &Harness,
    session: &SessionId,
    parent: Arc<Recording>,
    models: Models,
) -> Run {
    run_parent_with(h, session, parent, models, None).await
}

async fn run_parent_with(
    h: &Harness,
    session: &SessionId,
    parent: Arc<Recording>,
    models: Models,
    snapshot_limits: Option<paddock_snapshot::Limits>,
) -> Run {
    let mut request = StartRun::new("Split the work across subagents", parent);
    request.subagent_models = Some(Arc::new(models));
    request.snapshot_limits = snapshot_limits;
    let handle = h
        .runtime
        .start_run(&h.tenant, session, request)
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(240), handle.wait())
        .await
        .expect("the parent run ends")
        .unwrap()
}

async fn children(h: &Harness, parent: &RunId) -> HashMap<String, Run> {
    h.runtime
        .list_child_runs(&h.tenant, parent)
        .await
        .unwrap()
        .into_iter()
        .map(|run| (run.task_key.clone().unwrap(), run))
        .collect()
}

/// The directories left under the runtime's workspaces root (the children's).
fn left_dirs(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn assert_no_child_dirs(h: &Harness) {
    let left = left_dirs(&h.workspaces_root());
    assert!(
        left.is_empty(),
        "child workspace directories left: {left:?}"
    );
}

/// The nanosecond timestamps a child's command printed after START and END.
fn interval(output: &str) -> (u128, u128) {
    let find = |tag: &str| -> u128 {
        output
            .split_whitespace()
            .skip_while(|w| *w != tag)
            .nth(1)
            .unwrap_or_else(|| panic!("no {tag} in {output}"))
            .parse()
            .unwrap()
    };
    (find("START"), find("END"))
}

#[tokio::test]
async fn three_children_run_at_once_in_their_own_sandboxes_and_report_back() {
    let h = Harness::new().await;
    std::fs::write(h.project.join("input.txt"), "shared input\n").unwrap();
    let session = h.session("fan out").await;
    let timed = "echo START $(date +%s%N); cat input.txt; sleep 1.5; echo END $(date +%s%N)";
    let mut models = Models::default();
    for task in ["a", "b", "c"] {
        let script = h.script(
            task,
            json!([
                turn("", vec![call("run_command", json!({"command": timed}))]),
                turn("", vec![done(&format!("task {task} done"))]),
            ]),
        );
        models.0.insert(task.to_owned(), script);
    }
    let parent = h.script(
        "parent",
        json!([
            turn(
                "Three at once.",
                vec![
                    spawn("a", "build", "time yourself"),
                    spawn("b", "build", "time yourself"),
                    spawn("c", "build", "time yourself"),
                ]
            ),
            turn("", vec![wait_all()]),
            turn("", vec![done("all three reported")]),
        ]),
    );
    let run = run_parent(&h, &session.id, parent.clone(), models).await;
    assert_eq!(run.state, RunState::Completed, "{run:?}");

    let kids = children(&h, &run.id).await;
    assert_eq!(kids.len(), 3);
    let mut intervals = Vec::new();
    let mut sandboxes = Vec::new();
    for (task, child) in &kids {
        assert_eq!(child.state, RunState::Completed, "{task}: {child:?}");
        assert_eq!(child.parent_run.as_ref(), Some(&run.id));
        assert_eq!(child.profile, Some(SubagentProfile::Build));
        // a share of what the family had left when it spawned, never more
        let (share, whole) = (child.budgets, run.budgets);
        assert!(share.max_turns < whole.max_turns, "{share:?}");
        assert!(share.max_tool_calls < whole.max_tool_calls, "{share:?}");
        assert!(share.max_tokens < whole.max_tokens, "{share:?}");
        assert!(share.max_wall_clock_ms <= whole.max_wall_clock_ms);
        let child_session = h
            .runtime
            .get_session(&h.tenant, &child.session)
            .await
            .unwrap();
        assert_eq!(child_session.parent_run.as_ref(), Some(&run.id));
        assert_ne!(
            child_session.workspace, session.workspace,
            "a workspace of its own"
        );
        let results = tool_results(&h, &child.session).await;
        assert!(results[0].0.contains("shared input"), "{results:?}");
        intervals.push(interval(&results[0].0));
        // its own event stream ends with its run.finished
        let own: Vec<_> = h
            .runtime
            .run_event_stream(&h.tenant, &child.id, 0)
            .await
            .unwrap()
            .collect()
            .await;
        assert!(
            own.iter()
                .all(|e| e.as_ref().unwrap().run.as_ref() == Some(&child.id))
        );
        assert_eq!(own.last().unwrap().as_ref().unwrap().kind, "run.finished");
        let ready = h.payloads(&child.session, "sandbox.ready").await;
        sandboxes.push(ready[0]["sandbox_id"].as_str().unwrap().to_owned());
        // the child saw its contract, never the parent's transcript
        let request = &models_request(&h, &child.session).await;
        assert!(request.contains(&format!("Task {task}")), "{request}");
        assert!(!request.contains("Three at once."), "{request}");
    }
    sandboxes.sort();
    sandboxes.dedup();
    assert_eq!(sandboxes.len(), 3, "three sandboxes");
    let latest_start = intervals.iter().map(|(s, _)| *s).max().unwrap();
    let earliest_end = intervals.iter().map(|(_, e)| *e).min().unwrap();
    assert!(
        latest_start < earliest_end,
        "all three were running at the same time: {intervals:?}"
    );

    // the parent got each result back, and its stream only status lines
    let results = tool_results(&h, &session.id).await;
    let waited = &results[3].0;
    for task in ["a", "b", "c"] {
        assert!(waited.contains(&format!("task {task} done")), "{waited}");
    }
    assert!(waited.contains("\"all_finished\": true"), "{waited}");
    let events = h.events(&session.id).await;
    assert!(events.iter().all(|e| e.run.as_ref() == Some(&run.id)));
    let statuses = h.payloads(&session.id, "subagent.status").await;
    for phase in ["spawned", "running", "finished"] {
        assert_eq!(
            statuses.iter().filter(|s| s["status"] == phase).count(),
            3,
            "{phase}: {statuses:?}"
        );
    }
    // the spawns of one turn shared one pack of the parent's workspace
    let filter = SnapshotFilter {
        workspace: Some(session.workspace.clone()),
        session: Some(session.id.clone()),
    };
    let snapshots = h
        .store
        .list_snapshots(&h.tenant, &filter, &Default::default())
        .await
        .unwrap();
    // one spawn pack and the parent's end snapshot
    assert_eq!(snapshots.len(), 2, "{snapshots:?}");
    assert_no_child_dirs(&h);
}

/// The entries of `snapshot` a restore counts: a restore within
/// `max_files = file_count` succeeds, creating that many, and one with
/// `max_files = file_count - 1` is over the limit.
fn assert_file_count_is_what_a_restore_counts(h: &Harness, snapshot: &SnapshotRecord) {
    let blobs = LocalBlobStore::open(h.dir.path().join("blobs")).unwrap();
    let key = BlobKey::parse(&snapshot.blob_hash).unwrap();
    let restore = |max_files| {
        let target = tempfile::tempdir().unwrap();
        let mut opts = UnpackOptions::default();
        opts.limits.max_files = max_files;
        paddock_snapshot::unpack(blobs.open(&key).unwrap(), &target.path().join("t"), &opts)
    };
    let restored = restore(snapshot.file_count).unwrap();
    assert_eq!(restored.entries(), snapshot.file_count, "{snapshot:?}");
    let over = restore(snapshot.file_count - 1).unwrap_err();
    assert!(
        matches!(over, SnapshotError::OverLimit { limit: Limit::Files(n), .. } if n == snapshot.file_count - 1),
        "{over:?}"
    );
}

#[tokio::test]
async fn spawn_base_and_end_snapshots_count_what_a_restore_of_them_counts() {
    let h = Harness::new().await;
    // 3 regular files of 7 entries: 3 directories and a symlink besides
    std::fs::create_dir_all(h.project.join("src/deep/er")).unwrap();
    std::fs::write(h.project.join("src/deep/er/a.rs"), "fn a() {}\n").unwrap();
    std::fs::write(h.project.join("src/b.rs"), "fn b() {}\n").unwrap();
    std::fs::write(h.project.join("README"), "counts\n").unwrap();
    std::os::unix::fs::symlink("src/b.rs", h.project.join("link")).unwrap();
    let session = h.session("counts").await;
    let mut models = Models::default();
    let write = "mkdir -p out/new && echo made > out/new/made.txt";
    models.0.insert(
        "writer".into(),
        h.script(
            "writer",
            json!([
                turn("", vec![call("run_command", json!({"command": write}))]),
                turn("", vec![done("wrote out/new/made.txt")]),
            ]),
        ),
    );
    let parent = h.script(
        "parent",
        json!([
            turn("", vec![spawn("writer", "build", "write a file")]),
            turn("", vec![wait_all()]),
            turn("", vec![done("the child wrote")]),
        ]),
    );
    let run = run_parent(&h, &session.id, parent, models).await;
    assert_eq!(run.state, RunState::Completed, "{run:?}");

    let of_session = |session: &SessionId| SnapshotFilter {
        workspace: None,
        session: Some(session.clone()),
    };
    let parents = h
        .store
        .list_snapshots(&h.tenant, &of_session(&session.id), &Default::default())
        .await
        .unwrap();
    // the spawn's base pack and the parent's end snapshot
    assert_eq!(parents.len(), 2, "{parents:?}");
    for snapshot in &parents {
        assert_eq!(snapshot.file_count, 7, "{snapshot:?}");
        assert_file_count_is_what_a_restore_counts(&h, snapshot);
    }
    let child = &children(&h, &run.id).await["writer"];
    let end = h
        .store
        .get_snapshot(&h.tenant, child.end_snapshot.as_ref().unwrap())
        .await
        .unwrap();
    // the child's end snapshot holds out/, out/new/ and made.txt besides
    assert_eq!(end.file_count, 10, "{end:?}");
    assert_file_count_is_what_a_restore_counts(&h, &end);
}

#[tokio::test]
async fn absolute_and_climbing_symlinks_do_not_stop_a_subagent() {
    // Links like a virtualenv's (tools/, since venv/ is excluded by default): the spawn's base pack, the child's restore and
    // its end snapshot keep them as links.
    let h = Harness::new().await;
    std::fs::create_dir_all(h.project.join("tools/bin")).unwrap();
    std::os::unix::fs::symlink("/usr/bin/python3", h.project.join("tools/bin/python")).unwrap();
    std::os::unix::fs::symlink("../../..", h.project.join("tools/bin/up")).unwrap();
    std::fs::write(h.project.join("README"), "venv\n").unwrap();
    let session = h.session("links").await;
    let mut models = Models::default();
    let probe = "test \"$(readlink tools/bin/python)\" = /usr/bin/python3 && echo ok > seen.txt";
    models.0.insert(
        "prober".into(),
        h.script(
            "prober",
            json!([
                turn("", vec![call("run_command", json!({"command": probe}))]),
                turn("", vec![done("checked the links")]),
            ]),
        ),
    );
    let parent = h.script(
        "parent",
        json!([
            turn("", vec![spawn("prober", "build", "check the links")]),
            turn("", vec![wait_all()]),
            turn("", vec![done("the child checked")]),
        ]),
    );
    let run = run_parent(&h, &session.id, parent, models).await;
    assert_eq!(run.state, RunState::Completed, "{run:?}");
    let child = &children(&h, &run.id).await["prober"];
    assert_eq!(child.state, RunState::Completed, "{child:?}");
    let end = h
        .store
        .get_snapshot(&h.tenant, child.end_snapshot.as_ref().unwrap())
        .await
        .unwrap();
    assert_file_count_is_what_a_restore_counts(&h, &end);
    let blobs = LocalBlobStore::open(h.dir.path().join("blobs")).unwrap();
    let target = tempfile::tempdir().unwrap();
    let restored = target.path().join("t");
    let key = BlobKey::parse(&end.blob_hash).unwrap();
    paddock_snapshot::unpack(
        blobs.open(&key).unwrap(),
        &restored,
        &UnpackOptions::default(),
    )
    .unwrap();
    assert_eq!(
        std::fs::read_link(restored.join("tools/bin/python")).unwrap(),
        Path::new("/usr/bin/python3")
    );
    assert_eq!(
        std::fs::read_link(restored.join("tools/bin/up")).unwrap(),
        Path::new("../../..")
    );
    assert_eq!(
        std::fs::read_to_string(restored.join("seen.txt")).unwrap(),
        "ok\n"
    );
}

/// The text of a child's first model request.
async fn models_request(h: &Harness, session: &SessionId) -> String {
    let messages = h
        .store
        .list_messages(&h.tenant, session, None)
        .await
        .unwrap();
    serde_json::to_string(&messages.first().unwrap().message).unwrap()
}

#[tokio::test]
async fn a_childs_writes_stay_invisible_until_the_parent_applies_them() {
    let h = Harness::new().await;
    let session = h.session("isolation").await;
    let probe = "sleep 1.5; test -e made.txt && echo VISIBLE || echo ABSENT";
    let mut models = Models::default();
    models.0.insert(
        "writer".into(),
        h.script(
            "writer",
            json!([
                turn(
                    "",
                    vec![call(
                        "write_file",
                        json!({"path": "made.txt", "content": "from writer\n"})
                    )]
                ),
                turn(
                    "",
                    vec![call("run_command", json!({"command": "cat made.txt"}))]
                ),
                turn("", vec![done("wrote made.txt")]),
            ]),
        ),
    );
    let reader = h.script(
        "reader",
        json!([
            turn("", vec![call("run_command", json!({"command": probe}))]),
            turn("", vec![done("looked")]),
        ]),
    );
    models.0.insert("reader".into(), reader.clone());
    let parent = h.script(
        "parent",
        json!([
            turn(
                "",
                vec![
                    spawn("writer", "build", "write made.txt"),
                    spawn("reader", "build", "look for made.txt")
                ]
            ),
            turn(
                "",
                vec![call(
                    "message_subagent",
                    json!({"run_id": "reader", "message": "also check the docs"})
                )]
            ),
            turn("", vec![call("run_command", json!({"command": probe}))]),
            turn("", vec![wait_all()]),
            turn(
                "",
                vec![call(
                    "run_command",
                    json!({"command": "test -e made.txt && echo VISIBLE || echo ABSENT"})
                )]
            ),
            turn(
                "",
                vec![call("apply_subagent_changes", json!({"run_id": "writer"}))]
            ),
            turn(
                "",
                vec![call("run_command", json!({"command": "cat made.txt"}))]
            ),
            turn("", vec![done("applied")]),
        ]),
    );
    let run = run_parent(&h, &session.id, parent, models).await;
    assert_eq!(run.state, RunState::Completed, "{run:?}");
    let kids = children(&h, &run.id).await;

    let reader_results = tool_results(&h, &kids["reader"].session).await;
    assert!(reader_results[0].0.contains("ABSENT"), "{reader_results:?}");
    let parent_results = tool_results(&h, &session.id).await;
    let outputs: Vec<&str> = parent_results.iter().map(|(c, _)| c.as_str()).collect();
    assert!(
        outputs[3].contains("ABSENT"),
        "parent before the wait: {outputs:?}"
    );
    assert!(
        outputs[4].contains("made.txt"),
        "the writer's change set: {outputs:?}"
    );
    assert!(
        outputs[5].contains("ABSENT"),
        "parent after the wait: {outputs:?}"
    );
    assert!(outputs[6].contains("Applied 1 change"), "{outputs:?}");
    assert!(outputs[7].contains("from writer"), "{outputs:?}");
    assert_eq!(h.read(&h.project, "made.txt").unwrap(), "from writer\n");

    // the message reached the reader before its second turn
    let requests = reader.requests();
    assert_eq!(requests.len(), 2);
    let second = serde_json::to_string(&requests[1].messages).unwrap();
    assert!(second.contains("also check the docs"), "{second}");
    assert_eq!(
        h.payloads(&kids["reader"].session, "parent.message")
            .await
            .len(),
        1
    );
    assert_no_child_dirs(&h);
}

/// A tool that claims to be read-only but runs a shell command: what the
/// read-only sandbox is for.
#[derive(Debug)]
struct ShellProbe(ToolContract);

#[async_trait]
impl Tool for ShellProbe {
    fn contract(&self) -> &ToolContract {
        &self.0
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let command = arguments["command"].as_str().unwrap_or_default().to_owned();
        let spec = ExecSpec {
            argv: vec!["sh".into(), "-c".into(), command],
            ..ExecSpec::default()
        };
        let out = ctx
            .guest
            .exec_output(spec, &[])
            .await
            .map_err(|source| ToolError::Guest {
                tool: "shell_probe".into(),
                source,
            })?;
        let mut output = ToolOutput::text(format!(
            "exit {:?}\n{}",
            out.exit.code,
            String::from_utf8_lossy(&out.stderr)
        ));
        output.is_error = out.exit.code != Some(0);
        Ok(output)
    }
}

fn with_shell_probe() -> ToolRegistry {
    let mut registry = ToolRegistry::builtin();
    registry.register(Arc::new(ShellProbe(ToolContract {
        name: "shell_probe",
        description: "Runs a shell command (declared read-only).",
        parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        role: Role::Workspace,
        access: Access::ReadOnly,
        replay: Replay::Safe,
        timeout: Duration::from_secs(10),
        path_argument: None,
    })));
    registry
}

#[tokio::test]
async fn read_only_profiles_and_write_scopes_hold_at_both_layers() {
    let h = Harness::with_registry(with_shell_probe()).await;
    std::fs::write(h.project.join("README.md"), "original\n").unwrap();
    std::fs::create_dir_all(h.project.join("src")).unwrap();
    let session = h.session("scopes").await;
    let mut models = Models::default();
    models.0.insert(
        "look".into(),
        h.script(
            "look",
            json!([
                turn(
                    "",
                    vec![
                        call("write_file", json!({"path": "README.md", "content": "x"})),
                        call("run_command", json!({"command": "echo x > README.md"})),
                    ]
                ),
                turn(
                    "",
                    vec![call(
                        "shell_probe",
                        json!({"command": "echo x > README.md"})
                    )]
                ),
                turn("", vec![done("could not write")]),
            ]),
        ),
    );
    models.0.insert(
        "scoped".into(),
        h.script(
            "scoped",
            json!([
                turn(
                    "",
                    vec![call(
                        "write_file",
                        json!({"path": "README.md", "content": "x"})
                    )]
                ),
                turn(
                    "",
                    vec![call(
                        "run_command",
                        json!({"command": "echo x > README.md"})
                    )]
                ),
                turn(
                    "",
                    vec![call(
                        "run_command",
                        json!({"command": "echo ok > src/ok.txt && cat src/ok.txt"})
                    )]
                ),
                turn("", vec![done("wrote src/ok.txt")]),
            ]),
        ),
    );
    let parent = h.script(
        "parent",
        json!([
            turn(
                "",
                vec![
                    spawn("look", "explore", "try to write"),
                    spawn_scoped("scoped", "stay in src", &["src"]),
                ]
            ),
            turn("", vec![wait_all()]),
            turn(
                "",
                vec![call("apply_subagent_changes", json!({"run_id": "scoped"}))]
            ),
            turn("", vec![done("checked")]),
        ]),
    );
    let run = run_parent(&h, &session.id, parent, models).await;
    assert_eq!(run.state, RunState::Completed, "{run:?}");
    let kids = children(&h, &run.id).await;

    let look = tool_results(&h, &kids["look"].session).await;
    assert!(look[0].1 && look[0].0.contains("plan mode"), "{look:?}");
    assert!(look[1].1 && look[1].0.contains("plan mode"), "{look:?}");
    assert!(
        look[2].1,
        "the shell cannot write a read-only workspace: {look:?}"
    );
    assert!(!look[2].0.contains("exit Some(0)"), "{look:?}");
    assert_eq!(
        h.payloads(&kids["look"].session, "sandbox.ready").await[0]["read_only"],
        true
    );

    let scoped = tool_results(&h, &kids["scoped"].session).await;
    assert!(
        scoped[0].1 && scoped[0].0.contains("outside the write scope"),
        "{scoped:?}"
    );
    assert!(!scoped[1].0.contains("[exit code 0"), "{scoped:?}");
    assert!(scoped[1].0.contains("Read-only file system"), "{scoped:?}");
    assert!(scoped[2].0.contains("ok"), "{scoped:?}");

    let parent_results = tool_results(&h, &session.id).await;
    assert!(
        parent_results[3].0.contains("src/ok.txt"),
        "{parent_results:?}"
    );
    assert_eq!(h.read(&h.project, "README.md").unwrap(), "original\n");
    assert_eq!(h.read(&h.project, "src/ok.txt").unwrap(), "ok\n");
    // the read-only child's directory and the build child's copy are gone
    assert_no_child_dirs(&h);
}

#[tokio::test]
async fn a_scope_naming_a_missing_file_lets_the_child_create_it_and_the_change_applies() {
    let h = Harness::new().await;
    std::fs::write(h.project.join("README.md"), "original\n").unwrap();
    let session = h.session("file-scope").await;
    let mut models = Models::default();
    models.0.insert(
        "doc".into(),
        h.script(
            "doc",
            json!([
                turn(
                    "",
                    vec![call(
                        "write_file",
                        json!({"path": "docs/USAGE.md", "content": "usage\n"})
                    )]
                ),
                turn(
                    "",
                    vec![call(
                        "write_file",
                        json!({"path": "docs/OTHER.md", "content": "x"})
                    )]
                ),
                turn(
                    "",
                    vec![call(
                        "run_command",
                        json!({"command": "echo x > docs/sibling.md"})
                    )]
                ),
                turn("", vec![done("wrote docs/USAGE.md")]),
            ]),
        ),
    );
    let parent = h.script(
        "parent",
        json!([
            turn(
                "",
                vec![spawn_scoped("doc", "document usage", &["docs/USAGE.md"])]
            ),
            turn("", vec![wait_all()]),
            turn(
                "",
                vec![call("apply_subagent_changes", json!({"run_id": "doc"}))]
            ),
            turn("", vec![done("documented")]),
        ]),
    );
    let run = run_parent(&h, &session.id, parent, models).await;
    assert_eq!(run.state, RunState::Completed, "{run:?}");
    let kids = children(&h, &run.id).await;
    let doc = tool_results(&h, &kids["doc"].session).await;
    assert!(!doc[0].1, "the scope file is writable: {doc:?}");
    assert!(
        doc[1].1 && doc[1].0.contains("outside the write scope"),
        "{doc:?}"
    );
    assert!(doc[2].0.contains("Read-only file system"), "{doc:?}");
    let parent_results = tool_results(&h, &session.id).await;
    assert!(!parent_results[2].1, "apply failed: {parent_results:?}");
    assert_eq!(h.read(&h.project, "docs/USAGE.md").unwrap(), "usage\n");
    let names: Vec<String> = std::fs::read_dir(h.project.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["USAGE.md"]);
    assert_eq!(h.read(&h.project, "README.md").unwrap(), "original\n");
    assert_no_child_dirs(&h);
}

#[tokio::test]
async fn a_spawn_over_the_runs_snapshot_limit_says_which_and_how_to_raise_it() {
    let h = Harness::new().await;
    std::fs::write(h.project.join("data.bin"), vec![7u8; 4096]).unwrap();
    let session = h.session("spawn-limit").await;
    let mut models = Models::default();
    models.0.insert(
        "look".into(),
        h.script("look", json!([turn("", vec![done("looked")])])),
    );
    let parent = h.script(
        "parent",
        json!([
            turn("", vec![spawn("look", "explore", "look around")]),
            turn("", vec![done("could not spawn")]),
        ]),
    );
    let limits = paddock_snapshot::Limits {
        max_bytes: 1000,
        ..paddock_snapshot::Limits::default()
    };
    let run = run_parent_with(&h, &session.id, parent, models, Some(limits)).await;
    assert_eq!(run.state, RunState::Completed, "{run:?}");
    let results = tool_results(&h, &session.id).await;
    let (text, is_error) = &results[0];
    assert!(*is_error, "{results:?}");
    for expected in [
        "copying the workspace for the subagent: the workspace holds more than 1000 bytes",
        "over the snapshot limit max_bytes = 1000",
        "`paddock run --snapshot-max-bytes N`",
    ] {
        assert!(text.contains(expected), "no {expected:?} in {text}");
    }
    // The run's limit, not the default, was the one applied: the end
    // snapshot went over it too, and says so.
    let finished = h.payloads(&session.id, "run.finished").await;
    assert_eq!(
        finished[0]["snapshot_limit"]["limit"], "max_bytes",
        "{finished:?}"
    );
    assert_eq!(finished[0]["snapshot_limit"]["value"], 1000);
    assert_no_child_dirs(&h);
}

#[tokio::test]
async fn the_seventh_spawn_and_a_nested_spawn_are_refused_and_the_rest_queue() {
    let h = Harness::new().await;
    let session = h.session("limits").await;
    let mut models = Models::default();
    let mut plain = None;
    for n in 1..=6 {
        let task = format!("t{n}");
        let script = if n == 1 {
            h.script(
                &task,
                json!([
                    turn("", vec![spawn("deeper", "explore", "nested")]),
                    turn("", vec![done("tried to nest")]),
                ]),
            )
        } else {
            // long enough that the later ones must wait for a slot
            h.script(
                &task,
                json!([
                    turn("", vec![call("run_command", json!({"command": "sleep 1"}))]),
                    turn("", vec![done("ok")]),
                ]),
            )
        };
        if n == 2 {
            plain = Some(Arc::clone(&script));
        }
        models.0.insert(task, script);
    }
    let spawns: Vec<Value> = (1..=7)
        .map(|n| {
            let profile = if n == 1 { "explore" } else { "build" };
            spawn(&format!("t{n}"), profile, "look")
        })
        .collect();
    let parent = h.script(
        "parent",
        json!([
            turn("Seven.", spawns),
            turn("", vec![wait_all()]),
            turn("", vec![done("six ran")]),
        ]),
    );
    let run = run_parent(&h, &session.id, parent.clone(), models).await;
    assert_eq!(run.state, RunState::Completed, "{run:?}");

    let results = tool_results(&h, &session.id).await;
    let refused: Vec<&(String, bool)> = results[..7].iter().filter(|(_, e)| *e).collect();
    assert_eq!(refused.len(), 1, "{results:?}");
    assert!(refused[0].0.contains("already spawned 6"), "{refused:?}");
    let kids = children(&h, &run.id).await;
    assert_eq!(kids.len(), 6);
    assert!(kids.values().all(|k| k.state == RunState::Completed));

    let nested = tool_results(&h, &kids["t1"].session).await;
    assert!(nested[0].1, "{nested:?}");
    assert!(nested[0].0.contains("cannot spawn"), "{nested:?}");
    assert!(nested[0].0.contains("depth 1"), "{nested:?}");
    // a child is not offered the subagent tools at all; the root is
    let offered = |model: &Recording| -> Vec<String> {
        model.requests()[0]
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect()
    };
    assert!(
        !offered(&plain.unwrap())
            .iter()
            .any(|t| t.contains("subagent"))
    );
    assert!(offered(&parent).contains(&"spawn_subagent".to_owned()));

    // six children, three slots: some waited, and never more than three ran at once
    let statuses = h.payloads(&session.id, "subagent.status").await;
    assert!(
        statuses.iter().any(|s| s["status"] == "queued"),
        "{statuses:?}"
    );
    let mut edges = Vec::new();
    for kid in kids.values() {
        let events = h.events(&kid.session).await;
        let at = |kind: &str| {
            events
                .iter()
                .find(|e| e.kind == kind)
                .map(|e| e.created_at.as_millis())
                .unwrap()
        };
        edges.push((at("sandbox.ready"), 1i32));
        edges.push((at("sandbox.stopped"), -1i32));
    }
    edges.sort();
    let mut running = 0;
    let mut most = 0;
    for (_, step) in edges {
        running += step;
        most = most.max(running);
    }
    assert!(most <= 3, "{most} sandboxes were up at once");
    assert_no_child_dirs(&h);
}

#[tokio::test]
async fn a_plan_mode_run_spawns_only_read_only_subagents() {
    let h = Harness::new().await;
    let session = h.session("plan-spawn").await;
    let mut models = Models::default();
    let builder = h.script(
        "builder",
        json!([
            turn(
                "",
                vec![call("run_command", json!({"command": "touch built.txt"}))]
            ),
            turn("", vec![done("built")]),
        ]),
    );
    models.0.insert("builder".into(), Arc::clone(&builder));
    models.0.insert(
        "looker".into(),
        h.script("looker", json!([turn("", vec![done("looked")])])),
    );
    let parent = h.script(
        "parent",
        json!([
            turn(
                "Plan only.",
                vec![
                    spawn("builder", "build", "change things"),
                    spawn("looker", "explore", "look around"),
                ]
            ),
            turn("", vec![wait_all()]),
            turn("", vec![done("planned")]),
        ]),
    );
    let mut request = StartRun::new("Plan the work", parent);
    request.mode = RunMode::Plan;
    request.subagent_models = Some(Arc::new(models));
    let handle = h
        .runtime
        .start_run(&h.tenant, &session.id, request)
        .await
        .unwrap();
    let run = tokio::time::timeout(Duration::from_secs(240), handle.wait())
        .await
        .expect("the parent run ends")
        .unwrap();
    assert_eq!(run.state, RunState::Completed, "{run:?}");

    let results = tool_results(&h, &session.id).await;
    let (build_spawn, refused) = &results[0];
    assert!(*refused, "{results:?}");
    assert!(build_spawn.contains("plan mode"), "{build_spawn}");
    assert!(
        build_spawn.contains("not a build subagent"),
        "{build_spawn}"
    );
    assert!(!results[1].1, "the explore spawn is allowed: {results:?}");
    let kids = children(&h, &run.id).await;
    assert_eq!(kids.len(), 1, "{kids:?}");
    assert_eq!(kids["looker"].mode, RunMode::Plan);
    assert_eq!(kids["looker"].state, RunState::Completed);
    assert!(builder.requests().is_empty(), "the build child never ran");
    assert_no_child_dirs(&h);
}

#[tokio::test]
async fn cancelling_the_parent_stops_its_children_and_their_sandboxes() {
    let h = Harness::new().await;
    let session = h.session("cancel").await;
    let mut models = Models::default();
    for task in ["long1", "long2"] {
        models.0.insert(
            task.into(),
            h.script(
                task,
                json!([
                    turn(
                        "",
                        vec![call("run_command", json!({"command": "sleep 60"}))]
                    ),
                    turn("", vec![done("never")]),
                ]),
            ),
        );
    }
    let parent = h.script(
        "parent",
        json!([
            turn(
                "",
                vec![
                    spawn("long1", "build", "sleep"),
                    spawn("long2", "build", "sleep")
                ]
            ),
            turn("", vec![wait_all()]),
            turn("", vec![done("never")]),
        ]),
    );
    let mut request = StartRun::new("Wait on long children", parent);
    request.subagent_models = Some(Arc::new(models));
    let handle = h
        .runtime
        .start_run(&h.tenant, &session.id, request)
        .await
        .unwrap();
    let parent_id = handle.run.id.clone();
    // both children are in their commands
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let kids = h
            .runtime
            .list_child_runs(&h.tenant, &parent_id)
            .await
            .unwrap();
        let mut busy = 0;
        for kid in &kids {
            if !h.payloads(&kid.session, "tool.call").await.is_empty() {
                busy += 1;
            }
        }
        if busy == 2 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "children never started"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let started = std::time::Instant::now();
    let cancelled = h.runtime.cancel_run(&h.tenant, &parent_id).await.unwrap();
    assert_eq!(cancelled.state, RunState::Cancelled);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );

    let kids = h
        .runtime
        .list_child_runs(&h.tenant, &parent_id)
        .await
        .unwrap();
    assert_eq!(kids.len(), 2);
    for kid in &kids {
        assert_eq!(kid.state, RunState::Cancelled, "{kid:?}");
        let stopped = h.payloads(&kid.session, "sandbox.stopped").await;
        assert_eq!(stopped.len(), 1);
        assert!(stopped[0]["error"].is_null(), "{stopped:?}");
    }
    let sandboxes = h
        .store
        .list_sandboxes(&h.tenant, None, &Default::default())
        .await
        .unwrap();
    assert_eq!(sandboxes.len(), 3, "the parent's and two children's");
    assert!(
        sandboxes.iter().all(|s| s.state == SandboxState::Stopped),
        "{sandboxes:?}"
    );
    let left: Vec<_> = std::fs::read_dir(h.dir.path().join("sandboxes"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "sandbox directories left: {left:?}");
    let statuses = h.payloads(&session.id, "subagent.status").await;
    let finished: Vec<&Value> = statuses
        .iter()
        .filter(|s| s["status"] == "finished")
        .collect();
    assert_eq!(finished.len(), 2);
    assert!(
        finished.iter().all(|s| s["state"] == "cancelled"),
        "{finished:?}"
    );
    assert_no_child_dirs(&h);
}

#[tokio::test]
async fn two_children_changing_one_file_conflict_on_the_second_apply() {
    let h = Harness::new().await;
    std::fs::write(h.project.join("shared.txt"), "base\n").unwrap();
    let session = h.session("conflict").await;
    let mut models = Models::default();
    for task in ["first", "second"] {
        models.0.insert(
            task.into(),
            h.script(
                task,
                json!([
                    turn(
                        "",
                        vec![call(
                            "write_file",
                            json!({"path": "shared.txt", "content": format!("{task}\n")})
                        )]
                    ),
                    turn(
                        "",
                        vec![call("run_command", json!({"command": "cat shared.txt"}))]
                    ),
                    turn("", vec![done("changed shared.txt")]),
                ]),
            ),
        );
    }
    let parent = h.script(
        "parent",
        json!([
            turn(
                "",
                vec![
                    spawn("first", "build", "edit"),
                    spawn("second", "build", "edit")
                ]
            ),
            turn("", vec![wait_all()]),
            turn(
                "",
                vec![call("apply_subagent_changes", json!({"run_id": "first"}))]
            ),
            turn(
                "",
                vec![call("apply_subagent_changes", json!({"run_id": "second"}))]
            ),
            turn(
                "",
                vec![call("reject_subagent_changes", json!({"run_id": "second"}))]
            ),
            turn("", vec![done("first applied, second rejected")]),
        ]),
    );
    let run = run_parent(&h, &session.id, parent, models).await;
    assert_eq!(run.state, RunState::Completed, "{run:?}");
    let results = tool_results(&h, &session.id).await;
    let (first, second, reject) = (&results[3], &results[4], &results[5]);
    assert!(
        !first.1 && first.0.contains("Applied 1 change"),
        "{first:?}"
    );
    assert!(second.1, "{second:?}");
    assert!(second.0.contains("Conflict"), "{second:?}");
    assert!(
        second
            .0
            .contains("shared.txt: the parent's workspace changed it"),
        "{second:?}"
    );
    assert!(!reject.1 && reject.0.contains("Rejected"), "{reject:?}");
    assert_eq!(h.read(&h.project, "shared.txt").unwrap(), "first\n");
    assert_no_child_dirs(&h);
}

/// Lists the runtime's workspaces root from the host, so a scripted parent
/// can show which child directories exist at that point of its run.
#[derive(Debug)]
struct DirsProbe(ToolContract, Arc<OnceLock<PathBuf>>);

#[async_trait]
impl Tool for DirsProbe {
    fn contract(&self) -> &ToolContract {
        &self.0
    }

    async fn call(&self, _: &ToolContext, _: Value) -> Result<ToolOutput, ToolError> {
        let root = self.1.get().expect("the probe's root is set");
        Ok(ToolOutput::text(format!("left: {:?}", left_dirs(root))))
    }
}

#[tokio::test]
async fn an_apply_that_fails_midway_is_undone_and_works_once_the_cause_is_gone() {
    let root = Arc::new(OnceLock::new());
    let mut registry = ToolRegistry::builtin();
    registry.register(Arc::new(DirsProbe(
        ToolContract {
            name: "dirs_probe",
            description: "Lists the child workspace directories on the host.",
            parameters: json!({"type": "object", "properties": {}}),
            role: Role::Workspace,
            access: Access::ReadOnly,
            replay: Replay::Safe,
            timeout: Duration::from_secs(10),
            path_argument: None,
        },
        Arc::clone(&root),
    )));
    let h = Harness::with_registry(registry).await;
    root.set(h.workspaces_root()).unwrap();
    std::fs::write(h.project.join("a.txt"), "parent a\n").unwrap();
    std::fs::write(h.project.join("c.txt"), "parent c\n").unwrap();
    std::fs::set_permissions(
        h.project.join("c.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o640),
    )
    .unwrap();
    std::fs::create_dir(h.project.join("locked")).unwrap();
    std::fs::write(h.project.join("locked/f.txt"), "parent f\n").unwrap();
    let session = h.session("rollback").await;

    // in path order: a.txt modified, added/deep/x.txt added (with its
    // directories), c.txt deleted, locked/f.txt modified (refused below)
    let edit = "echo child a > a.txt && mkdir -p added/deep && echo new > added/deep/x.txt \
                && rm c.txt && echo child f > locked/f.txt";
    let mut models = Models::default();
    models.0.insert(
        "edit".into(),
        h.script(
            "edit",
            json!([
                turn("", vec![call("run_command", json!({"command": edit}))]),
                turn("", vec![done("edited four paths")]),
            ]),
        ),
    );
    let look = "cat a.txt c.txt locked/f.txt; stat -c 'mode %a' c.txt; \
                test -e added && echo ADDED || echo NO-ADDED";
    let apply = || call("apply_subagent_changes", json!({"run_id": "edit"}));
    let command = |c: &str| call("run_command", json!({ "command": c }));
    let parent = h.script(
        "parent",
        json!([
            turn("", vec![spawn("edit", "build", "edit")]),
            turn("", vec![wait_all()]),
            turn("", vec![call("dirs_probe", json!({}))]),
            // the parent's guest can no longer write in locked/ (no capabilities)
            turn("", vec![command("chmod 555 locked")]),
            turn("", vec![apply()]),
            turn("", vec![command(look)]),
            turn("", vec![command("chmod 755 locked")]),
            turn("", vec![apply()]),
            turn("", vec![done("applied on the second try")]),
        ]),
    );
    let run = run_parent(&h, &session.id, parent, models).await;
    assert_eq!(run.state, RunState::Completed, "{run:?}");
    let results = tool_results(&h, &session.id).await;
    let outputs: Vec<&str> = results.iter().map(|(c, _)| c.as_str()).collect();

    // the child's directory was gone before the parent applied its changes
    assert!(!results[1].1, "{outputs:?}");
    assert!(outputs[2].contains("left: []"), "{outputs:?}");

    let (failed, is_error) = &results[4];
    assert!(is_error, "{outputs:?}");
    assert!(
        failed.contains("Nothing of subagent")
            && failed.contains("writing locked/f.txt failed")
            && failed.contains("the 3 path(s) written before it were put back"),
        "{failed}"
    );
    // as it was: a.txt and c.txt (with its mode) back, no added/, locked/f.txt untouched
    let seen = outputs[5];
    assert!(
        seen.contains("parent a\nparent c\nparent f\nmode 640\nNO-ADDED"),
        "{seen}"
    );

    let (second, is_error) = &results[7];
    assert!(
        !is_error && second.contains("Applied 4 change(s)"),
        "{second}"
    );
    assert_eq!(h.read(&h.project, "a.txt").unwrap(), "child a\n");
    assert_eq!(h.read(&h.project, "added/deep/x.txt").unwrap(), "new\n");
    assert_eq!(h.read(&h.project, "c.txt"), None);
    assert_eq!(h.read(&h.project, "locked/f.txt").unwrap(), "child f\n");
    assert_no_child_dirs(&h);
}
