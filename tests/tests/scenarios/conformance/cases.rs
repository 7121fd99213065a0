//! The cases of the conformance suite, each a function of one backend.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use paddock_core::sandbox::{
    GuestOps, Sandbox, SandboxBackend, SandboxLimits, SandboxPolicy, SandboxSpec,
    SnapshotExportOptions, SnapshotImportOptions, WriteOptions,
};
use paddock_proto::{ErrorCode, ExecSpec, LayerState, PtySize};
use paddock_tests::backends::{self, Kind};
use paddock_tests::host::require_root;

pub use super::network::{
    net_allowed_host, net_dns_unlisted_unanswered, net_full_guarded, net_ip_literal,
    net_metadata_refused, net_orphans_reaped, net_other_host_refused,
    net_private_and_loopback_refused, net_secret_only_to_its_host,
};
pub use super::pool_workspace::pool_workspace_quota;
pub use super::ports::port_tunnel;
pub use super::volumes::volume_mount;

const DEADLINE: Duration = Duration::from_secs(120);

pub struct Ctx {
    pub kind: Kind,
    pub backend: Box<dyn SandboxBackend>,
}

pub type Case = for<'a> fn(&'a Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

pub async fn run(kind: Kind, name: &str, case: Case) {
    require_root();
    let Some(backend) = backends::for_test(kind, name).await else {
        return;
    };
    let ctx = Ctx { kind, backend };
    tokio::time::timeout(DEADLINE, case(&ctx))
        .await
        .unwrap_or_else(|_| panic!("{name} [{}] exceeded its deadline", kind.name()));
}

/// A VM boot under TCG on a loaded 2-core host can take a minute.
const GROUP_DEADLINE: Duration = Duration::from_secs(600);

/// Runs `cases` one after another against one backend behind a warm pool
/// of one default sandbox: for a backend whose boot costs seconds (microvm
/// under TCG), the next default sandbox boots while a case runs, and the
/// backend (and its accelerator probe) is set up once for the group. Every
/// case runs; the failures are listed at the end.
pub async fn run_group(kind: Kind, cases: &[(&'static str, Case)]) {
    require_root();
    let Some(backend) = backends::for_test(kind, "conformance group").await else {
        return;
    };
    let backend: std::sync::Arc<dyn SandboxBackend> = std::sync::Arc::from(backend);
    let profile = backends::spec_for(kind, SandboxSpec::default());
    let pool = paddock_sandbox::WarmPool::start(backend, profile, 1);
    assert!(
        pool.wait_full(GROUP_DEADLINE).await,
        "[{}] the warm pool did not fill",
        kind.name()
    );
    let ctx = std::sync::Arc::new(Ctx {
        kind,
        backend: Box::new(pool),
    });
    // PADDOCK_GROUP_CASES=a,b runs only those (rerunning one case without
    // booting through the whole group).
    let only: Option<Vec<String>> = std::env::var("PADDOCK_GROUP_CASES")
        .ok()
        .map(|list| list.split(',').map(|c| c.trim().to_owned()).collect());
    let mut failed = Vec::new();
    for &(name, case) in cases {
        if only
            .as_ref()
            .is_some_and(|only| !only.iter().any(|c| c == name))
        {
            eprintln!(
                "SKIPPED {name} [{}]: not in PADDOCK_GROUP_CASES",
                kind.name()
            );
            continue;
        }
        let started = std::time::Instant::now();
        let ctx = ctx.clone();
        let outcome = tokio::spawn(async move {
            tokio::time::timeout(GROUP_DEADLINE, case(&ctx))
                .await
                .is_ok()
        })
        .await;
        match outcome {
            Ok(true) => eprintln!("{name} [{}] ok in {:?}", kind.name(), started.elapsed()),
            Ok(false) => failed.push(format!("{name}: exceeded {GROUP_DEADLINE:?}")),
            Err(panic) => failed.push(format!("{name}: {panic}")),
        }
    }
    assert!(
        failed.is_empty(),
        "[{}] failed cases: {failed:#?}",
        kind.name()
    );
}

/// How long a sandbox start may take: a microVM boots in seconds under TCG,
/// a minute on a loaded host.
fn boot_wait(kind: Kind) -> Duration {
    if kind == Kind::Microvm {
        GROUP_DEADLINE
    } else {
        Duration::from_secs(60)
    }
}

impl Ctx {
    pub async fn create(&self, spec: SandboxSpec) -> Box<dyn Sandbox> {
        let spec = backends::spec_for(self.kind, spec);
        self.backend
            .create(spec)
            .await
            .unwrap_or_else(|e| panic!("[{}] create: {}", self.kind.name(), chain(&e)))
    }
}

pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

pub fn shell(script: &str) -> ExecSpec {
    ExecSpec {
        shell: Some(script.to_owned()),
        ..ExecSpec::default()
    }
}

pub async fn sh(guest: &dyn GuestOps, script: &str) -> (i32, String, String) {
    let out = guest.exec_output(shell(script), &[]).await.unwrap();
    (
        out.exit.code.unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn enforcement_is_reported(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let sb = ctx.create(SandboxSpec::default()).await;
        assert_eq!(sb.info().backend, ctx.kind.name());
        let info = sb.guest().info().await.unwrap();
        let e = &info.enforcement;
        for (name, state) in [
            ("seccomp", &e.seccomp),
            ("no_new_privs", &e.no_new_privs),
            ("capabilities", &e.capabilities_dropped),
            ("rlimits", &e.rlimits),
            ("cgroups", &e.cgroup_state),
        ] {
            assert_eq!(state, &LayerState::Enforced, "{name}: {e:?}");
        }
        match ctx.kind {
            Kind::Gvisor => assert!(
                matches!(e.landlock, LayerState::Downgraded { .. }),
                "gVisor has no landlock: it must be reported downgraded: {e:?}"
            ),
            _ => assert_eq!(e.landlock, LayerState::Enforced, "{e:?}"),
        }
        assert!(e.seccomp_denied.iter().any(|l| l == "mount"));
        // What keeps a command from reading or impersonating the guest.
        let guest = e
            .guest
            .as_ref()
            .expect("the guest reports its isolation from its commands");
        assert!(guest.connection_in_agent_only, "{guest:?}");
        // gVisor keeps the attached stdio; runc's guest connects a socket.
        assert_eq!(
            guest.connection_mode_zero,
            ctx.kind == Kind::Gvisor,
            "{guest:?}"
        );
        match ctx.kind {
            Kind::Gvisor => assert!(
                matches!(guest.not_dumpable, LayerState::Downgraded { .. }),
                "gVisor ignores the dumpable flag: it must say so: {guest:?}"
            ),
            _ => assert_eq!(guest.not_dumpable, LayerState::Enforced, "{guest:?}"),
        }
        let (code, uid, err) = sh(&*sb.guest(), "id -u").await;
        assert_eq!(
            (code, uid.trim()),
            (0, guest.command_uid.to_string().as_str()),
            "{err}"
        );
        assert_eq!(guest.command_uid, guest.guest_uid, "{guest:?}");
        assert!(guest.shared_uid_reason.is_some(), "{guest:?}");
        if ctx.kind == Kind::Microvm {
            // Its own kernel is the boundary: it reports the VM, not namespaces.
            let vm = e.vm.as_ref().expect("a microvm reports its VM");
            assert!(["kvm", "tcg"].contains(&vm.accelerator.as_str()), "{vm:?}");
        } else {
            assert!(e.namespaces.iter().any(|n| n == "pid"), "{e:?}");
        }
        sb.destroy().await.unwrap();
    })
}

pub fn exec_and_files(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let ws = backends::workspace(ctx.kind);
        let sb = ctx
            .create(SandboxSpec {
                workspace: Some(ws.path().to_path_buf()),
                ..SandboxSpec::default()
            })
            .await;
        let guest = sb.guest();
        let (code, out, err) = sh(&*guest, "echo hello; echo oops >&2; pwd; exit 3").await;
        assert_eq!((code, out.as_str()), (3, "hello\n/workspace\n"), "{err}");
        assert_eq!(err, "oops\n");
        // Commands ending together (their SIGCHLDs coalesce into one): each
        // gets its own exit and output.
        let mut running = tokio::task::JoinSet::new();
        for i in 0..8 {
            let guest = guest.clone();
            running.spawn(async move {
                let script = format!("sleep 0.{}; echo {i}; exit {i}", i % 2);
                (i, sh(&*guest, &script).await)
            });
        }
        while let Some(done) = running.join_next().await {
            let (i, (code, out, err)) = done.unwrap();
            assert_eq!((code, out), (i, format!("{i}\n")), "command {i}: {err}");
        }
        guest
            .file_write(
                &paddock_proto::FsPath::from("notes/a.txt"),
                b"written by the host",
                WriteOptions {
                    create_parents: true,
                    ..WriteOptions::default()
                },
            )
            .await
            .unwrap_or_else(|e| panic!("{}", chain(&e)));
        let (code, out, _) = sh(&*guest, "cat notes/a.txt").await;
        assert_eq!((code, out.as_str()), (0, "written by the host"));
        assert_eq!(
            std::fs::read(ws.path().join("notes/a.txt")).unwrap(),
            b"written by the host"
        );
        sb.destroy().await.unwrap();
    })
}

pub fn in_workspace(ws: &tempfile::TempDir) -> SandboxSpec {
    SandboxSpec {
        workspace: Some(ws.path().to_path_buf()),
        ..SandboxSpec::default()
    }
}

pub const PROBE: &str = "paddock-test-probe";
const MIB: u64 = 1 << 20;

pub fn traversal_is_refused(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let ws = backends::workspace(ctx.kind);
        std::os::unix::fs::symlink("/etc", ws.path().join("etc-link")).unwrap();
        std::os::unix::fs::symlink("../..", ws.path().join("up")).unwrap();
        let sb = ctx.create(in_workspace(&ws)).await;
        let guest = sb.guest();
        for path in [
            "../etc/passwd",
            "/etc/passwd",
            "etc-link/passwd",
            "up/etc/passwd",
        ] {
            match guest
                .file_read(&paddock_proto::FsPath::from(path), 0, None)
                .await
            {
                Err(e) => assert_eq!(e.code(), Some(ErrorCode::PathEscape), "{path}: {e:?}"),
                Ok(data) => panic!("{path} was read: {} bytes", data.size),
            }
        }
        match guest
            .file_write(
                &paddock_proto::FsPath::from("etc-link/evil"),
                b"x",
                WriteOptions::default(),
            )
            .await
        {
            Err(e) => assert_eq!(e.code(), Some(ErrorCode::PathEscape), "{e:?}"),
            Ok(n) => panic!("wrote {n} bytes through a symlink out"),
        }
        assert!(!std::path::Path::new("/etc/evil").exists());
        sb.destroy().await.unwrap();
    })
}

pub fn background_and_reattach(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let sb = ctx.create(SandboxSpec::default()).await;
        let guest = sb.guest();
        let started = guest
            .process_start(shell("echo first; sleep 0.3; echo second"))
            .await
            .unwrap();
        let status = guest
            .process_wait(started.handle, Some(10_000))
            .await
            .unwrap();
        assert!(!status.running);
        assert_eq!(status.exit.unwrap().code, Some(0));
        // A second reader, from offset 0, still gets everything.
        let out = guest
            .process_read(started.handle, 0, 1 << 20)
            .await
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.data), "first\nsecond\n");
        let listed = guest.process_list().await.unwrap();
        assert!(listed.iter().any(|p| p.handle == started.handle));
        sb.destroy().await.unwrap();
    })
}

/// A shell on a pseudo-terminal (issue #18 item 1): typed input is echoed
/// and run, `stty size` sees the size asked and then a resize, and the
/// shell's exit code comes back.
pub fn interactive_terminal(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let sb = ctx.create(SandboxSpec::default()).await;
        let guest = sb.guest();
        let spec = ExecSpec {
            argv: vec!["/bin/sh".to_owned()],
            pty: Some(PtySize { rows: 24, cols: 80 }),
            ..ExecSpec::default()
        };
        let handle = guest.process_start(spec).await.unwrap().handle;
        let mut offset = 0;
        let mut screen = String::new();
        let mut until = async |guest: &dyn GuestOps, needle: &str| {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while !screen.contains(needle) {
                assert!(
                    std::time::Instant::now() < deadline,
                    "[{}] no {needle:?} in {screen:?}",
                    ctx.kind.name()
                );
                let out = guest
                    .process_follow(handle, offset, 1 << 20, 2_000)
                    .await
                    .unwrap();
                offset = out.next_offset;
                screen.push_str(&String::from_utf8_lossy(&out.data));
            }
        };
        guest
            .process_write(handle, b"stty size; echo MARK-$((40+2))\n", false)
            .await
            .unwrap();
        until(&*guest, "MARK-42").await;
        until(&*guest, "24 80").await;
        guest
            .process_resize(
                handle,
                PtySize {
                    rows: 33,
                    cols: 101,
                },
            )
            .await
            .unwrap();
        guest
            .process_write(handle, b"stty size\n", false)
            .await
            .unwrap();
        until(&*guest, "33 101").await;
        // A terminal's process forks where every other command is spawned,
        // so it must carry the same seccomp filters (the command filter;
        // gVisor's /proc shows no count, so there it is not compared).
        let filters = "sed -n 's/^Seccomp_filters:[[:space:]]*/FILTERS-/p' /proc/self/status";
        let out = guest.exec_output(shell(filters), &[]).await.unwrap();
        let expected = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        guest
            .process_write(
                handle,
                format!("{filters}; echo DONE-$((3+4))\n").as_bytes(),
                false,
            )
            .await
            .unwrap();
        until(&*guest, "DONE-7").await;
        if !expected.is_empty() {
            assert!(
                screen.contains(&format!("{expected}\r\n")),
                "[{}] a terminal's process lacks a command's filters ({expected}): {screen:?}",
                ctx.kind.name()
            );
        }
        guest
            .process_write(handle, b"exit 3\n", false)
            .await
            .unwrap();
        let status = guest.process_wait(handle, Some(20_000)).await.unwrap();
        assert_eq!(status.exit.and_then(|e| e.code), Some(3), "{screen:?}");
        sb.destroy().await.unwrap();
    })
}

pub fn streaming_exec(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        use paddock_core::sandbox::ExecEvent;
        let sb = ctx.create(SandboxSpec::default()).await;
        let guest = sb.guest();
        let mut execution = guest
            .exec(shell("for i in 1 2 3; do echo $i; sleep 0.1; done"), &[])
            .await
            .unwrap();
        let mut chunks = 0;
        let mut text = String::new();
        let mut exit = None;
        while let Some(event) = execution.next_event().await.unwrap() {
            match event {
                ExecEvent::Output { data, .. } => {
                    chunks += 1;
                    text.push_str(&String::from_utf8_lossy(&data));
                }
                ExecEvent::Exited(info) => exit = Some(info),
                _ => {}
            }
        }
        assert_eq!(text, "1\n2\n3\n");
        assert!(
            chunks >= 2,
            "output arrived in {chunks} chunk(s), not streamed"
        );
        assert_eq!(exit.unwrap().code, Some(0));
        sb.destroy().await.unwrap();
    })
}

pub fn read_only_workspace(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let ws = backends::workspace(ctx.kind);
        std::fs::write(ws.path().join("kept.txt"), b"original").unwrap();
        let sb = ctx
            .create(in_workspace(&ws).map_policy(|p| {
                p.read_only = true;
            }))
            .await;
        let guest = sb.guest();
        let (code, out, _) = sh(&*guest, "cat kept.txt").await;
        assert_eq!((code, out.as_str()), (0, "original"));
        let (code, _, _) = sh(&*guest, "echo x > kept.txt || exit 9; touch new").await;
        assert_eq!(code, 9);
        assert!(
            guest
                .file_write(
                    &paddock_proto::FsPath::from("new.txt"),
                    b"x",
                    WriteOptions::default()
                )
                .await
                .is_err()
        );
        let info = guest.info().await.unwrap();
        assert!(info.enforcement.read_only_workspace);
        sb.destroy().await.unwrap();
        assert_eq!(
            std::fs::read(ws.path().join("kept.txt")).unwrap(),
            b"original"
        );
        assert!(!ws.path().join("new").exists() && !ws.path().join("new.txt").exists());
    })
}

pub fn write_scope(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let ws = backends::workspace(ctx.kind);
        std::fs::create_dir(ws.path().join("src")).unwrap();
        if ctx.kind.runs_as_owner() {
            backends::give_to_sandbox(&ws.path().join("src"));
        }
        // A missing directory (trailing '/') and a missing file, both made
        // at start; the file alone is writable in its directory.
        let sb = ctx
            .create(in_workspace(&ws).map_policy(|p| {
                p.writable_paths = vec!["out/".to_owned(), "src/made.txt".to_owned()];
            }))
            .await;
        let guest = sb.guest();
        let (code, _, err) = sh(&*guest, "echo built > out/result").await;
        assert_eq!(code, 0, "{err}");
        let (code, _, err) = sh(&*guest, "echo shell > src/made.txt").await;
        assert_eq!(code, 0, "{err}");
        for attempt in ["echo x > src/changed", "rm src/made.txt"] {
            let (code, _, _) = sh(&*guest, &format!("{attempt} || exit 9")).await;
            assert_eq!(code, 9, "{attempt}");
        }
        guest
            .file_write(
                &paddock_proto::FsPath::from("src/made.txt"),
                b"tool\n",
                WriteOptions::default(),
            )
            .await
            .unwrap();
        let info = guest.info().await.unwrap();
        assert_eq!(info.enforcement.writable_paths, ["out", "src/made.txt"]);
        sb.destroy().await.unwrap();
        assert_eq!(
            std::fs::read(ws.path().join("out/result")).unwrap(),
            b"built\n"
        );
        assert_eq!(
            std::fs::read(ws.path().join("src/made.txt")).unwrap(),
            b"tool\n"
        );
        assert!(!ws.path().join("src/changed").exists());
    })
}

/// Under gVisor the engine's cgroup holds the sentry (the user-space
/// kernel), not each sandboxed process: a sandbox past its memory or pids
/// limit loses its sentry, so "held" there means the sandbox died instead
/// of the host giving way.
fn held_or_sandbox_killed(
    kind: Kind,
    what: &str,
    result: Result<paddock_core::sandbox::ExecOutput, paddock_core::sandbox::GuestError>,
) -> Option<paddock_core::sandbox::ExecOutput> {
    match result {
        Ok(out) => Some(out),
        Err(paddock_core::sandbox::GuestError::Disconnected { .. }) if kind == Kind::Gvisor => None,
        Err(e) => panic!("{what}: {}", chain(&e)),
    }
}

pub fn memory_and_tmp_limits(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let ws = backends::workspace(ctx.kind);
        let probe = paddock_tests::bins::stage_in_workspace(ws.path(), PROBE);
        let sb = ctx
            .create(in_workspace(&ws).map_policy(|p| {
                p.limits = SandboxLimits {
                    memory_bytes: Some(256 * MIB),
                    tmp_bytes: 8 * MIB,
                    ..SandboxLimits::default()
                };
            }))
            .await;
        let guest = sb.guest();
        let (code, _, _) = sh(
            &*guest,
            "dd if=/dev/zero of=/tmp/fill bs=1M count=16 2>/dev/null; test $? -ne 0",
        )
        .await;
        assert_eq!(code, 0, "16 MiB fit in an 8 MiB /tmp");
        let small = guest
            .exec_output(
                ExecSpec {
                    argv: vec![probe.clone(), "alloc".into(), (16 * MIB).to_string()],
                    ..ExecSpec::default()
                },
                &[],
            )
            .await
            .unwrap();
        assert_eq!(small.exit.code, Some(0), "16 MiB under 256 MiB: {small:?}");
        let over = guest
            .exec_output(
                ExecSpec {
                    argv: vec![probe.clone(), "alloc".into(), (1024 * MIB).to_string()],
                    ..ExecSpec::default()
                },
                &[],
            )
            .await;
        if let Some(over) = held_or_sandbox_killed(ctx.kind, "alloc", over) {
            assert!(
                over.exit.code != Some(0),
                "allocating 1 GiB under a 256 MiB limit succeeded: {over:?}"
            );
            // The host reads the sandbox's memory cgroup to tell (under
            // gVisor the cgroup holds the sentry, not the command; in a
            // microVM the guest kernel's OOM killer acts, out of the host's sight).
            if !matches!(ctx.kind, Kind::Gvisor | Kind::Microvm) {
                assert!(
                    over.exit.oom_killed,
                    "not reported as an OOM kill: {over:?}"
                );
            }
            let killed = guest.exec_output(shell("kill -9 $$"), &[]).await.unwrap();
            assert_eq!(killed.exit.signal, Some(9), "{killed:?}");
            assert!(
                !killed.exit.oom_killed,
                "a plain SIGKILL is no OOM kill: {killed:?}"
            );
        }
        sb.destroy().await.unwrap();
    })
}

pub fn pids_limit(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let ws = backends::workspace(ctx.kind);
        let probe = paddock_tests::bins::stage_in_workspace(ws.path(), PROBE);
        let pids = 128;
        let sb = ctx
            .create(in_workspace(&ws).map_policy(|p| {
                p.limits = SandboxLimits {
                    pids: Some(pids),
                    ..SandboxLimits::default()
                };
            }))
            .await;
        let guest = sb.guest();
        let spawned = guest
            .exec_output(
                ExecSpec {
                    argv: vec![probe.clone(), "spawn-until-fail".into(), "400".into()],
                    ..ExecSpec::default()
                },
                &[],
            )
            .await;
        if let Some(spawned) = held_or_sandbox_killed(ctx.kind, "spawn", spawned) {
            let text = String::from_utf8_lossy(&spawned.stdout);
            let count: u64 = text
                .split_whitespace()
                .find_map(|w| w.parse().ok())
                .unwrap_or_else(|| panic!("no count in {text:?} {spawned:?}"));
            assert!(
                count < pids,
                "{count} processes under a pids limit of {pids}"
            );
        }
        sb.destroy().await.unwrap();
    })
}

pub fn network_none(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let ws = backends::workspace(ctx.kind);
        let probe = paddock_tests::bins::stage_in_workspace(ws.path(), PROBE);
        let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let sb = ctx.create(in_workspace(&ws)).await;
        let guest = sb.guest();
        let (code, out, _) = sh(&*guest, &format!("{probe} interfaces")).await;
        assert_eq!(code, 0);
        let names: Vec<&str> = out.lines().collect();
        assert!(names.iter().all(|n| *n == "lo"), "interfaces: {names:?}");
        let (code, _, _) = sh(&*guest, &format!("{probe} connect 127.0.0.1:{port}")).await;
        assert_ne!(code, 0, "the host's listener was reached");
        sb.destroy().await.unwrap();
    })
}

pub fn snapshot_round_trip_and_fork(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let ws = backends::workspace(ctx.kind);
        let sb = ctx.create(in_workspace(&ws)).await;
        let guest = sb.guest();
        let (code, _, err) = sh(
            &*guest,
            "mkdir -p d/e && echo one > d/e/f && printf two > g && chmod 750 d",
        )
        .await;
        assert_eq!(code, 0, "{err}");
        let mut archive = Vec::new();
        guest
            .snapshot_export(SnapshotExportOptions::default(), &mut archive)
            .await
            .unwrap();
        assert!(!archive.is_empty());
        // The fork: a fresh sandbox restores it and diverges.
        let fork = ctx.create(SandboxSpec::default()).await;
        let forked = fork.guest();
        forked
            .snapshot_import(SnapshotImportOptions::default(), &mut archive.as_slice())
            .await
            .unwrap_or_else(|e| panic!("{}", chain(&e)));
        // (stat(1) of Debian 12 fails under Debian 12's gVisor: statx flags.)
        assert_eq!(
            forked
                .file_stat(&paddock_proto::FsPath::from("d"))
                .await
                .unwrap()
                .mode
                & 0o7777,
            0o750
        );
        let (code, out, _) = sh(&*forked, "cat d/e/f g; echo changed > g").await;
        assert_eq!((code, out.as_str()), (0, "one\ntwo"));
        let (_, out, _) = sh(&*guest, "cat g").await;
        assert_eq!(out, "two", "the fork changed its parent");
        fork.destroy().await.unwrap();
        sb.destroy().await.unwrap();
    })
}

pub fn nothing_left_behind(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let sb = ctx.create(SandboxSpec::default()).await;
        let id = sb.info().id.clone();
        let temp = sb.info().workspace.clone();
        assert!(sb.info().workspace_is_temporary && temp.is_dir());
        let (code, _, _) = sh(&*sb.guest(), "sleep 60 & sleep 60 & true").await;
        assert_eq!(code, 0);
        sb.destroy().await.unwrap();
        assert!(
            !temp.exists(),
            "temporary workspace {} is left",
            temp.display()
        );
        let left = backends::leftovers(ctx.kind, &id).await;
        assert!(left.is_empty(), "left behind: {left:?}");
    })
}

pub fn orphans_are_reaped(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        // An owner of its own, so reaping touches no other test's sandboxes.
        let owner = backends::private_owner(ctx.kind).await;
        let sb = owner
            .create(backends::spec_for(ctx.kind, SandboxSpec::default()))
            .await
            .unwrap();
        let id = sb.info().id.clone();
        let workspace = sb.info().workspace.clone();
        assert!(workspace.is_dir());
        // The owner "dies": its handle is never destroyed nor dropped.
        std::mem::forget(sb);
        let restarted = backends::private_owner(ctx.kind).await;
        let report = restarted.reap_orphans(&[]).await.unwrap();
        assert!(
            report.sandboxes_removed.contains(&id) || !report.processes_killed.is_empty(),
            "{report:?}"
        );
        let left = backends::leftovers(ctx.kind, &id).await;
        assert!(left.is_empty(), "left behind after reaping: {left:?}");
        assert!(
            !workspace.exists(),
            "the temporary workspace {} is left",
            workspace.display()
        );
        if let Some(root) = workspace.parent() {
            let _ = std::fs::remove_dir(root);
        }
    })
}

/// The escape battery inside the backend's sandbox: every probe present,
/// every escape blocked, the host unharmed, nothing left behind.
pub fn escape_battery(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    use paddock_tests::escape::{HostTargets, MEMORY, PIDS, TMP, assert_report};
    use paddock_tests::report::Report;
    Box::pin(async move {
        let ws = backends::workspace(ctx.kind);
        let battery = paddock_tests::bins::stage_in_workspace(ws.path(), "paddock-escape-battery");
        let targets = HostTargets::plant(ctx.kind.name());
        let pids = if ctx.kind == Kind::Gvisor { 128 } else { PIDS };
        let mut argv = targets.argv(battery, pids);
        let spec = in_workspace(&ws).map_policy(|p| {
            p.limits = SandboxLimits {
                memory_bytes: Some(MEMORY),
                pids: Some(pids),
                tmp_bytes: TMP,
                ..SandboxLimits::default()
            };
        });
        // gVisor's cgroup holds its sentry: a bomb kills the whole sandbox
        // (contained, but then no report), so each bomb runs in a sandbox of
        // its own there, and must end either blocked or with that sandbox dead.
        let bombs = ["fork bomb", "memory bomb"];
        let mut bombs_contained = Vec::new();
        if ctx.kind == Kind::Gvisor {
            for bomb in bombs {
                let sb = ctx.create(spec.clone()).await;
                let id = sb.info().id.clone();
                let mut only = argv.clone();
                only.extend(["--only".into(), bomb.into()]);
                let run = sb
                    .guest()
                    .exec_output(
                        ExecSpec {
                            argv: only,
                            timeout_ms: Some(120_000),
                            ..ExecSpec::default()
                        },
                        &[],
                    )
                    .await;
                match run {
                    Err(paddock_core::sandbox::GuestError::Disconnected { .. }) => {}
                    Ok(out) => {
                        let report: Report = serde_json::from_slice(&out.stdout).unwrap();
                        assert!(report.not_blocked().is_empty(), "{bomb}: {report:?}");
                    }
                    Err(e) => panic!("{bomb}: {}", chain(&e)),
                }
                let _ = sb.destroy().await;
                let left = backends::leftovers(ctx.kind, &id).await;
                assert!(left.is_empty(), "{bomb} left behind: {left:?}");
                bombs_contained.push(bomb);
            }
            for bomb in bombs {
                argv.extend(["--skip".into(), bomb.into()]);
            }
        }
        let sb = ctx.create(spec).await;
        let id = sb.info().id.clone();
        let out = sb
            .guest()
            .exec_output(
                ExecSpec {
                    argv,
                    timeout_ms: Some(300_000),
                    ..ExecSpec::default()
                },
                &[],
            )
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "[{}] the battery's sandbox died: {}",
                    ctx.kind.name(),
                    chain(&e)
                )
            });
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.exit.code,
            Some(0),
            "the battery itself failed: {}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Report = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("no report from the battery ({e}):\n{stdout}"));
        assert_report(&report, &bombs_contained, ctx.kind.name());
        sb.destroy().await.unwrap();
        targets.assert_unharmed();
        let left = backends::leftovers(ctx.kind, &id).await;
        assert!(left.is_empty(), "left behind: {left:?}");
    })
}

/// A warm pool of this backend: pooled sandboxes are handed out once each,
/// refilled in the background; other profiles bypass it; dropping the pool
/// removes what it still holds.
pub fn warm_pool(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let backend: std::sync::Arc<dyn SandboxBackend> =
            backends::connect(ctx.kind).await.unwrap().into();
        let profile = backends::spec_for(ctx.kind, SandboxSpec::default());
        let pool = paddock_sandbox::WarmPool::start(backend, profile.clone(), 2);
        assert!(
            pool.wait_full(boot_wait(ctx.kind)).await,
            "the pool never filled"
        );
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..4 {
            let sb = pool.create(profile.clone()).await.unwrap();
            assert!(
                seen.insert(sb.info().id.clone()),
                "a sandbox was handed out twice"
            );
            let (code, out, _) = sh(&*sb.guest(), "echo served").await;
            assert_eq!((code, out.as_str()), (0, "served\n"));
            sb.destroy().await.unwrap();
            assert!(
                pool.wait_full(boot_wait(ctx.kind)).await,
                "the pool did not refill"
            );
        }
        let other = pool
            .create(profile.clone().map_policy(|p| {
                p.read_only = true;
            }))
            .await
            .unwrap();
        assert!(
            other
                .guest()
                .info()
                .await
                .unwrap()
                .enforcement
                .read_only_workspace
        );
        other.destroy().await.unwrap();
        let queued = pool.ready_ids();
        assert_eq!(queued.len(), 2);
        assert!(queued.iter().all(|id| !seen.contains(id)));
        // a pooled sandbox killed while it waits is never handed out
        let killed = queued[0].clone();
        assert!(
            backends::kill_from_outside(ctx.kind, &killed).await,
            "the pooled sandbox {killed} did not die"
        );
        // the guest connection's reader sees the end of the stream
        tokio::time::sleep(Duration::from_millis(500)).await;
        let sb = pool.create(profile.clone()).await.unwrap();
        assert_ne!(sb.info().id, killed, "a dead pooled sandbox was handed out");
        let (code, out, _) = sh(&*sb.guest(), "echo alive").await;
        assert_eq!((code, out.as_str()), (0, "alive\n"));
        seen.insert(sb.info().id.clone());
        seen.insert(killed.clone());
        sb.destroy().await.unwrap();
        assert!(
            pool.wait_full(boot_wait(ctx.kind)).await,
            "the pool did not refill after a dead sandbox"
        );
        let queued: Vec<_> = pool
            .ready_ids()
            .into_iter()
            .filter(|id| !seen.contains(id))
            .collect();
        drop(pool);
        for id in queued.iter().chain(seen.iter()) {
            let left = backends::leftovers(ctx.kind, id).await;
            assert!(left.is_empty(), "left behind: {left:?}");
        }
    })
}

/// `kill -9` of the process that owns a sandbox (here `paddock sandbox
/// run`) leaves nothing behind: no process, no container, no volume.
pub fn owner_killed_leaves_nothing(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let ws = backends::workspace(ctx.kind);
        let volumes_before = backends::docker_volumes();
        let mut cmd = std::process::Command::new(paddock_tests::bins::paddock());
        cmd.args([
            "sandbox",
            "run",
            "--backend",
            ctx.kind.name(),
            "--workspace",
        ])
        .arg(ws.path());
        if ctx.kind == Kind::Gvisor {
            cmd.args(["--allow-downgrade", "landlock"]);
        }
        let mut child = cmd
            .args(["--", "sh", "-c", "touch /workspace/started; sleep 120"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = ws.path().join("started");
        let deadline = std::time::Instant::now() + boot_wait(ctx.kind);
        while !started.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "the sandbox never started"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let path = ws.path().display().to_string();
        let before = backends::owned_by_cli(ctx.kind, &path);
        assert!(
            !before.is_empty(),
            "nothing of the running sandbox was found"
        );
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        child.wait().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let left = backends::owned_by_cli(ctx.kind, &path);
            if left.is_empty() {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "left behind after kill -9 of the owner: {left:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            backends::docker_volumes(),
            volumes_before,
            "volumes changed"
        );
    })
}

/// The spec reaches PID 1 as a frame on its connection, never in argv or
/// the environment: inside, `/proc/1/cmdline` and the environments name no
/// host path, no cgroup parent and no spec field (issue #12 item 11).
pub fn pid_1_shows_no_spec(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let ws = backends::workspace(ctx.kind);
        let sb = ctx
            .create(SandboxSpec {
                workspace: Some(ws.path().to_path_buf()),
                policy: SandboxPolicy {
                    writable_paths: vec!["out".to_owned()],
                    ..SandboxPolicy::default()
                },
                ..SandboxSpec::default()
            })
            .await;
        let (code, out, err) = sh(
            &*sb.guest(),
            "echo '== cmdline'; tr '\\0' ' ' < /proc/1/cmdline; echo; \
             echo '== environ'; tr '\\0' ' ' < /proc/1/environ 2>/dev/null || echo unreadable; \
             echo '== self'; tr '\\0' ' ' < /proc/self/environ; echo",
        )
        .await;
        assert_eq!(code, 0, "{err}");
        let cmdline = out
            .split("== cmdline\n")
            .nth(1)
            .and_then(|rest| rest.lines().next())
            .unwrap_or_default()
            .trim()
            .to_owned();
        let id = sb.info().id.to_string();
        let expected = match ctx.kind {
            Kind::Native => format!("paddock-guest jail --sandbox {id} --owner "),
            // the VM's init execs the guest; its spec comes over virtio-serial
            Kind::Microvm => "/opt/paddock/paddock-guest microvm".to_owned(),
            _ => format!("/opt/paddock/paddock-guest --log warn container --sandbox {id}"),
        };
        assert!(
            cmdline.starts_with(&expected),
            "[{}] {cmdline}",
            ctx.kind.name()
        );
        let guest_bin = paddock_sandbox::locate_guest_bin(None).unwrap();
        let workspace = ws.path().to_string_lossy().into_owned();
        let guest_bin = guest_bin.to_string_lossy().into_owned();
        for needle in [
            workspace.as_str(),
            guest_bin.as_str(),
            "paddock-docker",
            "cgroup",
            "writable_paths",
            "\"limits\"",
            "{",
        ] {
            assert!(
                !out.contains(needle),
                "[{}] {needle:?} shows inside:\n{out}",
                ctx.kind.name()
            );
        }
        sb.destroy().await.unwrap();
    })
}
