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
        .file_write(
            &paddock_proto::FsPath::from("src/main.rs"),
            b"fn main() {}\n",
            parents,
        )
        .await
        .unwrap();
    guest
        .file_write(
            &paddock_proto::FsPath::from("bin/run.sh"),
            b"#!/bin/sh\necho run\n",
            WriteOptions {
                mode: Some(0o750),
                create_parents: true,
            },
        )
        .await
        .unwrap();
    guest
        .file_write(
            &paddock_proto::FsPath::from("node_modules/pkg/index.js"),
            b"left out",
            parents,
        )
        .await
        .unwrap();
    guest
        .mkdir(&paddock_proto::FsPath::from("empty/inner"), true)
        .await
        .unwrap();
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

/// Builds, inside the sandbox, a tree of a few thousand entries: varied
/// sizes and modes, names with spaces and non-ASCII, a long name, deep
/// nesting, empty files and directories, internal and dangling symlinks,
/// read-only directories, and a distinct whole-second mtime on everything.
const BUILD_TREE: &str = r#"
import os, random
random.seed(7)
files = []
for d in range(30):
    for s in range(5):
        base = f"src/mod {d:02}/sub-é{s}"
        os.makedirs(base, exist_ok=True)
        for f in range(20):
            path = f"{base}/f{f:02}.txt"
            with open(path, "wb") as out:
                out.write(random.randbytes(random.choice([0, 1, 100, 4000, 70000])))
            os.chmod(path, random.choice([0o644, 0o600, 0o755, 0o400, 0o750]))
            files.append(path)
deep = "/".join(f"n{i}" for i in range(60))
os.makedirs(deep)
open(deep + "/leaf", "w").write("deep\n")
os.makedirs("empty/nested/dirs")
os.makedirs("also-empty")
open("l" * 200, "w").write("long name\n")
open("empty-file", "w").close()
with open("big.bin", "wb") as out:
    out.write(random.randbytes(6 << 20))
os.symlink("src/mod 00/sub-é0/f00.txt", "link-to-file")
os.symlink("../../empty", "src/mod 01/up-link")
os.symlink("does-not-exist", "dangling")
os.symlink(".", "self")
os.makedirs("ro/inner")
open("ro/inner/kept", "w").write("x")
entries = []
for root, dirs, names in os.walk(".", followlinks=False):
    for name in dirs + names:
        entries.append(os.path.join(root, name))
for i, path in enumerate(sorted(entries)):
    t = 1_500_000_000 + i * 37
    os.utime(path, (t, t), follow_symlinks=False)
os.chmod("ro/inner", 0o555)
os.chmod("ro", 0o500)
os.chmod("also-empty", 0o700)
print(len(entries))
"#;

/// Path, type, mode, size, link target and mtime of every entry, and a
/// checksum of every file's content.
const FULL_LISTING: &str = "find . -mindepth 1 -printf '%p|%y|%m|%s|%l|%T@\\n' | sort; \
                            find . -type f -print0 | xargs -0 md5sum | sort";

#[tokio::test]
async fn thousands_of_entries_survive_a_round_trip_through_sandboxes() {
    let temp_root = tempfile::tempdir().unwrap();
    let backend = real_backend(temp_root.path());
    let source = backend.create_native(SandboxSpec::default()).await.unwrap();
    let entries: u64 = sh(source.client(), &format!("python3 -c '{BUILD_TREE}'"))
        .await
        .trim()
        .parse()
        .unwrap();
    assert!(entries > 3000, "{entries}");
    let expected = sh(source.client(), FULL_LISTING).await;

    let mut archive = Vec::new();
    let stats = source
        .client()
        .snapshot_export(SnapshotExportOptions::default(), &mut archive)
        .await
        .unwrap();
    assert_eq!(
        stats.files + stats.dirs + stats.symlinks,
        entries,
        "{stats:?}"
    );
    let fresh = backend.create_native(SandboxSpec::default()).await.unwrap();
    fresh
        .client()
        .snapshot_import(SnapshotImportOptions::default(), &mut &archive[..])
        .await
        .unwrap();
    let got = sh(fresh.client(), FULL_LISTING).await;
    assert_eq!(got.lines().count(), expected.lines().count());
    for (got, want) in got.lines().zip(expected.lines()) {
        assert_eq!(got, want);
    }
    for needle in [
        "./ro|d|500|",
        "./ro/inner|d|555|",
        "./also-empty|d|700|",
        "./empty/nested/dirs|d|755|",
        "./dangling|l|777|14|does-not-exist|",
        "./self|l|777|1|.|",
    ] {
        assert!(got.contains(needle), "{needle} missing");
    }

    // Exported again from the restored sandbox: the very same archive.
    let mut again = Vec::new();
    let restats = fresh
        .client()
        .snapshot_export(SnapshotExportOptions::default(), &mut again)
        .await
        .unwrap();
    assert_eq!(restats.key, stats.key);
    assert!(again == archive);
    source.destroy().await.unwrap();
    fresh.destroy().await.unwrap();
}
