//! --writable PATH: a write scope. The workspace is read-only except the
//! listed paths, shell included; a hostile workspace cannot turn a scope
//! path into a host path through a symlink.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;
use std::process::Command;

use paddock_proto::LayerState;
use paddock_tests::bins::{paddock, paddock_guest};
use paddock_tests::cli::SandboxRun;
use paddock_tests::host::require_root;
use paddock_tests::run::Finished;

/// Exit code of `paddock sandbox run` when paddock itself failed.
const EXIT_PADDOCK_FAILED: i32 = 125;
const OWNER: u32 = 4321;
const ENTRIES: [&str; 8] = [
    "",
    "src",
    "docs",
    "empty",
    "src/a",
    "docs/readme",
    "root.txt",
    "notes.txt",
];

/// src/ (with src/a), docs/readme, an empty dir, root.txt and notes.txt,
/// all owned by OWNER.
fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let p = ws.path();
    fs::create_dir_all(p.join("src")).unwrap();
    fs::create_dir_all(p.join("docs")).unwrap();
    fs::create_dir_all(p.join("empty")).unwrap();
    fs::write(p.join("src/a"), "a\n").unwrap();
    fs::write(p.join("docs/readme"), "readme\n").unwrap();
    fs::write(p.join("root.txt"), "root\n").unwrap();
    fs::write(p.join("notes.txt"), "notes\n").unwrap();
    for entry in ENTRIES {
        let path = p.join(entry);
        fs::set_permissions(
            &path,
            fs::Permissions::from_mode(if path.is_dir() { 0o755 } else { 0o644 }),
        )
        .unwrap();
        nix::unistd::chown(&path, Some(OWNER.into()), Some(OWNER.into())).unwrap();
    }
    ws
}

/// Every entry below `root` (never following symlinks): kind, mode, owner
/// and contents or link target.
fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            let what = if meta.is_dir() {
                stack.push(path.clone());
                "dir".to_owned()
            } else if meta.file_type().is_symlink() {
                format!("link {}", fs::read_link(&path).unwrap().display())
            } else {
                format!("file {:?}", fs::read_to_string(&path).unwrap())
            };
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            let mode = meta.mode() & 0o7777;
            out.insert(
                rel,
                format!("{what} {mode:o} {}:{}", meta.uid(), meta.gid()),
            );
        }
    }
    out
}

fn scoped(script: &str, ws: &Path, writable: &[&str]) -> SandboxRun {
    writable
        .iter()
        .fold(SandboxRun::shell(script).workspace(ws), |run, path| {
            run.option("--writable").option(path)
        })
}

/// Runs each attempt in one sandbox; returns the attempts that succeeded.
fn escaped(ws: &Path, writable: &[&str], attempts: &[&str]) -> Vec<String> {
    let script: String = attempts
        .iter()
        .map(|a| format!("if ( {a} ) 2>/dev/null; then echo \"escaped: {a}\"; fi\n"))
        .collect();
    let run = scoped(&(script + "echo done"), ws, writable).run();
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr_str());
    let out = run.stdout_str();
    assert!(out.ends_with("done\n"), "{out}");
    out.lines()
        .filter(|l| l.starts_with("escaped"))
        .map(str::to_owned)
        .collect()
}

fn assert_refused_at_start(run: &Finished, message: &str) {
    assert_eq!(
        run.code(),
        EXIT_PADDOCK_FAILED,
        "stdout: {} stderr: {}",
        run.stdout_str(),
        run.stderr_str()
    );
    assert!(
        run.stderr_str().contains(message),
        "stderr lacks {message:?}: {}",
        run.stderr_str()
    );
    assert!(
        run.stdout.is_empty(),
        "the command ran: {}",
        run.stdout_str()
    );
}

#[test]
fn writes_inside_the_scope_work_and_land_on_the_host() {
    require_root();
    let ws = workspace();
    let script = "echo changed > /workspace/src/a && mkdir /workspace/src/deep \
                  && echo b > /workspace/src/deep/b && mv /workspace/src/deep/b /workspace/src/c \
                  && stat -c %u:%g /workspace/src/c";
    let run = scoped(script, ws.path(), &["src"]).run();
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr_str());
    assert_eq!(run.stdout_str(), "0:0\n", "sandbox root owns what it made");
    let p = ws.path();
    assert_eq!(fs::read_to_string(p.join("src/a")).unwrap(), "changed\n");
    assert_eq!(fs::read_to_string(p.join("src/c")).unwrap(), "b\n");
    assert!(p.join("src/deep").is_dir());
    for made in ["src/c", "src/deep"] {
        let meta = fs::metadata(p.join(made)).unwrap();
        assert_eq!(
            (meta.uid(), meta.gid()),
            (OWNER, OWNER),
            "{made} on the host"
        );
    }
}

const OUTSIDE_ATTEMPTS: &[&str] = &[
    "echo x > /workspace/root.txt",
    "echo x >> /workspace/root.txt",
    "truncate -s 0 /workspace/root.txt",
    "touch /workspace/new",
    "mkdir /workspace/newdir",
    "ln -s /etc /workspace/evil",
    "echo x > /workspace/docs/new",
    "echo x >> /workspace/docs/readme",
    "rm /workspace/docs/readme",
    "rm -rf /workspace/docs",
    "mv /workspace/src/a /workspace/moved",
    "mv /workspace/src /workspace/src2",
    "cd /workspace/src && mv a ../x",
    "ln /workspace/docs/readme /workspace/src/hardlink",
    "ln /workspace/src/a /workspace/docs/hardlink",
    "cp /workspace/src/a /workspace/docs/copy",
    "chmod 777 /workspace/root.txt",
    "chmod 700 /workspace/docs",
    "touch -d 2000-01-01 /workspace/root.txt",
    "rmdir /workspace/empty",
];

#[test]
fn every_write_outside_the_scope_fails_and_the_host_is_unchanged() {
    require_root();
    let ws = workspace();
    let before = tree(ws.path());
    let mtime = fs::metadata(ws.path().join("root.txt")).unwrap().mtime();
    assert_eq!(
        escaped(ws.path(), &["src"], OUTSIDE_ATTEMPTS),
        Vec::<String>::new()
    );
    assert_eq!(tree(ws.path()), before);
    assert_eq!(
        fs::metadata(ws.path().join("root.txt")).unwrap().mtime(),
        mtime
    );
}

#[test]
fn the_scope_holds_without_an_idmapped_workspace_too() {
    require_root();
    // Owned by the host uid sandbox root maps to: bound as it is, and the
    // writable path is bound by the sandbox init itself.
    const HOST_BASE: u32 = 100_000;
    let ws = workspace();
    for entry in ENTRIES {
        nix::unistd::chown(
            &ws.path().join(entry),
            Some(HOST_BASE.into()),
            Some(HOST_BASE.into()),
        )
        .unwrap();
    }
    let before = tree(ws.path());
    assert_eq!(
        escaped(ws.path(), &["src"], OUTSIDE_ATTEMPTS),
        Vec::<String>::new()
    );
    assert_eq!(tree(ws.path()), before);
    let run = scoped("echo b > /workspace/src/b", ws.path(), &["src"]).run();
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr_str());
    assert_eq!(fs::read_to_string(ws.path().join("src/b")).unwrap(), "b\n");
}

#[test]
fn an_unprivileged_caller_gets_the_same_scope() {
    require_root();
    const NOBODY: u32 = 65534;
    // Both binaries where uid 65534 can run them (the build tree may sit
    // below a private directory), and a workspace it owns.
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    for bin in [paddock(), paddock_guest()] {
        fs::copy(&bin, dir.path().join(bin.file_name().unwrap())).unwrap();
    }
    let ws = dir.path().join("ws");
    fs::create_dir_all(ws.join("src")).unwrap();
    fs::write(ws.join("root.txt"), "root\n").unwrap();
    for p in [&ws, &ws.join("src"), &ws.join("root.txt")] {
        nix::unistd::chown(p, Some(NOBODY.into()), Some(NOBODY.into())).unwrap();
    }
    let script = "echo a > /workspace/src/a && echo b > /workspace/new/b && echo written; \
                  echo x > /workspace/root.txt || echo refused";
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["env", "-i", "PATH=/usr/bin:/bin"])
        .arg(dir.path().join("paddock"))
        .args([
            "sandbox",
            "run",
            "--allow-downgrade",
            "cgroups",
            "--workspace",
        ])
        .arg(&ws)
        .args([
            "--writable",
            "src",
            "--writable",
            "new/",
            "--",
            "sh",
            "-c",
            script,
        ])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "written\nrefused\n",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(fs::read_to_string(ws.join("src/a")).unwrap(), "a\n");
    assert_eq!(fs::read_to_string(ws.join("new/b")).unwrap(), "b\n");
    assert_eq!(fs::read_to_string(ws.join("root.txt")).unwrap(), "root\n");
    assert_eq!(fs::metadata(ws.join("new")).unwrap().uid(), NOBODY);
}

#[test]
fn a_scope_path_through_a_symlink_is_refused_at_start_and_nothing_is_written() {
    require_root();
    let outside = tempfile::tempdir().unwrap();
    for (name, target, writable) in [
        ("src", Path::new("/etc"), "src"),
        ("src", Path::new(".."), "src"),
        ("lib", outside.path(), "lib/x"),
    ] {
        let ws = workspace();
        fs::remove_dir_all(ws.path().join("src")).unwrap();
        symlink(target, ws.path().join(name)).unwrap();
        let before = tree(ws.path());
        // A name unique to this workspace, so nothing else on the host
        // (a checkout in /tmp/fresh, say) can be mistaken for a leak.
        let fresh = format!("fresh-{}", ws.path().file_name().unwrap().to_string_lossy());
        let pwned = format!("paddock-pwned-{fresh}");
        let script = format!(
            "echo pwned > /workspace/{writable}/{pwned}; echo pwned > /workspace/{fresh}/f"
        );
        // `fresh` is missing and listed first: it must not be created either.
        let fresh_dir = format!("{fresh}/");
        let run = scoped(&script, ws.path(), &[fresh_dir.as_str(), writable]).run();
        assert_refused_at_start(
            &run,
            &format!(
                "writable path \"{writable}\" refused: {name} is a symbolic link; \
                 writable paths never follow symlinks"
            ),
        );
        assert_eq!(tree(ws.path()), before, "{name} -> {}", target.display());
        let parent = ws.path().parent().unwrap();
        for path in [
            &Path::new("/etc").join(&pwned),
            &parent.join(&pwned),
            &parent.join(&fresh),
        ] {
            assert!(!path.exists(), "{} exists", path.display());
        }
        assert!(tree(outside.path()).is_empty());
    }
}

#[test]
fn a_writable_file_can_be_rewritten_in_place_and_nothing_else() {
    require_root();
    let ws = workspace();
    let before = tree(ws.path());
    let run = scoped(
        "echo more >> /workspace/notes.txt && cat /workspace/notes.txt",
        ws.path(),
        &["notes.txt"],
    )
    .run();
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr_str());
    assert_eq!(run.stdout_str(), "notes\nmore\n");
    assert_eq!(
        escaped(
            ws.path(),
            &["notes.txt"],
            &[
                "rm /workspace/notes.txt",
                "mv /workspace/notes.txt /workspace/n2",
                "echo x > /workspace/root.txt",
                "echo x > /workspace/src/a",
                "touch /workspace/new",
            ],
        ),
        Vec::<String>::new()
    );
    let mut expected = before;
    expected.insert(
        "notes.txt".to_owned(),
        format!("file \"notes\\nmore\\n\" 644 {OWNER}:{OWNER}"),
    );
    assert_eq!(tree(ws.path()), expected);
}

#[test]
fn a_missing_writable_directory_is_created_as_the_workspace_owner() {
    require_root();
    let ws = workspace();
    let run = scoped(
        "echo z > /workspace/build/out/z && stat -c %u:%g /workspace/build/out",
        ws.path(),
        &["build/out/"],
    )
    .run();
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr_str());
    assert_eq!(run.stdout_str(), "0:0\n");
    for dir in ["build", "build/out"] {
        let meta = fs::symlink_metadata(ws.path().join(dir)).unwrap();
        assert!(meta.is_dir(), "{dir}");
        assert_eq!(
            (meta.uid(), meta.gid()),
            (OWNER, OWNER),
            "{dir} on the host"
        );
    }
    assert_eq!(
        fs::read_to_string(ws.path().join("build/out/z")).unwrap(),
        "z\n"
    );
    // `build` itself is outside the scope.
    assert_eq!(
        escaped(ws.path(), &["build/out/"], &["touch /workspace/build/x"]),
        Vec::<String>::new()
    );
}

#[test]
fn a_missing_writable_file_is_created_and_nothing_next_to_it() {
    require_root();
    let ws = workspace();
    let before = tree(ws.path());
    let scope = ["gen/new.rs", "src/made.txt", "build.mk"];
    let run = scoped(
        "echo made > /workspace/src/made.txt && echo all: > /workspace/build.mk \
         && echo fn > /workspace/gen/new.rs && stat -c %F /workspace/gen/new.rs",
        ws.path(),
        &scope,
    )
    .run();
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr_str());
    assert_eq!(run.stdout_str(), "regular file\n");
    let mut expected = before;
    for (path, what) in [
        ("gen", "dir 755".to_owned()),
        ("gen/new.rs", "file \"fn\\n\" 644".to_owned()),
        ("src/made.txt", "file \"made\\n\" 644".to_owned()),
        ("build.mk", "file \"all:\\n\" 644".to_owned()),
    ] {
        expected.insert(path.to_owned(), format!("{what} {OWNER}:{OWNER}"));
    }
    assert_eq!(tree(ws.path()), expected);
    // Only the files themselves: not their directories, not a sibling.
    assert_eq!(
        escaped(
            ws.path(),
            &scope,
            &[
                "touch /workspace/gen/other",
                "touch /workspace/src/other",
                "echo x > /workspace/src/a",
                "rm /workspace/src/made.txt",
                "mv /workspace/build.mk /workspace/M2",
                "mkdir /workspace/gen/d",
            ],
        ),
        Vec::<String>::new()
    );
    assert_eq!(tree(ws.path()), expected);
}

#[test]
fn a_trailing_slash_on_an_existing_file_is_refused_at_start() {
    require_root();
    let ws = workspace();
    let before = tree(ws.path());
    let run = scoped("echo ran", ws.path(), &["notes.txt/"]).run();
    assert_refused_at_start(
        &run,
        "writable path \"notes.txt\" refused: notes.txt is a file, but the trailing '/' \
         asks for a directory; name the file without it",
    );
    assert_eq!(tree(ws.path()), before);
}

#[test]
fn contradictory_or_malformed_scopes_are_refused_before_any_sandbox() {
    require_root();
    let ws = workspace();
    let before = tree(ws.path());
    let read_only = scoped("echo x > /workspace/src/a", ws.path(), &["src"])
        .read_only()
        .run();
    assert_refused_at_start(&read_only, "a read-only workspace has no writable paths");
    for (bad, message) in [
        ("../x", "writable path \"../x\" has a '..' component"),
        ("/etc", "writable path \"/etc\" is absolute"),
        ("src//", "writable path \"src//\" has an empty component"),
    ] {
        let run = scoped("echo x > /workspace/src/a", ws.path(), &[bad]).run();
        assert_refused_at_start(&run, message);
    }
    assert_eq!(tree(ws.path()), before);
}

#[test]
fn the_enforcement_report_shows_the_read_only_workspace_and_its_scope() {
    require_root();
    let ws = workspace();
    let (json, _) = scoped("true", ws.path(), &["src", "notes.txt", "src/deep"]).run_json();
    let e = json.enforcement();
    assert!(e.read_only_workspace);
    // Sorted, and src/deep folded into src.
    assert_eq!(e.writable_paths, ["notes.txt", "src"]);
    assert_eq!(e.landlock, LayerState::Enforced);

    let (plain, _) = SandboxRun::new(["true"]).workspace(ws.path()).run_json();
    assert!(!plain.enforcement().read_only_workspace);
    assert!(plain.enforcement().writable_paths.is_empty());
}

#[tokio::test]
async fn guest_file_operations_follow_the_scope() {
    use paddock_core::sandbox::{Sandbox, SandboxPolicy, SandboxSpec, WriteOptions};
    use paddock_sandbox::{NativeBackend, NativeConfig, locate_guest_bin};

    require_root();
    let ws = workspace();
    let backend = NativeBackend::new(NativeConfig::new(locate_guest_bin(None).unwrap()));
    let spec = SandboxSpec {
        workspace: Some(ws.path().to_path_buf()),
        policy: SandboxPolicy {
            writable_paths: vec![
                "src".to_owned(),
                "notes.txt".to_owned(),
                "docs/new.md".to_owned(),
            ],
            ..SandboxPolicy::default()
        },
        ..SandboxSpec::default()
    };
    let sb = backend.create_native(spec).await.unwrap();
    let guest = sb.guest();
    let write = |path: &'static str| {
        let guest = &guest;
        async move {
            let path = paddock_proto::FsPath::from(path);
            guest
                .file_write(&path, b"new\n", WriteOptions::default())
                .await
        }
    };
    assert_eq!(write("src/new.txt").await.unwrap(), 4);
    assert_eq!(write("src/a").await.unwrap(), 4);
    guest
        .mkdir(&paddock_proto::FsPath::from("src/d/e"), true)
        .await
        .unwrap();
    guest
        .rename(
            &paddock_proto::FsPath::from("src/new.txt"),
            &paddock_proto::FsPath::from("src/d/e/moved"),
        )
        .await
        .unwrap();
    // A scope file (existing, or made for the scope) cannot be replaced
    // atomically (its directory is read-only): it is rewritten in place.
    assert_eq!(write("notes.txt").await.unwrap(), 4);
    assert_eq!(write("docs/new.md").await.unwrap(), 4);
    for path in ["root.txt", "docs/readme", "fresh", "docs/other.md"] {
        assert!(write(path).await.is_err(), "{path} written");
    }
    assert!(
        guest
            .mkdir(&paddock_proto::FsPath::from("newdir"), false)
            .await
            .is_err()
    );
    assert!(
        guest
            .remove(&paddock_proto::FsPath::from("docs/readme"), false)
            .await
            .is_err()
    );
    assert!(
        guest
            .rename(
                &paddock_proto::FsPath::from("src/a"),
                &paddock_proto::FsPath::from("moved")
            )
            .await
            .is_err()
    );
    assert!(
        guest
            .rename(
                &paddock_proto::FsPath::from("root.txt"),
                &paddock_proto::FsPath::from("src/root.txt")
            )
            .await
            .is_err()
    );
    let info = guest.info().await.unwrap();
    assert_eq!(
        info.enforcement.writable_paths,
        ["docs/new.md", "notes.txt", "src"]
    );
    sb.destroy().await.unwrap();

    let p = ws.path();
    assert_eq!(fs::read_to_string(p.join("docs/new.md")).unwrap(), "new\n");
    assert!(!p.join("docs/other.md").exists());
    assert_eq!(fs::read_to_string(p.join("src/a")).unwrap(), "new\n");
    assert_eq!(
        fs::read_to_string(p.join("src/d/e/moved")).unwrap(),
        "new\n"
    );
    assert_eq!(fs::read_to_string(p.join("root.txt")).unwrap(), "root\n");
    assert_eq!(fs::read_to_string(p.join("notes.txt")).unwrap(), "new\n");
    assert!(p.join("docs/readme").exists() && !p.join("moved").exists());
}
