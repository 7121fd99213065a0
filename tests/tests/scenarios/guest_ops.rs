//! Protocol features through the host library against a REAL jailed sandbox:
//! exec (stdin, streaming, signals, timeouts, output caps), background
//! processes with reattach, every file operation, and path-escape refusals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::future::Future;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use paddock_core::sandbox::{ExecEvent, GuestError, GuestOps, SandboxSpec, WriteOptions};
use paddock_proto::{
    ErrorCode, ExecSpec, FileKind, LayerState, OutputStream, SearchSpec, StdinMode,
};
use paddock_sandbox::{NativeBackend, NativeConfig, NativeSandbox, locate_guest_bin};
use paddock_tests::host::require_root;

const DEADLINE: Duration = Duration::from_secs(60);

/// Every test fails rather than hangs.
async fn within<F: Future>(fut: F) -> F::Output {
    tokio::time::timeout(DEADLINE, fut)
        .await
        .expect("test exceeded its deadline")
}

async fn sandbox(workspace: &Path) -> NativeSandbox {
    require_root();
    let guest = locate_guest_bin(None).unwrap();
    let backend = NativeBackend::new(NativeConfig::new(guest));
    let spec = SandboxSpec {
        workspace: Some(workspace.to_path_buf()),
        ..SandboxSpec::default()
    };
    backend.create_native(spec).await.unwrap()
}

fn shell(script: &str) -> ExecSpec {
    ExecSpec {
        shell: Some(script.to_owned()),
        ..ExecSpec::default()
    }
}

fn refused_with(result: Result<impl std::fmt::Debug, GuestError>, code: ErrorCode, what: &str) {
    match result {
        Err(e) => assert_eq!(e.code(), Some(code), "{what}: {e:?}"),
        Ok(v) => panic!("{what} was accepted: {v:?}"),
    }
}

#[tokio::test]
async fn info_reports_a_fully_enforced_jail() {
    let ws = tempfile::tempdir().unwrap();
    within(async {
        let sb = sandbox(ws.path()).await;
        let info = sb.client().info().await.unwrap();
        let e = &info.enforcement;
        assert_eq!(info.version, paddock_proto::PROTOCOL_VERSION);
        for state in [
            &e.landlock,
            &e.seccomp,
            &e.no_new_privs,
            &e.capabilities_dropped,
        ] {
            assert_eq!(state, &LayerState::Enforced, "{e:?}");
        }
        assert!(e.uid_map.is_some_and(|(_, host, _)| host >= 100_000));
        sb.destroy().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn exec_collects_output_exit_code_cwd_and_env() {
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir(ws.path().join("sub")).unwrap();
    within(async {
        let sb = sandbox(ws.path()).await;
        let out = sb
            .client()
            .exec_output(
                ExecSpec {
                    cwd: Some("sub".into()),
                    env: BTreeMap::from([("GREETING".into(), "hej".into())]),
                    ..shell("pwd; echo $GREETING; echo oops >&2; exit 3")
                },
                &[],
            )
            .await
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "/workspace/sub\nhej\n"
        );
        assert_eq!(String::from_utf8_lossy(&out.stderr), "oops\n");
        assert_eq!((out.exit.code, out.exit.signal), (Some(3), None));

        // The guest enters the root only when the last command ran
        // elsewhere: the root after a subdirectory, the root again, then
        // the subdirectory again.
        for (cwd, expected) in [
            (None, "/workspace\n"),
            (Some("."), "/workspace\n"),
            (Some("sub"), "/workspace/sub\n"),
            (None, "/workspace\n"),
        ] {
            let spec = ExecSpec {
                cwd: cwd.map(Into::into),
                ..shell("pwd")
            };
            let out = sb.client().exec_output(spec, &[]).await.unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                expected,
                "cwd {cwd:?}"
            );
        }

        let argv = ExecSpec {
            argv: vec!["printf".into(), "%s|".into(), "a b".into(), "c".into()],
            ..ExecSpec::default()
        };
        let out = sb.client().exec_output(argv, &[]).await.unwrap();
        assert_eq!(out.stdout, b"a b|c|");

        let escape = ExecSpec {
            cwd: Some("../etc".into()),
            ..shell("pwd")
        };
        refused_with(
            sb.client().exec_output(escape, &[]).await,
            ErrorCode::PathEscape,
            "cwd ../etc",
        );
        sb.destroy().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn exec_stdin_as_payload_and_as_a_stream() {
    let ws = tempfile::tempdir().unwrap();
    within(async {
        let sb = sandbox(ws.path()).await;
        let data: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
        let spec = ExecSpec {
            argv: vec!["cat".into()],
            stdin: StdinMode::Payload,
            ..ExecSpec::default()
        };
        let out = sb.client().exec_output(spec, &data).await.unwrap();
        assert!(out.stdout == data, "payload stdin came back changed");

        let spec = ExecSpec {
            argv: vec!["cat".into()],
            stdin: StdinMode::Stream,
            ..ExecSpec::default()
        };
        let mut exec = sb.client().exec(spec, &[]).await.unwrap();
        let id = exec.id();
        assert!(matches!(
            exec.next_event().await.unwrap(),
            Some(ExecEvent::Started { .. })
        ));
        sb.client().exec_stdin(id, b"first ", false).await.unwrap();
        // The first chunk comes back while stdin is still open: it streams.
        match exec.next_event().await.unwrap() {
            Some(ExecEvent::Output {
                stream: OutputStream::Stdout,
                data,
            }) => assert_eq!(data, b"first "),
            other => panic!("expected streamed output, got {other:?}"),
        }
        sb.client().exec_stdin(id, b"second", true).await.unwrap();
        let mut rest = Vec::new();
        let mut exit = None;
        while let Some(event) = exec.next_event().await.unwrap() {
            match event {
                ExecEvent::Output { data, .. } => rest.extend(data),
                ExecEvent::Exited(e) => exit = Some(e),
                ExecEvent::Started { .. } => panic!("started twice"),
            }
        }
        assert_eq!(rest, b"second");
        assert_eq!(exit.unwrap().code, Some(0));
        sb.destroy().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn exec_signal_timeout_and_output_cap() {
    let ws = tempfile::tempdir().unwrap();
    within(async {
        let sb = sandbox(ws.path()).await;
        let mut exec = sb.client().exec(shell("exec sleep 30"), &[]).await.unwrap();
        assert!(matches!(
            exec.next_event().await.unwrap(),
            Some(ExecEvent::Started { .. })
        ));
        sb.client()
            .exec_signal(exec.id(), libc::SIGTERM)
            .await
            .unwrap();
        let exit = loop {
            if let Some(ExecEvent::Exited(e)) = exec.next_event().await.unwrap() {
                break e;
            }
        };
        assert_eq!((exit.code, exit.signal), (None, Some(libc::SIGTERM)));

        let timed = ExecSpec {
            timeout_ms: Some(300),
            ..shell("exec sleep 30")
        };
        let out = sb.client().exec_output(timed, &[]).await.unwrap();
        assert!(out.exit.timed_out, "{:?}", out.exit);
        assert!(out.exit.duration_ms < 10_000);

        let capped = ExecSpec {
            output_cap: Some(1000),
            ..shell("head -c 100000 /dev/zero; echo tail >&2")
        };
        let out = sb.client().exec_output(capped, &[]).await.unwrap();
        assert!(out.exit.truncated, "{:?}", out.exit);
        assert!(out.stdout.len() + out.stderr.len() <= 1000);
        assert_eq!(out.exit.code, Some(0));
        sb.destroy().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn background_processes_can_be_listed_read_again_written_and_waited() {
    let ws = tempfile::tempdir().unwrap();
    within(async {
        let sb = sandbox(ws.path()).await;
        let c = sb.client();
        let spec = ExecSpec {
            stdin: StdinMode::Stream,
            ..shell("echo one; echo two; read x; echo \"got $x\"")
        };
        let started = c.process_start(spec).await.unwrap();
        let listed = c.process_list().await.unwrap();
        let me = listed
            .iter()
            .find(|p| p.handle == started.handle)
            .expect("the process is listed");
        assert_eq!(me.pid, started.pid);
        assert!(me.running);

        // Poll until the first two lines are there (bounded by `within`).
        let first = loop {
            let out = c.process_read(started.handle, 0, 1 << 20).await.unwrap();
            if out.data == b"one\ntwo\n" {
                break out;
            }
            assert!(out.running, "exited early: {out:?}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        assert_eq!((first.offset, first.next_offset, first.dropped), (0, 8, 0));
        // A client that reattaches reads the same bytes again from any offset.
        let again = c.process_read(started.handle, 4, 1 << 20).await.unwrap();
        assert_eq!(again.data, b"two\n");

        c.process_write(started.handle, b"hello\n", true)
            .await
            .unwrap();
        let status = c.process_wait(started.handle, Some(20_000)).await.unwrap();
        assert!(!status.running);
        assert_eq!(status.exit.unwrap().code, Some(0));
        let rest = c.process_read(started.handle, 8, 1 << 20).await.unwrap();
        assert_eq!(rest.data, b"got hello\n");
        assert!(!rest.running);

        refused_with(
            c.process_read(started.handle + 1000, 0, 10).await,
            ErrorCode::UnknownProcess,
            "reading an unknown handle",
        );
        sb.destroy().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn background_output_is_bounded_and_signals_reach_the_process() {
    let ws = tempfile::tempdir().unwrap();
    within(async {
        let sb = sandbox(ws.path()).await;
        let c = sb.client();
        let total: u64 = 3 << 20;
        let noisy = c
            .process_start(shell(&format!("head -c {total} /dev/zero")))
            .await
            .unwrap();
        let status = c.process_wait(noisy.handle, Some(20_000)).await.unwrap();
        assert_eq!(status.exit.unwrap().code, Some(0));
        let out = c.process_read(noisy.handle, 0, 64).await.unwrap();
        assert!(
            out.dropped > 0 && out.offset > 0,
            "{:?}",
            (out.offset, out.dropped)
        );
        assert_eq!(out.offset, out.dropped);
        assert!(out.data.len() <= 64);
        let tail = c.process_read(noisy.handle, total - 10, 64).await.unwrap();
        assert_eq!((tail.data.len(), tail.next_offset), (10, total));

        let sleeper = c.process_start(shell("exec sleep 30")).await.unwrap();
        c.process_signal(sleeper.handle, libc::SIGTERM)
            .await
            .unwrap();
        let status = c.process_wait(sleeper.handle, Some(20_000)).await.unwrap();
        let exit = status.exit.unwrap();
        assert_eq!((exit.code, exit.signal), (None, Some(libc::SIGTERM)));

        let waiting = c.process_start(shell("exec sleep 30")).await.unwrap();
        let status = c.process_wait(waiting.handle, Some(50)).await.unwrap();
        assert!(status.running && status.exit.is_none());
        sb.destroy().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn every_file_operation_works_inside_the_workspace() {
    let ws = tempfile::tempdir().unwrap();
    let host = ws.path().to_path_buf();
    within(async {
        let sb = sandbox(&host).await;
        let c = sb.client();
        let opts = WriteOptions {
            mode: Some(0o600),
            create_parents: true,
        };
        assert_eq!(
            c.file_write(&paddock_proto::FsPath::from("a/b.txt"), b"0123456789", opts)
                .await
                .unwrap(),
            10
        );
        assert_eq!(fs::read(host.join("a/b.txt")).unwrap(), b"0123456789");
        assert_eq!(
            fs::metadata(host.join("a/b.txt"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
        // Atomic replace: the old content is gone, no temporary file is left.
        c.file_write(
            &paddock_proto::FsPath::from("a/b.txt"),
            b"needle in here\nsecond line\n",
            WriteOptions::default(),
        )
        .await
        .unwrap();
        let names: Vec<String> = fs::read_dir(host.join("a"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["b.txt"]);

        let part = c
            .file_read(&paddock_proto::FsPath::from("a/b.txt"), 3, Some(6))
            .await
            .unwrap();
        assert_eq!(
            (part.size, part.offset, part.data.as_slice()),
            (27, 3, &b"dle in"[..])
        );
        let whole = c
            .file_read(&paddock_proto::FsPath::from("/workspace/a/b.txt"), 0, None)
            .await
            .unwrap();
        assert_eq!(whole.data, b"needle in here\nsecond line\n");

        let stat = c
            .file_stat(&paddock_proto::FsPath::from("a/b.txt"))
            .await
            .unwrap();
        assert_eq!((stat.kind, stat.size), (FileKind::File, 27));
        assert_eq!(
            c.file_stat(&paddock_proto::FsPath::from("a"))
                .await
                .unwrap()
                .kind,
            FileKind::Dir
        );

        c.mkdir(&paddock_proto::FsPath::from("x/y"), true)
            .await
            .unwrap();
        assert!(host.join("x/y").is_dir());
        refused_with(
            c.mkdir(&paddock_proto::FsPath::from("x/y"), false).await,
            ErrorCode::AlreadyExists,
            "mkdir twice",
        );
        c.rename(
            &paddock_proto::FsPath::from("a/b.txt"),
            &paddock_proto::FsPath::from("x/y/c.txt"),
        )
        .await
        .unwrap();
        assert!(!host.join("a/b.txt").exists());
        assert!(host.join("x/y/c.txt").is_file());

        let listed: Vec<String> = c
            .file_list(&paddock_proto::FsPath::from("x/y"))
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.name.display())
            .collect();
        assert_eq!(listed, ["c.txt"]);

        let by_name = c
            .search(SearchSpec {
                path: None,
                name_glob: Some("*.txt".into()),
                content: None,
                max_results: 10,
                max_file_bytes: None,
            })
            .await
            .unwrap();
        assert_eq!(by_name.matches.len(), 1);
        assert_eq!(by_name.matches[0].path, "x/y/c.txt");
        let by_content = c
            .search(SearchSpec {
                path: Some("x".into()),
                name_glob: None,
                content: Some("needle".into()),
                max_results: 10,
                max_file_bytes: None,
            })
            .await
            .unwrap();
        assert_eq!(by_content.matches.len(), 1);
        assert_eq!(by_content.matches[0].line, Some(1));
        assert_eq!(
            by_content.matches[0].text.as_deref(),
            Some("needle in here")
        );

        refused_with(
            c.remove(&paddock_proto::FsPath::from("x"), false).await,
            ErrorCode::DirectoryNotEmpty,
            "rmdir non-empty",
        );
        c.remove(&paddock_proto::FsPath::from("x"), true)
            .await
            .unwrap();
        assert!(!host.join("x").exists());
        refused_with(
            c.file_read(&paddock_proto::FsPath::from("x/y/c.txt"), 0, None)
                .await,
            ErrorCode::NotFound,
            "read removed",
        );
        sb.destroy().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn paths_that_leave_the_workspace_are_refused_before_any_io() {
    let parent = tempfile::tempdir().unwrap();
    let host = parent.path().join("ws");
    let outside = parent.path().join("outside");
    fs::create_dir(&host).unwrap();
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("secret"), "secret").unwrap();
    fs::write(host.join("inside.txt"), "inside").unwrap();
    std::os::unix::fs::symlink("/etc", host.join("link-abs")).unwrap();
    std::os::unix::fs::symlink("../outside", host.join("link-up")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", host.join("link-file")).unwrap();
    std::os::unix::fs::symlink("inside.txt", host.join("link-inside")).unwrap();
    within(async {
        let sb = sandbox(&host).await;
        let c = sb.client();
        let escapes = [
            "../outside/secret",
            "/etc/passwd",
            "/workspace/../etc/passwd",
            "a/../../outside/secret",
            "link-abs/passwd",
            "link-up/secret",
            "/proc/self/root/etc/passwd",
        ];
        for path in escapes {
            refused_with(
                c.file_read(&paddock_proto::FsPath::from(path), 0, None)
                    .await,
                ErrorCode::PathEscape,
                &format!("read {path}"),
            );
            refused_with(
                c.file_write(
                    &paddock_proto::FsPath::from(path),
                    b"x",
                    WriteOptions {
                        mode: None,
                        create_parents: true,
                    },
                )
                .await,
                ErrorCode::PathEscape,
                &format!("write {path}"),
            );
            refused_with(
                c.file_stat(&paddock_proto::FsPath::from(&format!("{path}/x")))
                    .await,
                ErrorCode::PathEscape,
                &format!("stat {path}/x"),
            );
            refused_with(
                c.mkdir(&paddock_proto::FsPath::from(&format!("{path}-dir")), true)
                    .await,
                ErrorCode::PathEscape,
                &format!("mkdir {path}-dir"),
            );
            refused_with(
                c.remove(&paddock_proto::FsPath::from(path), true).await,
                ErrorCode::PathEscape,
                &format!("remove {path}"),
            );
            refused_with(
                c.rename(
                    &paddock_proto::FsPath::from("inside.txt"),
                    &paddock_proto::FsPath::from(path),
                )
                .await,
                ErrorCode::PathEscape,
                &format!("rename to {path}"),
            );
            refused_with(
                c.rename(
                    &paddock_proto::FsPath::from(path),
                    &paddock_proto::FsPath::from("stolen"),
                )
                .await,
                ErrorCode::PathEscape,
                &format!("rename from {path}"),
            );
        }
        for dir in ["..", "/", "link-abs", "link-up", "/workspace/.."] {
            refused_with(
                c.file_list(&paddock_proto::FsPath::from(dir)).await,
                ErrorCode::PathEscape,
                &format!("list {dir}"),
            );
            let spec = SearchSpec {
                path: Some(dir.into()),
                name_glob: Some("*".into()),
                content: None,
                max_results: 10,
                max_file_bytes: None,
            };
            refused_with(
                c.search(spec).await,
                ErrorCode::PathEscape,
                &format!("search {dir}"),
            );
        }
        // Reading through a final symlink that points outside.
        refused_with(
            c.file_read(&paddock_proto::FsPath::from("link-file"), 0, None)
                .await,
            ErrorCode::PathEscape,
            "read link-file",
        );
        // A symlink that stays inside is fine.
        let inside = c
            .file_read(&paddock_proto::FsPath::from("link-inside"), 0, None)
            .await
            .unwrap();
        assert_eq!(inside.data, b"inside");
        sb.destroy().await.unwrap();
    })
    .await;
    // Nothing happened outside, and nothing moved inside.
    assert_eq!(
        fs::read_to_string(outside.join("secret")).unwrap(),
        "secret"
    );
    let outside_names: Vec<_> = fs::read_dir(&outside).unwrap().collect();
    assert_eq!(outside_names.len(), 1);
    assert_eq!(
        fs::read_to_string(host.join("inside.txt")).unwrap(),
        "inside"
    );
    assert!(!host.join("stolen").exists());
    assert!(
        fs::symlink_metadata(host.join("link-abs"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}
