//! Named volumes through a real `paddock serve` and its CLI, on every
//! backend this host runs (native, docker, gvisor, microvm): each backend in
//! turn mounts one volume read-write, reads what the backends before it
//! wrote, writes its own file and finds the quota the kernel's (EDQUOT
//! inside), then stops; meanwhile a second read-write mount is refused
//! naming the holder, read-only mounts beside it read but cannot write, and
//! the volume cannot be deleted while mounted. One VM boot on the microVM.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Child, Command};

use paddock_tests::serve;
use serde_json::{Value, json};

const TOKEN: &str = "volumes-test-token-tenant-a";

fn microvm_available() -> bool {
    paddock_tests::backends::microvm_config().is_ok()
        && paddock_sandbox::MicroVmConfig::image_dir_from_env()
            .join("vmlinuz")
            .exists()
}

fn has_btrfs() -> bool {
    Command::new("mkfs.btrfs")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn serve(dir: &Path, node: &str, backends: &[&str]) -> (Child, String) {
    let config = dir.join("serve.toml");
    let mut toml = String::from("volume_pool_bytes = 268435456\n");
    if backends.contains(&"gvisor") {
        // gVisor has no landlock: the read-only mount alone holds there
        toml.push_str("allow_downgrade = [\"landlock\"]\n");
    }
    for backend in backends {
        toml.push_str(&format!("[[backends]]\nkind = \"{backend}\"\n"));
        if matches!(*backend, "docker" | "gvisor") {
            toml.push_str("image = \"paddock-sandbox:bookworm\"\n");
        }
    }
    std::fs::write(&config, toml).unwrap();
    let log = std::fs::File::create(dir.join("server.log")).unwrap();
    let _ = LOG.set(dir.join("server.log"));
    let mut command = serve::command(node, &dir.join("server"), &format!("tenant-a:{TOKEN}"));
    command.arg("--config").arg(&config).stderr(log);
    serve::spawn(command).unwrap()
}

fn api(url: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "-m", "600", "-X", method, "-w", "\n%{http_code}"])
        .arg("-H")
        .arg(format!("Authorization: Bearer {TOKEN}"))
        .arg(format!("{url}{path}"));
    if let Some(body) = body {
        cmd.args(["-H", "Content-Type: application/json", "-d"])
            .arg(body.to_string());
    }
    let out = String::from_utf8_lossy(&cmd.output().unwrap().stdout).into_owned();
    let (body, status) = out.rsplit_once('\n').unwrap();
    (
        status.trim().parse().unwrap(),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

/// `paddock ARGS --server URL`: its exit status and stdout+stderr.
fn cli(url: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(paddock_tests::bins::paddock())
        .args(args)
        .args(["--server", url])
        .env("PADDOCK_TOKEN", TOKEN)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// A sandbox from `paddock sandbox create --backend B --volume V`.
fn create(url: &str, backend: &str, volume: &str) -> Result<String, String> {
    let (ok, out) = cli(
        url,
        &[
            "sandbox",
            "create",
            "--backend",
            backend,
            "--volume",
            volume,
        ],
    );
    if ok {
        return Ok(out.trim().to_owned());
    }
    let log = std::fs::read_to_string(LOG.get().unwrap()).unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().take(5).collect();
    Err(format!("{out}\nserver log: {tail:#?}"))
}

/// The server's log file (its stderr).
static LOG: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

fn sh(url: &str, id: &str, script: &str) -> (i64, String) {
    let (status, out) = api(
        url,
        "POST",
        &format!("/v1/sandboxes/{id}/exec"),
        Some(json!({"argv": ["sh", "-c", script]})),
    );
    assert_eq!(status, 200, "{out}");
    let text = format!(
        "{}{}",
        out["stdout"].as_str().unwrap_or_default(),
        out["stderr"].as_str().unwrap_or_default()
    );
    (out["exit_code"].as_i64().unwrap_or(-1), text)
}

fn delete(url: &str, id: &str) {
    let (status, out) = api(url, "DELETE", &format!("/v1/sandboxes/{id}"), None);
    assert_eq!(status, 200, "{out}");
}

fn stop(mut child: Child, data: &Path) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
    let _ = Command::new("umount")
        .arg(data.join("server/volumes/mnt"))
        .status();
}

#[test]
fn a_volume_passes_between_sandboxes_of_every_backend_one_writer_at_a_time() {
    paddock_tests::host::require_root();
    if !has_btrfs() {
        paddock_test_support::require::skip_or_fail(
            paddock_test_support::require::Need::Loop,
            "volumes scenario",
            "mkfs.btrfs is not installed (btrfs-progs)",
        )
        .unwrap();
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let node = format!("volumes-{}", std::process::id());
    let mut backends = vec!["native", "docker", "gvisor"];
    if microvm_available() {
        backends.push("microvm");
    } else {
        eprintln!("SKIPPED microvm: no microVM image or guest on this host");
    }
    let (server, url) = serve(dir.path(), &node, &backends);
    let (ok, out) = cli(&url, &["volume", "create", "shared", "--size", "8M"]);
    assert!(ok, "{out}");

    let mut written: Vec<&str> = Vec::new();
    for (i, backend) in backends.iter().enumerate() {
        let writer = create(&url, backend, "shared:/srv/shared")
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        for before in &written {
            let (code, out) = sh(&url, &writer, &format!("cat /srv/shared/{before}"));
            assert_eq!((code, out), (0, format!("{before}\n")), "{backend}");
        }
        let (code, out) = sh(
            &url,
            &writer,
            &format!("echo {backend} > /srv/shared/{backend}"),
        );
        assert_eq!(code, 0, "{backend}: {out}");
        written.push(backend);
        let (_, out) = sh(
            &url,
            &writer,
            "dd if=/dev/zero of=/srv/shared/big bs=1M count=16 conv=fsync 2>&1; echo rc=$?; \
             rm -f /srv/shared/big",
        );
        assert!(
            out.contains("Disk quota exceeded") && !out.contains("rc=0"),
            "{backend}: {out}"
        );

        // beside the writer: a second writer is refused, readers are not
        let other = backends[(i + 1) % backends.len()];
        let other = if other == "microvm" { "native" } else { other };
        let refused = create(&url, other, "shared:/data").expect_err("a second writer");
        assert!(refused.contains(&writer), "{backend}: {refused}");
        if i == 0 {
            let reader = create(&url, other, "shared:/data:ro").unwrap();
            let (code, out) = sh(
                &url,
                &reader,
                "cat /data/native; touch /data/x 2>&1; echo rc=$?",
            );
            assert_eq!(code, 0, "{out}");
            assert!(
                out.starts_with("native\n") && out.contains("Read-only file system"),
                "{out}"
            );
            let (ok, out) = cli(&url, &["volume", "rm", "shared"]);
            assert!(!ok && out.contains("mounts it"), "{out}");
            delete(&url, &reader);
        }
        delete(&url, &writer);
    }
    // it outlived every sandbox, and goes now
    let (ok, out) = cli(&url, &["volume", "rm", "shared"]);
    assert!(ok, "{out}");
    stop(server, dir.path());
}
