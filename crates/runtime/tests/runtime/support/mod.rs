//! What every runtime scenario test needs: the shared [`Stack`] (a SQLite
//! store in a temporary directory, real native sandboxes: build
//! `paddock-guest` first; run as root, or with PADDOCK_UNCONFINED=1 against
//! the unconfined guest; a local blob store) under a runtime, scripted models
//! that record what they were asked, and helpers to read a session's events.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use paddock_core::ids::{SessionId, TenantId};
use paddock_core::model::{ModelProvider, ModelRequest, ModelStream};
use paddock_core::store::{Run, RunEvent, Session, Store, Workspace};
use paddock_models::ScriptedProvider;
use paddock_runtime::tools::ToolRegistry;
use paddock_runtime::{Runtime, RuntimeConfig, RuntimeDeps};
use paddock_test_support::{Stack, StackConfig};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub const NODE: &str = "test-node";

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub store: Arc<dyn Store>,
    pub runtime: Arc<Runtime>,
    pub tenant: TenantId,
    pub project: PathBuf,
    pub workspace: Workspace,
}

impl Harness {
    pub async fn new() -> Self {
        Self::with_registry(ToolRegistry::builtin()).await
    }

    pub async fn with_registry(registry: ToolRegistry) -> Self {
        Self::configured(registry, |_| {}).await
    }

    /// A harness whose runtime settings `configure` changes.
    pub async fn configured(
        registry: ToolRegistry,
        configure: impl FnOnce(&mut RuntimeConfig),
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let stack = Stack::open(&StackConfig::in_dir(dir.path(), "paddock-test"))
            .await
            .unwrap();
        let tenant = stack.tenant("acme", "Acme").await.unwrap();
        let store = Arc::clone(&stack.store);
        let mut config = RuntimeConfig::new(NODE, dir.path().join("workspaces"));
        config.lease_ttl = Duration::from_secs(10);
        configure(&mut config);
        let runtime = Runtime::with_registry(
            RuntimeDeps {
                store: stack.store,
                backend: stack.backend,
                blobs: stack.blobs,
                config,
            },
            registry,
        );
        let project = dir.path().join("project");
        std::fs::create_dir_all(&project).unwrap();
        let workspace = runtime.workspace_for_dir(&tenant, &project).await.unwrap();
        Self {
            dir,
            store,
            runtime,
            tenant,
            project,
            workspace,
        }
    }

    pub async fn session(&self, title: &str) -> Session {
        self.runtime
            .create_session(&self.tenant, &self.workspace.id, title)
            .await
            .unwrap()
    }

    /// Every event of the session, from the store.
    pub async fn events(&self, session: &SessionId) -> Vec<RunEvent> {
        let mut events: Vec<RunEvent> = Vec::new();
        loop {
            let after = events.last().map_or(0, |e| e.seq);
            let page = self
                .store
                .list_events(&self.tenant, session, after, 1_000)
                .await
                .unwrap();
            if page.is_empty() {
                return events;
            }
            events.extend(page);
        }
    }

    /// The payloads of the session's events of `kind`.
    pub async fn payloads(&self, session: &SessionId, kind: &str) -> Vec<Value> {
        self.events(session)
            .await
            .into_iter()
            .filter(|e| e.kind == kind)
            .map(|e| serde_json::from_str(&e.payload).unwrap())
            .collect()
    }

    pub fn script(&self, name: &str, turns: Value) -> Arc<Recording> {
        self.script_with_window(name, turns, 200_000)
    }

    /// A script for a model with a context window of `window` tokens.
    pub fn script_with_window(&self, name: &str, turns: Value, window: u32) -> Arc<Recording> {
        let path = self.dir.path().join(format!("{name}.json"));
        std::fs::write(&path, serde_json::json!({ "turns": turns }).to_string()).unwrap();
        Arc::new(Recording::new(
            ScriptedProvider::load(&path, window).unwrap(),
        ))
    }

    pub fn read(&self, dir: &Path, file: &str) -> Option<String> {
        std::fs::read_to_string(dir.join(file)).ok()
    }

    pub fn workspaces_root(&self) -> PathBuf {
        self.runtime.config().workspaces_root.clone()
    }
}

/// A provider that hands requests to an inner one and keeps a copy of each.
#[derive(Debug)]
pub struct Recording {
    inner: ScriptedProvider,
    pub requests: Mutex<Vec<ModelRequest>>,
}

impl Recording {
    pub fn new(inner: ScriptedProvider) -> Self {
        Self {
            inner,
            requests: Mutex::new(Vec::new()),
        }
    }

    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl ModelProvider for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn context_window(&self) -> u32 {
        self.inner.context_window()
    }

    fn stream(&self, request: &ModelRequest, cancel: CancellationToken) -> ModelStream {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.stream(request, cancel)
    }
}

/// A tool call of a scripted turn.
pub fn call(name: &str, arguments: Value) -> Value {
    serde_json::json!({ "name": name, "arguments": arguments })
}

/// A scripted turn with some text and calls.
pub fn turn(text: &str, calls: Vec<Value>) -> Value {
    serde_json::json!({ "text": text, "tool_calls": calls })
}

pub fn complete_met(criteria: Vec<(&str, &str)>) -> Value {
    let criteria: Vec<Value> = criteria
        .into_iter()
        .map(|(criterion, evidence)| {
            serde_json::json!({"criterion": criterion, "verdict": "met", "evidence": evidence})
        })
        .collect();
    call(
        "complete_task",
        serde_json::json!({
            "verdict": "met",
            "summary": "done",
            "evidence": ["see criteria"],
            "criteria": criteria,
        }),
    )
}

/// The tool result contents of the session's stored history, in order.
pub async fn tool_results(h: &Harness, session: &SessionId) -> Vec<(String, bool)> {
    h.store
        .list_messages(&h.tenant, session, None)
        .await
        .unwrap()
        .into_iter()
        .flat_map(|m| m.message.content)
        .filter_map(|part| match part {
            paddock_core::model::ContentPart::ToolResult(r) => Some((r.content, r.is_error)),
            _ => None,
        })
        .collect()
}

pub fn assert_finished(run: &Run) {
    assert!(
        run.state.is_terminal() || run.state == paddock_core::store::RunState::AwaitingUser,
        "{run:?}"
    );
}

/// Writes a small project into `project` for the checkpoint tests: three
/// distinct contents (one file twice), 64 KiB and a few lines.
pub fn seed(project: &Path) {
    std::fs::create_dir_all(project.join("src/nested")).unwrap();
    std::fs::write(project.join("README.md"), "# Project\n\nhello\n").unwrap();
    std::fs::write(project.join("src/lib.rs"), "pub fn f() -> u32 { 1 }\n").unwrap();
    std::fs::write(
        project.join("src/nested/same.rs"),
        "pub fn f() -> u32 { 1 }\n",
    )
    .unwrap();
    let binary: Vec<u8> = (0..65_536u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(project.join("data.bin"), binary).unwrap();
    // out of the racy window: a file changed within 100 ms of a capture is
    // hashed again by the next one
    std::thread::sleep(Duration::from_millis(200));
}
