//! The microvm tier end to end: one VM (TCG here, KVM where the host's
//! /dev/kvm runs the image) boots with the guest as its init, runs commands
//! and file operations over virtio-serial on a 9p workspace, reports its
//! accelerator, and leaves nothing behind. Skipped with the reason when
//! QEMU or the image is missing (required in CI via PADDOCK_REQUIRE_BACKENDS).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use paddock_core::sandbox::SandboxSpec;
use paddock_proto::ExecSpec;
use paddock_tests::backends::{self, Kind};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vm_boots_runs_commands_and_files_on_its_9p_workspace() {
    let Some(backend) = backends::for_test(Kind::Microvm, "microvm_boot").await else {
        return;
    };
    let ws = backends::workspace(Kind::Microvm);
    std::fs::write(ws.path().join("from-host.txt"), "written on the host\n").unwrap();
    let spec = SandboxSpec {
        workspace: Some(ws.path().to_path_buf()),
        ..SandboxSpec::default()
    };
    let started = std::time::Instant::now();
    let sandbox = backend.create(spec).await.expect("microvm sandbox");
    eprintln!("booted in {:?}", started.elapsed());
    let guest = sandbox.guest();
    let info = guest.info().await.unwrap();
    let vm = info
        .enforcement
        .vm
        .clone()
        .expect("a microvm reports its VM");
    assert!(["kvm", "tcg"].contains(&vm.accelerator.as_str()), "{vm:?}");
    assert_eq!(vm.workspace_transport, "virtio-9p");
    assert!(!vm.kernel.is_empty());
    assert!(info.enforcement.seccomp.is_enforced());
    assert!(info.enforcement.landlock.is_enforced());

    let script =
        "cat /workspace/from-host.txt; uname -r; id -u; echo made-in-vm > /workspace/out.txt";
    let out = guest
        .exec_output(
            ExecSpec {
                shell: Some(script.to_owned()),
                ..ExecSpec::default()
            },
            &[],
        )
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.exit.code, Some(0), "{out:?}");
    assert!(stdout.starts_with("written on the host\n"), "{stdout}");
    assert!(stdout.contains(&vm.kernel), "{stdout}");
    assert!(stdout.ends_with("100000\n"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("out.txt")).unwrap(),
        "made-in-vm\n"
    );
    let pid = sandbox.host_pid().expect("QEMU's pid");
    sandbox.destroy().await.unwrap();
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
}
