//! Running a host process with a deadline: stdin fed from a buffer, stdout and
//! stderr collected, killed (and reported) when the deadline passes.

use std::io::{Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// What a finished process left.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub elapsed: Duration,
}

impl Finished {
    /// Exit code, or 128 + signal like a shell reports it.
    pub fn code(&self) -> i32 {
        use std::os::unix::process::ExitStatusExt;
        match (self.status.code(), self.status.signal()) {
            (Some(c), _) => c,
            (None, Some(s)) => 128 + s,
            (None, None) => -1,
        }
    }

    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// Runs `cmd` to completion with `stdin` as its input. Panics (after killing
/// it) when it is still running after `deadline`: a hung sandbox is a failure.
pub fn run_with_deadline(cmd: &mut Command, stdin: &[u8], deadline: Duration) -> Finished {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {cmd:?}: {e}"));
    let pid = child.id();
    let input = stdin.to_vec();
    let mut child_stdin = child.stdin.take();
    let feeder = thread::spawn(move || {
        if let Some(mut s) = child_stdin.take() {
            // The command may exit without reading everything: a broken pipe is fine.
            let _ = s.write_all(&input);
        }
    });
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(collect(child));
    });
    let collected = match rx.recv_timeout(deadline) {
        Ok(r) => r,
        Err(_) => {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
            panic!("{cmd:?} still running after {deadline:?}: killed it");
        }
    };
    let _ = feeder.join();
    let (status, stdout, stderr) = collected.unwrap_or_else(|e| panic!("waiting for {cmd:?}: {e}"));
    Finished {
        status,
        stdout,
        stderr,
        elapsed: start.elapsed(),
    }
}

fn collect(mut child: Child) -> std::io::Result<(ExitStatus, Vec<u8>, Vec<u8>)> {
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let err_reader = thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_end(&mut buf);
        }
        buf
    });
    let mut stdout = Vec::new();
    if let Some(o) = out.as_mut() {
        o.read_to_end(&mut stdout)?;
    }
    let stderr = err_reader.join().unwrap_or_default();
    let status = child.wait()?;
    Ok((status, stdout, stderr))
}

/// Polls `cond` until it holds or `timeout` passes; returns whether it held.
/// The poll interval starts at 1 ms and grows, so fast conditions cost little.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    let mut interval = Duration::from_millis(1);
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() >= timeout {
            return false;
        }
        thread::sleep(interval);
        interval = (interval * 2).min(Duration::from_millis(50));
    }
}
