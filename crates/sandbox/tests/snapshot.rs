//! Snapshot export from one real (jailed) sandbox and restore into a fresh
//! one. Needs `paddock-guest` built and root, as in CI; PADDOCK_UNCONFINED=1
//! runs against the unconfined guest instead.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use paddock_core::sandbox::{
    GuestError, GuestOps, SandboxSpec, SnapshotExportOptions, SnapshotImportOptions, WriteOptions,
};
use paddock_proto::{ErrorCode, ExecSpec};
use paddock_sandbox::{NativeBackend, NativeConfig, locate_guest_bin};

fn real_backend(temp_root: &Path) -> NativeBackend {
    let mut config = NativeConfig::new(locate_guest_bin(None).unwrap());
    config.temp_root = Some(temp_root.to_path_buf());
    config.cgroup_parent = "paddock-test".to_owned();
    config.unconfined = std::env::var("PADDOCK_UNCONFINED").is_ok_and(|v| v == "1");
    NativeBackend::new(config)
}

async fn sh(guest: &dyn GuestOps, script: &str) -> String {
    let spec = ExecSpec {
        shell: Some(script.to_owned()),
        ..ExecSpec::default()
    };
    let out = guest.exec_output(spec, &[]).await.unwrap();
    assert_eq!(
        out.exit.code,
        Some(0),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Path, type, mode, size and link target of everything in the workspace,
/// plus a checksum of the file contents.
const LISTING: &str = "find . -mindepth 1 -printf '%p %y %m %s %l\\n' | sort; \
                       find . -type f -exec md5sum {} + | sort";

#[tokio::test]
async fn a_workspace_exported_from_one_sandbox_restores_into_a_fresh_one() {
    let temp_root = tempfile::tempdir().unwrap();
    let backend = real_backend(temp_root.path());
    let source = backend.create_native(SandboxSpec::default()).await.unwrap();
    let guest = source.client();
    let parents = WriteOptions {
        mode: None,
        create_parents: true,
    };
    guest
        .file_write("src/main.rs", b"fn main() {}\n", parents)
        .await
        .unwrap();
    guest
        .file_write(
            "bin/run.sh",
            b"#!/bin/sh\necho run\n",
            WriteOptions {
                mode: Some(0o750),
                create_parents: true,
            },
        )
        .await
        .unwrap();
    guest
        .file_write("node_modules/pkg/index.js", b"left out", parents)
        .await
        .unwrap();
    guest.mkdir("empty/inner", true).await.unwrap();
    sh(
        guest,
        "ln -s src/main.rs link && ln -s ../src bin/src-link && chmod 600 src/main.rs && \
         head -c 3000000 /dev/urandom > big.bin",
    )
    .await;

    let mut archive = Vec::new();
    let stats = guest
        .snapshot_export(SnapshotExportOptions::default(), &mut archive)
        .await
        .unwrap();
    assert_eq!(stats.bytes_compressed, archive.len() as u64);
    assert!(stats.excluded >= 1, "{stats:?}");
    let expected = sh(guest, &format!("rm -rf node_modules; {LISTING}")).await;

    let fresh = backend.create_native(SandboxSpec::default()).await.unwrap();
    let restored = fresh
        .client()
        .snapshot_import(SnapshotImportOptions::default(), &mut &archive[..])
        .await
        .unwrap();
    assert_eq!(restored.files, stats.files);
    assert_eq!(restored.symlinks, 2);
    let got = sh(fresh.client(), LISTING).await;
    assert_eq!(got, expected);
    assert!(got.contains("./empty/inner d 755"), "{got}");
    assert!(got.contains("./bin/run.sh f 750"), "{got}");
    assert!(got.contains("./link l 777 11 src/main.rs"), "{got}");
    // The restored tree belongs to the sandbox: its commands can change it.
    sh(fresh.client(), "echo more >> src/main.rs && rm -r empty").await;

    // The source workspace is not empty: a restore into it is refused.
    let err = guest
        .snapshot_import(SnapshotImportOptions::default(), &mut &archive[..])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GuestError::Refused { .. })
            && err.code() == Some(ErrorCode::DirectoryNotEmpty),
        "{err:?}"
    );

    source.destroy().await.unwrap();
    fresh.destroy().await.unwrap();
}
