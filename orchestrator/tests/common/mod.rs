//! `paddock serve` as a real process, for the crash and client tests. Needs
//! root and `paddock-guest` built next to `paddock` (cargo build -p paddock-guest).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

pub const PADDOCK: &str = env!("CARGO_BIN_EXE_paddock");

/// A unique slug (node names, tenants), so parallel tests never share one.
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}-{}-{nanos:x}", std::process::id())
}

pub struct ServerProcess {
    pub child: Child,
    pub url: String,
}

impl ServerProcess {
    /// Starts `paddock serve` on 127.0.0.1:0 and waits for its address line.
    pub fn start(data: &Path, node: &str, tokens: &str) -> Result<Self> {
        Self::start_with(data, node, tokens, &[])
    }

    /// [`Self::start`] with more arguments for `paddock serve`.
    pub fn start_with(data: &Path, node: &str, tokens: &str, extra: &[&str]) -> Result<Self> {
        Self::spawn(data, node, tokens, extra, None)
    }

    /// [`Self::start_with`], its log at level info written to
    /// [`Self::log_of`]`(data)` instead of the test's stderr, for tests that
    /// wait on what it logs.
    pub fn start_logged(data: &Path, node: &str, tokens: &str, extra: &[&str]) -> Result<Self> {
        let log = std::fs::File::create(Self::log_of(data))?;
        Self::spawn(data, node, tokens, extra, Some(log))
    }

    /// Where [`Self::start_logged`] writes the server's log.
    pub fn log_of(data: &Path) -> PathBuf {
        data.join("serve.log")
    }

    fn spawn(
        data: &Path,
        node: &str,
        tokens: &str,
        extra: &[&str],
        log: Option<std::fs::File>,
    ) -> Result<Self> {
        let mut command = Command::new(PADDOCK);
        if let Some(log) = log {
            command.env("RUST_LOG", "info").stderr(log);
        } else {
            command.stderr(Stdio::inherit());
        }
        let mut child = command
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--node",
                node,
                "--data-dir",
            ])
            .arg(data)
            .args(extra)
            .env("PADDOCK_TOKENS", tokens)
            .env_remove("PADDOCK_DATABASE_URL")
            .env_remove("PADDOCK_CONFIG")
            .stdout(Stdio::piped())
            .spawn()
            .context("spawning paddock serve")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let Some(url) = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .map(str::to_owned)
        else {
            let _ = child.kill();
            bail!("paddock serve did not print its address: {line:?}");
        };
        Ok(Self { child, url })
    }

    /// SIGKILL: no shutdown code runs at all.
    pub fn kill_9(mut self) -> Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        Ok(())
    }

    /// SIGTERM, then waits for a clean exit.
    pub fn terminate(mut self) -> Result<std::process::ExitStatus> {
        let pid = i32::try_from(self.child.id())?;
        nix_kill(pid)?;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                bail!("paddock serve did not stop within 20 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn nix_kill(pid: i32) -> Result<()> {
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()?;
    if !status.success() {
        bail!("kill -TERM {pid} failed");
    }
    Ok(())
}

/// Host processes whose command line contains `needle`, zombies excluded.
pub fn processes_with(needle: &str) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            (text.contains(needle) && !zombie).then_some((pid, text))
        })
        .collect()
}

/// Cgroup directories under `parent` in any hierarchy.
pub fn cgroups_under(parent: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for hierarchy in std::fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(entries) = std::fs::read_dir(hierarchy.path().join(parent)) {
            found.extend(
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
    }
    found
}

/// Cgroup directories anywhere below `parent` in any hierarchy (a run's
/// sandboxes sit below its owner's own parent, `paddock-run/<pid>-<start>`).
pub fn cgroups_below(parent: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo: Vec<PathBuf> = std::fs::read_dir("/sys/fs/cgroup")
        .into_iter()
        .flatten()
        .flatten()
        .map(|h| h.path().join(parent))
        .collect();
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                found.push(entry.path());
                todo.push(entry.path());
            }
        }
    }
    found
}

pub fn wait_until(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    check()
}

/// Whether this host runs `backend` (`paddock sandbox info`); prints why
/// not, or panics when PADDOCK_REQUIRE_BACKENDS names it.
pub fn backend_runs_here(backend: &str, test: &str) -> bool {
    let out = Command::new(PADDOCK)
        .args(["sandbox", "info", "--json"])
        .output()
        .unwrap();
    let info: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    let state = info["backends"][backend]
        .as_str()
        .unwrap_or("unknown")
        .to_owned();
    if state == "available" {
        return true;
    }
    paddock_test_support::require::skip_or_panic(
        paddock_test_support::require::Need::Backend(backend),
        &format!("{test} [{backend}]"),
        &state,
    );
    false
}
