//! The volume pool's effects on the host behind a seam: files, mount table
//! and the btrfs tools. `pool.rs` drives it; its tests use a recording fake.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use paddock_core::store::BoxError;

/// How long one tool may run (a quota rescan of a big pool is the slow one).
pub(crate) const TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// Blocking: called from `spawn_blocking`.
pub(crate) trait Kernel: Send + Sync + fmt::Debug + 'static {
    fn exists(&self, path: &Path) -> bool;
    fn mountinfo(&self) -> io::Result<String>;
    fn make_dirs(&self, path: &Path) -> io::Result<()>;
    fn make_sparse_file(&self, path: &Path, bytes: u64) -> io::Result<()>;
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Runs `program` with `args`; its stdout, or an error carrying its
    /// stderr when it fails.
    fn run(&self, program: &str, args: &[OsString]) -> Result<String, BoxError>;
}

/// The real host.
#[derive(Debug, Default)]
pub(crate) struct Host;

#[derive(Debug, thiserror::Error)]
enum ToolError {
    #[error("starting {program}")]
    Spawn {
        program: String,
        #[source]
        source: io::Error,
    },
    #[error("{program} did not finish within {secs} s")]
    Timeout { program: String, secs: u64 },
    #[error("{program} failed ({status}): {stderr}")]
    Failed {
        program: String,
        status: std::process::ExitStatus,
        stderr: String,
    },
}

impl Kernel for Host {
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn mountinfo(&self) -> io::Result<String> {
        std::fs::read_to_string("/proc/self/mountinfo")
    }

    fn make_dirs(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }

    fn make_sparse_file(&self, path: &Path, bytes: u64) -> io::Result<()> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        file.set_len(bytes)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn run(&self, program: &str, args: &[OsString]) -> Result<String, BoxError> {
        let spawn = |source| ToolError::Spawn {
            program: program.to_owned(),
            source,
        };
        let child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn)?;
        let output = wait_with_timeout(child, TOOL_TIMEOUT).map_err(|e| match e {
            Some(source) => spawn(source),
            None => ToolError::Timeout {
                program: program.to_owned(),
                secs: TOOL_TIMEOUT.as_secs(),
            },
        })?;
        if !output.status.success() {
            return Err(ToolError::Failed {
                program: program.to_owned(),
                status: output.status,
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            }
            .into());
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

/// The child's output once it exits; `Err(None)` (it is killed) past
/// `timeout`. The tools print little, so the pipes cannot fill while we poll.
fn wait_with_timeout(
    mut child: std::process::Child,
    timeout: Duration,
) -> Result<std::process::Output, Option<io::Error>> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return child.wait_with_output().map_err(Some),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(None);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(Some(e)),
        }
    }
}
