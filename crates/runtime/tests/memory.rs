//! Project and session memory end to end, on SQLite and on Postgres
//! (`PADDOCK_TEST_POSTGRES_URL`, set by scripts/postgres-test.sh; without it
//! the Postgres case says so and is skipped, and fails under CI): a fact
//! remembered in one session is in the system prompt of, and recalled by, a
//! new session of the same workspace after the process restarts, and never
//! in another tenant's; the end of a run leaves the session's memory and
//! proposes how the workspace is checked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use paddock_core::ids::TenantId;
use paddock_core::model::{ContentPart, Message};
use paddock_core::store::{MemoryFilter, MemoryStatus, RunState, Store};
use paddock_models::ScriptedProvider;
use paddock_runtime::tools::ToolRegistry;
use paddock_runtime::{Runtime, RuntimeConfig, RuntimeDeps, StartRun};
use paddock_test_support::{Stack, StackConfig};
use serde_json::{Value, json};
use support::{NODE, Recording, call, complete_met, turn};

const FACT: &str = "The zebra parser needs the ZEBRA_STRICT=1 environment variable in its tests";

/// One "process": a runtime over the database at `url`.
struct Process {
    runtime: Arc<Runtime>,
    store: Arc<dyn Store>,
}

async fn process(dir: &std::path::Path, url: &str) -> Process {
    let config = StackConfig {
        database_url: url.to_owned(),
        ..StackConfig::in_dir(dir, "paddock-test")
    };
    let stack = Stack::open(&config).await.unwrap();
    let store = Arc::clone(&stack.store);
    let runtime = Runtime::with_registry(
        RuntimeDeps {
            store: stack.store,
            backend: stack.backend,
            blobs: stack.blobs,
            config: RuntimeConfig::new(NODE, dir.join("workspaces")),
        },
        ToolRegistry::builtin(),
    );
    Process { runtime, store }
}

fn script(dir: &std::path::Path, name: &str, turns: Value) -> Arc<Recording> {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, json!({ "turns": turns }).to_string()).unwrap();
    Arc::new(Recording::new(
        ScriptedProvider::load(&path, 200_000).unwrap(),
    ))
}

fn results(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|p| match p {
            ContentPart::ToolResult(r) => Some(r.content.clone()),
            _ => None,
        })
        .collect()
}

async fn tenant(store: &dyn Store, id: &str) -> TenantId {
    let id = TenantId::parse(id).unwrap();
    store
        .ensure_tenant(&paddock_core::store::Tenant {
            id: id.clone(),
            name: id.to_string(),
            created_at: store.now(),
        })
        .await
        .unwrap();
    id
}

async fn remembered_in_one_session_recalled_in_the_next(url: &str, dir: &std::path::Path) {
    // unique tenants: a shared Postgres database holds other tests' rows too
    let suffix = &uuid_suffix();
    let project = dir.join("project");
    std::fs::create_dir_all(&project).unwrap();

    // first process: the agent remembers a fact, changes a file and checks it
    let first = process(dir, url).await;
    let acme = tenant(first.store.as_ref(), &format!("acme-{suffix}")).await;
    let workspace = first
        .runtime
        .workspace_for_dir(&acme, &project)
        .await
        .unwrap();
    let s1 = first
        .runtime
        .create_session(&acme, &workspace.id, "parser")
        .await
        .unwrap();
    let model = script(
        dir,
        "remember",
        json!([
            turn(
                "Noting it.",
                vec![call("remember", json!({"kind": "fact", "text": FACT}))]
            ),
            turn(
                "",
                vec![call(
                    "write_file",
                    json!({"path": "ok.sh", "content": "exit 0\n"})
                )]
            ),
            turn(
                "",
                vec![call("run_command", json!({"command": "sh ok.sh"}))]
            ),
            turn("Done.", vec![complete_met(vec![])]),
        ]),
    );
    let run = first
        .runtime
        .start_run(&acme, &s1.id, StartRun::new("Fix the zebra parser", model))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(run.state, RunState::Completed, "{run:?}");
    let memory = first
        .store
        .get_session_memory(&acme, &s1.id)
        .await
        .unwrap()
        .expect("the run left the session's memory");
    assert!(
        memory
            .memory
            .summary
            .starts_with("Goal: Fix the zebra parser\nCompleted: done")
    );
    assert!(
        memory
            .memory
            .facts
            .iter()
            .any(|f| f.contains("`sh ok.sh` checks")),
        "{memory:?}"
    );
    // the check was proposed, not made active
    let proposed = first
        .store
        .list_memories(
            &acme,
            &MemoryFilter {
                include_proposed: true,
                limit: 10,
                ..MemoryFilter::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(proposed.len(), 2, "{proposed:?}");
    let check = proposed
        .iter()
        .find(|r| r.text.contains("sh ok.sh"))
        .unwrap();
    assert_eq!(check.status, MemoryStatus::Proposed);
    assert_eq!(check.source_run.as_ref(), Some(&run.id));
    let fact = proposed.iter().find(|r| r.text == FACT).unwrap();
    assert_eq!(fact.status, MemoryStatus::Active);
    assert_eq!(fact.source_session.as_ref(), Some(&s1.id));
    first.store.close().await;
    drop(first);

    // second process, new session of the same workspace
    let second = process(dir, url).await;
    let s2 = second
        .runtime
        .create_session(&acme, &workspace.id, "tests")
        .await
        .unwrap();
    let model = script(
        dir,
        "recall",
        json!([
            turn(
                "",
                vec![call("recall", json!({"query": "zebra tests environment"}))]
            ),
            turn("Done.", vec![complete_met(vec![])]),
        ]),
    );
    let run = second
        .runtime
        .start_run(
            &acme,
            &s2.id,
            StartRun::new("Run the zebra tests", model.clone()),
        )
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(run.state, RunState::Completed, "{run:?}");
    let requests = model.requests();
    let system = requests[0].system.clone().unwrap();
    assert!(system.contains("Project memory"), "{system}");
    assert!(system.contains(FACT), "retrieved at run start");
    assert!(
        !system.contains("sh ok.sh"),
        "a proposed record is not used"
    );
    let recalled = results(&requests[1].messages);
    assert!(recalled[0].contains(FACT), "{recalled:?}");

    // another tenant, same directory: nothing of it
    let globex = tenant(second.store.as_ref(), &format!("globex-{suffix}")).await;
    let theirs = second
        .runtime
        .workspace_for_dir(&globex, &project)
        .await
        .unwrap();
    let s3 = second
        .runtime
        .create_session(&globex, &theirs.id, "tests")
        .await
        .unwrap();
    let model = script(
        dir,
        "other",
        json!([
            turn(
                "",
                vec![call("recall", json!({"query": "zebra tests environment"}))]
            ),
            turn("Done.", vec![complete_met(vec![])]),
        ]),
    );
    let run = second
        .runtime
        .start_run(
            &globex,
            &s3.id,
            StartRun::new("Run the zebra tests", model.clone()),
        )
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(run.state, RunState::Completed, "{run:?}");
    let requests = model.requests();
    assert!(!requests[0].system.clone().unwrap().contains(FACT));
    assert_eq!(results(&requests[1].messages)[0], "No memory matches.");
    second.store.close().await;
}

fn uuid_suffix() -> String {
    let id = paddock_core::ids::MemoryId::generate();
    id.as_str()[id.as_str().len() - 12..].to_owned()
}

#[tokio::test]
async fn memory_survives_a_restart_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("paddock.db").display());
    remembered_in_one_session_recalled_in_the_next(&url, dir.path()).await;
}

#[tokio::test]
async fn memory_survives_a_restart_on_postgres() {
    let Ok(url) = std::env::var("PADDOCK_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var("CI").is_err(),
            "PADDOCK_TEST_POSTGRES_URL is not set under CI"
        );
        eprintln!(
            "skipped: PADDOCK_TEST_POSTGRES_URL is not set (scripts/postgres-test.sh sets it)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    remembered_in_one_session_recalled_in_the_next(&url, dir.path()).await;
}
