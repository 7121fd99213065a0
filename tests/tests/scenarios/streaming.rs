//! stdin, stdout and stderr pass through `paddock sandbox run`: binary-safe,
//! separated, and streamed while the command runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use paddock_tests::cli::SandboxRun;
use paddock_tests::host::require_root;
use paddock_tests::run::wait_until;

/// Deterministic bytes covering every value (a small LCG), `len` long.
fn binary_data(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x1234_5678;
    (0..len)
        .map(|i| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            if i < 256 { i as u8 } else { (x >> 24) as u8 }
        })
        .collect()
}

#[test]
fn binary_stdin_comes_back_byte_for_byte() {
    require_root();
    let data = binary_data(3 << 20);
    let run = SandboxRun::new(["cat"]).stdin(&data).run();
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr_str());
    assert_eq!(run.stdout.len(), data.len());
    assert!(run.stdout == data, "stdout differs from stdin");
}

#[test]
fn stdout_and_stderr_stay_separate() {
    require_root();
    let run = SandboxRun::shell("echo out1; echo err1 >&2; echo out2; echo err2 >&2").run();
    assert_eq!(run.code(), 0);
    assert_eq!(run.stdout_str(), "out1\nout2\n");
    assert_eq!(run.stderr_str(), "err1\nerr2\n");
}

#[test]
fn large_output_arrives_complete() {
    require_root();
    let run = SandboxRun::new(["head", "-c", "9000000", "/dev/zero"]).run();
    assert_eq!(run.code(), 0);
    assert_eq!(run.stdout.len(), 9_000_000);
    assert!(run.stdout.iter().all(|b| *b == 0));
}

#[test]
fn output_streams_before_the_command_ends_and_stdin_streams_in() {
    require_root();
    let mut child = SandboxRun::shell("echo ready; read line; echo \"got $line\"")
        .command(false)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let deadline = Duration::from_secs(20);
    // The command is blocked on `read`: "ready" can only arrive if output streams.
    let first = rx.recv_timeout(deadline);
    if first.is_err() {
        let _ = child.kill();
    }
    assert_eq!(first.unwrap(), "ready");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello\n").unwrap();
    drop(stdin);
    let second = rx.recv_timeout(deadline);
    if second.is_err() {
        let _ = child.kill();
    }
    assert_eq!(second.unwrap(), "got hello");
    let mut status = None;
    wait_until(deadline, || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    if status.is_none() {
        let _ = child.kill();
    }
    assert_eq!(status.and_then(|s| s.code()), Some(0));
}

#[test]
fn no_stdin_gives_the_command_an_empty_stdin() {
    require_root();
    let run = SandboxRun::new(["wc", "-c"])
        .option("--no-stdin")
        .stdin(b"ignored")
        .run();
    assert_eq!(run.code(), 0);
    assert_eq!(run.stdout_str().trim(), "0");
}
