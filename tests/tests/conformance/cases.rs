//! The cases of the conformance suite, each a function of one backend.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use paddock_core::sandbox::{GuestOps, Sandbox, SandboxBackend, SandboxSpec, WriteOptions};
use paddock_proto::{ExecSpec, LayerState};
use paddock_tests::backends::{self, Kind};
use paddock_tests::host::require_root;

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
        assert!(e.namespaces.iter().any(|n| n == "pid"), "{e:?}");
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
        guest
            .file_write(
                "notes/a.txt",
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
