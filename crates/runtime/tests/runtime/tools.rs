//! Every built-in tool end to end against a real native sandbox, through the
//! registry (policy, timeout, cancellation) as the run loop calls them. Needs
//! `paddock-guest` built (`cargo build -p paddock-guest`) and root, as the
//! sandbox tests do; PADDOCK_UNCONFINED=1 runs them against the unconfined guest.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use paddock_core::ids::{RunId, SessionId};
use paddock_core::sandbox::{GuestOps, SandboxPolicy, SandboxSpec, WriteOptions};
use paddock_core::store::RunMode;
use paddock_runtime::tools::{
    Effect, RunCommand, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, WriteFile,
    WriteScope,
};
use paddock_sandbox::NativeSandbox;
use paddock_test_support::{StackConfig, native_backend};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A running sandbox with the built-in tools pointed at it.
struct Bench {
    sandbox: NativeSandbox,
    registry: ToolRegistry,
    ctx: ToolContext,
    _temp_root: tempfile::TempDir,
}

impl Bench {
    async fn start(spec: SandboxSpec, mode: RunMode, write_scope: Option<WriteScope>) -> Self {
        let temp_root = tempfile::tempdir().unwrap();
        let config = StackConfig::in_dir(temp_root.path(), "paddock-test");
        let sandbox = native_backend(&config)
            .unwrap()
            .create_native(spec)
            .await
            .unwrap();
        let guest: Arc<dyn GuestOps> = Arc::new(sandbox.client().clone());
        let ctx = ToolContext {
            guest,
            mode,
            write_scope,
            session: SessionId::generate(),
            run: RunId::generate(),
            cancel: CancellationToken::new(),
            live: Default::default(),
            idempotency_key: None,
        };
        Self {
            sandbox,
            registry: ToolRegistry::builtin(),
            ctx,
            _temp_root: temp_root,
        }
    }

    async fn build() -> Self {
        Self::start(SandboxSpec::default(), RunMode::Build, None).await
    }

    async fn call(&self, name: &str, arguments: Value) -> Result<ToolOutput, ToolError> {
        self.registry.call(&self.ctx, name, arguments).await
    }

    /// A call that must succeed with a result that is not an error.
    async fn ok(&self, name: &str, arguments: Value) -> ToolOutput {
        let out = self.call(name, arguments.clone()).await.unwrap();
        assert!(!out.is_error, "{name} {arguments}: {}", out.content);
        out
    }

    fn host_path(&self, path: &str) -> PathBuf {
        self.sandbox.info().workspace.join(path)
    }

    async fn put(&self, path: &str, content: &str) {
        let options = WriteOptions {
            mode: None,
            create_parents: true,
        };
        self.ctx
            .guest
            .file_write(
                &paddock_proto::FsPath::from(path),
                content.as_bytes(),
                options,
            )
            .await
            .unwrap();
    }

    async fn finish(self) {
        self.sandbox.destroy().await.unwrap();
    }
}

fn invalid_reason(result: Result<ToolOutput, ToolError>) -> String {
    match result {
        Err(ToolError::InvalidArguments { reason, .. }) => reason,
        other => panic!("expected invalid arguments, got {other:?}"),
    }
}

fn denied_reason(result: Result<ToolOutput, ToolError>) -> String {
    match result {
        Err(ToolError::Denied { reason, .. }) => reason,
        other => panic!("expected a denial, got {other:?}"),
    }
}

#[tokio::test]
async fn write_then_read_with_ranges_and_caps() {
    let bench = Bench::build().await;
    let out = bench
        .ok(
            "write_file",
            json!({"path": "./src/deep/notes.txt", "content": "one\ntwo\nthree\nfour\n"}),
        )
        .await;
    assert_eq!(out.content, "wrote 19 bytes to src/deep/notes.txt");
    assert_eq!(
        out.effects,
        [Effect::FilesChanged {
            paths: vec!["src/deep/notes.txt".into()]
        }]
    );
    assert_eq!(
        std::fs::read_to_string(bench.host_path("src/deep/notes.txt")).unwrap(),
        "one\ntwo\nthree\nfour\n"
    );

    let whole = bench
        .ok("read_file", json!({"path": "src/deep/notes.txt"}))
        .await;
    assert_eq!(
        whole.content,
        "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n"
    );
    let range = bench
        .ok(
            "read_file",
            json!({"path": "src/deep/notes.txt", "start_line": 2, "end_line": 3}),
        )
        .await;
    assert_eq!(
        range.content,
        "     2\ttwo\n     3\tthree\n[lines 2-3 of 4]"
    );

    let past = bench
        .call(
            "read_file",
            json!({"path": "src/deep/notes.txt", "start_line": 9}),
        )
        .await
        .unwrap();
    assert!(past.is_error);
    assert!(past.content.contains("past the end"), "{}", past.content);

    let missing = bench
        .call("read_file", json!({"path": "nope.txt"}))
        .await
        .unwrap();
    assert!(missing.is_error, "{}", missing.content);
    assert!(
        missing.content.starts_with("read_file failed"),
        "{}",
        missing.content
    );
    assert_eq!(missing.data["error"], "not_found");

    // 20000 lines of 11 bytes: far past the 48 KiB cap.
    let big: String = (1..=20_000).map(|i| format!("line {i:05}\n")).collect();
    bench.put("big.txt", &big).await;
    let capped = bench.ok("read_file", json!({"path": "big.txt"})).await;
    assert!(capped.content.len() <= 49 << 10, "{}", capped.content.len());
    let note = capped.content.lines().last().unwrap();
    let next: u64 = capped.data["last_line"].as_u64().unwrap() + 1;
    assert!(
        note.contains(&format!("continue with start_line={next}")) && note.contains("20000 lines"),
        "{note}"
    );
    let rest = bench
        .ok(
            "read_file",
            json!({"path": "big.txt", "start_line": next, "end_line": next}),
        )
        .await;
    assert!(
        rest.content
            .starts_with(&format!("{next:>6}\tline {next:05}\n")),
        "{}",
        rest.content
    );

    bench
        .ctx
        .guest
        .file_write(
            &paddock_proto::FsPath::from("blob.bin"),
            b"\x7fELF\0\0\x01",
            WriteOptions::default(),
        )
        .await
        .unwrap();
    let binary = bench.ok("read_file", json!({"path": "blob.bin"})).await;
    assert_eq!(
        binary.content,
        "blob.bin is a binary file (7 bytes); not shown"
    );

    let escape = bench
        .call(
            "write_file",
            json!({"path": "../outside.txt", "content": "x"}),
        )
        .await;
    assert!(denied_reason(escape).contains("leaves the workspace"));
    bench.finish().await;
}

#[tokio::test]
async fn edit_replaces_exactly_once_and_explains_ambiguity() {
    let bench = Bench::build().await;
    bench.put("run.sh", "echo a\necho b\necho a\n").await;
    std::fs::set_permissions(
        bench.host_path("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();

    let ambiguous = bench
        .call(
            "edit_file",
            json!({"path": "run.sh", "old_string": "echo a", "new_string": "echo c"}),
        )
        .await;
    let reason = invalid_reason(ambiguous);
    assert!(
        reason.contains("occurs 2 times in run.sh (at lines 1, 3)"),
        "{reason}"
    );

    let missing = bench
        .call(
            "edit_file",
            json!({"path": "run.sh", "old_string": "echo z", "new_string": "echo c"}),
        )
        .await;
    assert!(invalid_reason(missing).contains("old_string was not found in run.sh"));

    let once = bench
        .ok(
            "edit_file",
            json!({"path": "run.sh", "old_string": "echo b\n", "new_string": "echo B\necho more\n"}),
        )
        .await;
    assert_eq!(once.content, "replaced 1 occurrence in run.sh (at line 2)");
    assert_eq!(
        once.effects,
        [Effect::FilesChanged {
            paths: vec!["run.sh".into()]
        }]
    );
    let all = bench
        .ok(
            "edit_file",
            json!({"path": "run.sh", "old_string": "echo a", "new_string": "echo c", "replace_all": true}),
        )
        .await;
    assert_eq!(all.data["replacements"], 2);
    let host = bench.host_path("run.sh");
    assert_eq!(
        std::fs::read_to_string(&host).unwrap(),
        "echo c\necho B\necho more\necho c\n"
    );
    assert_eq!(
        std::fs::metadata(&host).unwrap().permissions().mode() & 0o777,
        0o755,
        "an edit keeps the file's mode"
    );

    let no_file = bench
        .call(
            "edit_file",
            json!({"path": "absent.rs", "old_string": "a", "new_string": "b"}),
        )
        .await
        .unwrap();
    assert!(no_file.is_error, "{}", no_file.content);
    bench.finish().await;
}

#[tokio::test]
async fn run_command_reports_exit_codes_timeouts_and_capped_output() {
    let bench = Bench::build().await;
    let ok = bench
        .ok(
            "run_command",
            json!({"command": "echo out; echo err >&2; pwd"}),
        )
        .await;
    assert!(ok.content.contains("out\n"), "{}", ok.content);
    assert!(ok.content.contains("err\n"), "{}", ok.content);
    assert!(ok.content.contains("/workspace\n"), "{}", ok.content);
    let status = ok.content.lines().last().unwrap();
    assert!(
        status.starts_with("[exit code 0 after ") && status.ends_with("s]"),
        "{status}"
    );
    assert_eq!(
        ok.effects,
        [Effect::CommandFinished {
            command: "echo out; echo err >&2; pwd".into(),
            exit_code: Some(0),
            success: true
        }]
    );

    bench.put("sub/keep.txt", "").await;
    let cwd = bench
        .ok("run_command", json!({"command": "ls", "cwd": "sub"}))
        .await;
    assert!(cwd.content.starts_with("keep.txt\n"), "{}", cwd.content);

    let failed = bench
        .call("run_command", json!({"command": "echo failing; exit 3"}))
        .await
        .unwrap();
    assert!(!failed.is_error, "a non-zero exit is a normal result");
    assert!(
        failed.content.contains("[exit code 3 after"),
        "{}",
        failed.content
    );
    assert_eq!(
        failed.effects,
        [Effect::CommandFinished {
            command: "echo failing; exit 3".into(),
            exit_code: Some(3),
            success: false
        }]
    );

    let started = Instant::now();
    let slow = bench
        .ok(
            "run_command",
            json!({"command": "echo before; sleep 30", "timeout_secs": 1}),
        )
        .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(slow.content.starts_with("before\n"), "{}", slow.content);
    assert!(
        slow.content.contains("timed out after 1s"),
        "{}",
        slow.content
    );
    assert_eq!(slow.data["timed_out"], true);
    assert!(matches!(
        slow.effects.as_slice(),
        [Effect::CommandFinished { success: false, .. }]
    ));

    // About 1.3 MB of output: the start and the end survive, the middle is counted.
    let loud = bench
        .ok("run_command", json!({"command": "seq 1 200000"}))
        .await;
    assert!(
        loud.content.starts_with("1\n2\n3\n"),
        "{}",
        &loud.content[..20]
    );
    assert!(
        loud.content.contains("199999\n200000\n[exit code 0"),
        "tail kept"
    );
    assert!(loud.content.contains("bytes of output omitted"));
    assert!(loud.content.len() < 24 << 10, "{}", loud.content.len());
    assert_eq!(loud.data["output_truncated"], true);
    assert_eq!(loud.data["output_bytes"], 1_288_895);

    let too_long = bench
        .call(
            "run_command",
            json!({"command": "true", "timeout_secs": 3600}),
        )
        .await;
    assert!(invalid_reason(too_long).contains("between 1 and 600"));
    bench.finish().await;
}

#[tokio::test]
async fn a_cancelled_command_stops_promptly() {
    let bench = Bench::build().await;
    let cancel = bench.ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let result = bench
        .call("run_command", json!({"command": "sleep 30"}))
        .await;
    assert!(
        matches!(result, Err(ToolError::Cancelled { .. })),
        "{result:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    bench.finish().await;
}

#[tokio::test]
async fn background_processes_start_stream_and_stop() {
    let bench = Bench::build().await;
    let started = bench
        .ok(
            "process_start",
            json!({"command": "echo ready; exec sleep 60"}),
        )
        .await;
    let handle = started.data["handle"].as_u64().unwrap();
    assert!(
        started
            .content
            .starts_with(&format!("started process {handle}"))
    );

    let deadline = Instant::now() + Duration::from_secs(5);
    let first = loop {
        let out = bench
            .ok("process_output", json!({ "handle": handle }))
            .await;
        if out.content.contains("ready") || Instant::now() > deadline {
            break out;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(first.content.starts_with("ready\n"), "{}", first.content);
    assert!(
        first
            .content
            .ends_with(&format!("[process {handle} is running; next_offset 6]")),
        "{}",
        first.content
    );
    let next = bench
        .ok("process_output", json!({ "handle": handle, "offset": 6 }))
        .await;
    assert!(
        next.content.starts_with("(no new output)"),
        "{}",
        next.content
    );

    let stopped = bench
        .ok("process_stop", json!({ "handle": handle, "grace_secs": 2 }))
        .await;
    assert_eq!(
        stopped.content,
        format!("stopped process {handle} with SIGTERM: it was killed by signal 15")
    );
    let again = bench.ok("process_stop", json!({ "handle": handle })).await;
    assert!(
        again.content.contains("had already ended"),
        "{}",
        again.content
    );

    let short = bench
        .ok("process_start", json!({"command": "echo done; exit 4"}))
        .await;
    let short_handle = short.data["handle"].as_u64().unwrap();
    let ended = bench
        .ok(
            "process_output",
            json!({ "handle": short_handle, "wait_secs": 10 }),
        )
        .await;
    assert_eq!(
        ended.content,
        format!("done\n[process {short_handle} exited with code 4; next_offset 5]")
    );

    let unknown = bench
        .call("process_output", json!({ "handle": 999 }))
        .await
        .unwrap();
    assert!(unknown.is_error);
    assert_eq!(unknown.data["error"], "unknown_process");
    bench.finish().await;
}

#[tokio::test]
async fn workspace_tree_is_bounded_and_skips_heavy_directories() {
    let bench = Bench::build().await;
    for path in [
        "Cargo.toml",
        "src/main.rs",
        "src/a/b/c/deep.rs",
        "node_modules/pkg/index.js",
        ".git/config",
    ] {
        bench.put(path, "x").await;
    }
    bench.put("big.dat", &"z".repeat(20 << 10)).await;

    let tree = bench.ok("workspace_tree", json!({})).await;
    assert_eq!(
        tree.content,
        [
            "/workspace/",
            "  .git/  (skipped)",
            "  Cargo.toml",
            "  big.dat  (20 KiB)",
            "  node_modules/  (skipped)",
            "  src/",
            "    a/",
            "      b/  (not expanded)",
            "    main.rs",
        ]
        .join("\n")
    );

    let everything = bench
        .ok(
            "workspace_tree",
            json!({"path": "node_modules", "include_skipped": true, "max_depth": 5}),
        )
        .await;
    assert_eq!(everything.content, "node_modules/\n  pkg/\n    index.js");

    let few = bench.ok("workspace_tree", json!({"max_entries": 2})).await;
    assert_eq!(few.data["truncated"], true);
    assert!(
        few.content.ends_with("raise max_entries]"),
        "{}",
        few.content
    );

    let not_dir = bench
        .call("workspace_tree", json!({"path": "Cargo.toml"}))
        .await
        .unwrap();
    assert!(not_dir.is_error, "{}", not_dir.content);
    bench.finish().await;
}

#[tokio::test]
async fn search_finds_lines_and_names_and_leaves_out_dependencies() {
    let bench = Bench::build().await;
    bench
        .put("src/lib.rs", "fn a() {}\nlet needle = 1;\n")
        .await;
    bench.put("src/util.py", "needle()\n").await;
    bench.put("node_modules/x/needle.js", "needle\n").await;

    let text = bench.ok("search", json!({"text": "needle"})).await;
    let mut lines: Vec<&str> = text.content.lines().collect();
    let note = lines.pop().unwrap();
    lines.sort_unstable();
    assert_eq!(
        lines,
        ["src/lib.rs:2: let needle = 1;", "src/util.py:1: needle()"]
    );
    assert_eq!(
        note,
        "[1 matches under .git, node_modules, target left out]"
    );

    let names = bench
        .ok("search", json!({"name_glob": "*.rs", "path": "src"}))
        .await;
    assert_eq!(names.content, "src/lib.rs\n");

    let none = bench.ok("search", json!({"text": "haystack"})).await;
    assert_eq!(none.content, "no matches\n");

    let capped = bench
        .ok("search", json!({"text": "needle", "max_results": 1}))
        .await;
    assert_eq!(capped.data["matches"], 1);
    assert!(
        capped.content.contains("[stopped at 1 matches"),
        "{}",
        capped.content
    );

    let neither = bench.call("search", json!({"path": "src"})).await;
    assert!(invalid_reason(neither).contains("give text, name_glob or both"));
    bench.finish().await;
}

#[tokio::test]
async fn plan_mode_refuses_writes_at_the_policy_and_in_the_sandbox() {
    let spec = SandboxSpec::with_policy(SandboxPolicy {
        read_only: true,
        ..SandboxPolicy::default()
    });
    let bench = Bench::start(spec, RunMode::Plan, None).await;

    // Layer 1, the tool policy: mutating tools are refused outright.
    let write = bench
        .call("write_file", json!({"path": "x", "content": "y"}))
        .await;
    assert!(denied_reason(write).contains("plan mode allows only read-only tools"));
    let shell = bench
        .call("run_command", json!({"command": "touch x"}))
        .await;
    assert!(denied_reason(shell).contains("plan mode"));
    assert!(!bench.host_path("x").exists());

    // Layer 2, the sandbox: the same calls made past the policy still cannot write.
    let touched = RunCommand::new()
        .call(&bench.ctx, json!({"command": "touch x"}))
        .await
        .unwrap();
    assert!(
        matches!(
            touched.effects.as_slice(),
            [Effect::CommandFinished { success: false, exit_code: Some(code), .. }] if *code != 0
        ),
        "{}",
        touched.content
    );
    assert!(
        touched.content.contains("Read-only file system"),
        "{}",
        touched.content
    );
    let written = WriteFile::new()
        .call(&bench.ctx, json!({"path": "x", "content": "y"}))
        .await
        .unwrap();
    assert!(written.is_error, "{}", written.content);
    assert!(!bench.host_path("x").exists());

    // Reading and the control tools still work.
    bench.ok("workspace_tree", json!({})).await;
    let plan = bench
        .ok(
            "update_plan",
            json!({"steps": [{"id": "1", "title": "read the code", "status": "in_progress"}]}),
        )
        .await;
    assert!(matches!(
        plan.effects.as_slice(),
        [Effect::PlanUpdated { .. }]
    ));
    bench.finish().await;
}

#[tokio::test]
async fn the_write_scope_bounds_file_tools() {
    let scope = WriteScope(vec!["src".into(), "docs/guide.md".into()]);
    let bench = Bench::start(SandboxSpec::default(), RunMode::Build, Some(scope)).await;
    bench
        .ok(
            "write_file",
            json!({"path": "src/new.rs", "content": "fn main() {}\n"}),
        )
        .await;
    bench
        .ok(
            "write_file",
            json!({"path": "docs/guide.md", "content": "# guide\n"}),
        )
        .await;

    let outside = bench
        .call("write_file", json!({"path": "README.md", "content": "x"}))
        .await;
    let reason = denied_reason(outside);
    assert!(
        reason.contains(
            "README.md is outside the write scope of this run (allowed: src, docs/guide.md)"
        ),
        "{reason}"
    );
    let sneaky = bench
        .call(
            "edit_file",
            json!({"path": "src/../docs/other.md", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert!(denied_reason(sneaky).contains("docs/other.md is outside the write scope"));
    assert!(!bench.host_path("README.md").exists());
    assert!(bench.host_path("src/new.rs").exists());

    // Commands are not scope-checked by the tool layer (see tools::policy).
    bench
        .ok("run_command", json!({"command": "echo hi > notes.txt"}))
        .await;
    bench.finish().await;
}
