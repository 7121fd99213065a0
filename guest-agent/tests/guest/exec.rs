//! `Exec`: exit status, signals, streaming, stdin, timeouts, caps.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{Guest, argv, eventually_gone, shell};
use paddock_proto::{
    ErrorCode, Event, ExecSpec, GuestMessage, OutputStream, Reply, Request, StdinMode,
};

#[tokio::test]
async fn exit_codes_come_back() {
    let mut guest = Guest::start().await;
    let ok = guest.exec(argv(&["true"])).await;
    assert_eq!((ok.exit.code, ok.exit.signal), (Some(0), None));
    assert!(ok.pid > 0);
    let fail = guest.exec(argv(&["false"])).await;
    assert_eq!(fail.exit.code, Some(1));
    let three = guest.exec(shell("exit 3")).await;
    assert_eq!((three.exit.code, three.exit.shell_code()), (Some(3), 3));
    assert!(!three.exit.timed_out && !three.exit.truncated);
}

#[tokio::test]
async fn a_command_killed_by_a_signal_reports_it() {
    let mut guest = Guest::start().await;
    let outcome = guest.exec(shell("kill -TERM $$")).await;
    assert_eq!((outcome.exit.code, outcome.exit.signal), (None, Some(15)));
    assert_eq!(outcome.exit.shell_code(), 128 + 15);
}

#[tokio::test]
async fn exec_signal_reaches_the_whole_process_group() {
    let mut guest = Guest::start().await;
    // The shell waits on a child; both are in the command's group.
    let id = guest
        .send(Request::Exec(shell("sleep 30; echo never")), &[])
        .await;
    let (GuestMessage::Event(Event::Started { .. }), _) = guest.next_for(id).await else {
        panic!("no Started")
    };
    guest
        .ok(Request::ExecSignal {
            target: id,
            signal: 9,
        })
        .await;
    let outcome = guest.collect_exec(id).await.unwrap();
    assert_eq!(outcome.exit.signal, Some(9));
    assert_eq!(outcome.exit.shell_code(), 137);
    assert!(outcome.chunks.is_empty());
    // Once finished it is gone.
    assert_eq!(
        guest
            .error_code(Request::ExecSignal {
                target: id,
                signal: 9
            })
            .await,
        ErrorCode::UnknownProcess
    );
    let bad = guest.send(Request::Exec(argv(&["sleep", "5"])), &[]).await;
    let _ = guest.next_for(bad).await;
    assert_eq!(
        guest
            .error_code(Request::ExecSignal {
                target: bad,
                signal: 999
            })
            .await,
        ErrorCode::BadRequest
    );
    guest
        .ok(Request::ExecSignal {
            target: bad,
            signal: 9,
        })
        .await;
    assert_eq!(guest.collect_exec(bad).await.unwrap().exit.signal, Some(9));
}

#[tokio::test]
async fn stdout_and_stderr_stream_in_order() {
    let mut guest = Guest::start().await;
    let outcome = guest
        .exec(shell(
            "printf out1; sleep 0.1; printf err1 >&2; sleep 0.1; printf out2",
        ))
        .await;
    assert_eq!(
        outcome.chunks,
        vec![
            (OutputStream::Stdout, b"out1".to_vec()),
            (OutputStream::Stderr, b"err1".to_vec()),
            (OutputStream::Stdout, b"out2".to_vec()),
        ]
    );
}

#[tokio::test]
async fn output_streams_while_the_command_runs() {
    let mut guest = Guest::start().await;
    let id = guest
        .send(Request::Exec(shell("echo first; sleep 30")), &[])
        .await;
    let (GuestMessage::Event(Event::Started { .. }), _) = guest.next_for(id).await else {
        panic!()
    };
    let (message, data) = guest.next_for(id).await;
    assert_eq!(
        message,
        GuestMessage::Event(Event::Output {
            stream: OutputStream::Stdout
        })
    );
    assert_eq!(data, b"first\n");
    guest
        .ok(Request::ExecSignal {
            target: id,
            signal: 9,
        })
        .await;
    guest.collect_exec(id).await.unwrap();
}

#[tokio::test]
async fn stdin_and_stdout_are_binary_safe() {
    let mut guest = Guest::start().await;
    let input: Vec<u8> = (0..=255u8).cycle().take(256 * 1024).collect();
    let outcome = guest.exec_with_stdin(argv(&["cat"]), &input).await;
    assert_eq!(outcome.exit.code, Some(0));
    assert_eq!(outcome.stream(OutputStream::Stdout), input);
    let every_byte: Vec<u8> = (0..=255u8).collect();
    let od = guest
        .exec_with_stdin(argv(&["od", "-An", "-tx1", "-v"]), &every_byte)
        .await;
    let hex: String = od.stdout().split_whitespace().collect();
    let expected: String = every_byte.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, expected);
}

#[tokio::test]
async fn stdin_can_be_streamed_in_order() {
    let mut guest = Guest::start().await;
    let spec = ExecSpec {
        stdin: StdinMode::Stream,
        ..argv(&["cat"])
    };
    let id = guest.send(Request::Exec(spec), &[]).await;
    // Fire all chunks without waiting for their acks: order must hold anyway.
    let mut expected = Vec::new();
    let mut acks = Vec::new();
    for i in 0..50u32 {
        let chunk = format!("chunk{i};").into_bytes();
        expected.extend_from_slice(&chunk);
        acks.push(
            guest
                .send(
                    Request::ExecStdin {
                        target: id,
                        eof: false,
                    },
                    &chunk,
                )
                .await,
        );
    }
    acks.push(
        guest
            .send(
                Request::ExecStdin {
                    target: id,
                    eof: true,
                },
                &[0, 255],
            )
            .await,
    );
    expected.extend_from_slice(&[0, 255]);
    for ack in acks {
        assert!(matches!(guest.finish_of(ack).await, Ok((Reply::Ok, _))));
    }
    let outcome = guest.collect_exec(id).await.unwrap();
    assert_eq!(outcome.exit.code, Some(0));
    assert_eq!(outcome.stream(OutputStream::Stdout), expected);
    // Stdin of an exec that is not streamed, or of one that finished.
    assert_eq!(
        guest
            .error_code(Request::ExecStdin {
                target: id,
                eof: true
            })
            .await,
        ErrorCode::UnknownProcess
    );
    let plain = guest.send(Request::Exec(argv(&["sleep", "5"])), &[]).await;
    let _ = guest.next_for(plain).await;
    assert_eq!(
        guest
            .error_code(Request::ExecStdin {
                target: plain,
                eof: true
            })
            .await,
        ErrorCode::BadRequest
    );
    guest
        .ok(Request::ExecSignal {
            target: plain,
            signal: 9,
        })
        .await;
    guest.collect_exec(plain).await.unwrap();
}

#[tokio::test]
async fn a_timeout_kills_the_process_group() {
    let mut guest = Guest::start().await;
    let started = Instant::now();
    let spec = ExecSpec {
        timeout_ms: Some(300),
        ..shell("sleep 30 & echo $!; wait")
    };
    let outcome = guest.exec(spec).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(outcome.exit.timed_out);
    assert_eq!(outcome.exit.signal, Some(9));
    assert!(outcome.exit.duration_ms >= 300, "{:?}", outcome.exit);
    let grandchild: u32 = outcome.stdout().trim().parse().unwrap();
    assert!(
        eventually_gone(grandchild).await,
        "sleep survived the timeout"
    );
}

#[tokio::test]
async fn output_past_the_cap_is_dropped_and_reported() {
    let mut guest = Guest::start().await;
    let spec = ExecSpec {
        output_cap: Some(1000),
        ..shell("head -c 300000 /dev/zero; echo tail >&2")
    };
    let outcome = guest.exec(spec).await;
    assert_eq!(outcome.exit.code, Some(0), "the command ran to the end");
    assert!(outcome.exit.truncated);
    let total: usize = outcome.chunks.iter().map(|(_, d)| d.len()).sum();
    assert_eq!(total, 1000);
    let under = guest
        .exec(ExecSpec {
            output_cap: Some(1000),
            ..shell("echo small")
        })
        .await;
    assert!(!under.exit.truncated);
    assert_eq!(under.stdout(), "small\n");
}

#[tokio::test]
async fn a_grandchild_holding_the_pipes_does_not_hang_the_exec() {
    let mut guest = Guest::start().await;
    let started = Instant::now();
    let outcome = guest.exec(shell("sleep 30 & echo $!")).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(outcome.exit.code, Some(0));
    let grandchild: u32 = outcome.stdout().trim().parse().unwrap();
    assert!(
        eventually_gone(grandchild).await,
        "the group was not killed"
    );
}

#[tokio::test]
async fn environment_and_working_directory() {
    let mut guest = Guest::start().await;
    std::fs::create_dir(guest.path("sub")).unwrap();
    let spec = ExecSpec {
        cwd: Some("sub".into()),
        env: BTreeMap::from([("FOO".to_string(), "bar baz".to_string())]),
        ..shell("pwd; echo $HOME; echo $FOO; echo $PATH; echo $LANG; env | wc -l")
    };
    let outcome = guest.exec(spec).await;
    let lines: Vec<String> = outcome.stdout().lines().map(str::to_string).collect();
    let root = guest.root.to_string_lossy().into_owned();
    assert_eq!(lines[0], format!("{root}/sub"));
    assert_eq!(lines[1], root);
    assert_eq!(lines[2], "bar baz");
    assert_eq!(
        lines[3],
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    );
    assert_eq!(lines[4], "C.UTF-8");
    // PATH HOME LANG TERM FOO, plus what sh itself exports (PWD, SHLVL, ...).
    let count: usize = lines[5].trim().parse().unwrap();
    assert!(count < 10, "environment leaked: {count} variables");
    let absolute = ExecSpec {
        cwd: Some(guest.abs("sub")),
        ..argv(&["pwd"])
    };
    assert_eq!(guest.exec(absolute).await.stdout(), format!("{root}/sub\n"));
}

#[tokio::test]
async fn bad_commands_and_working_directories_are_refused() {
    let mut guest = Guest::start().await;
    let missing = guest
        .try_exec(argv(&["no-such-command-here"]), &[])
        .await
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::SpawnFailed);
    assert!(
        missing.message.contains("no-such-command-here"),
        "{missing}"
    );
    let both = ExecSpec {
        shell: Some("true".into()),
        ..argv(&["true"])
    };
    assert_eq!(
        guest.try_exec(both, &[]).await.unwrap_err().code,
        ErrorCode::BadRequest
    );
    assert_eq!(
        guest
            .try_exec(ExecSpec::default(), &[])
            .await
            .unwrap_err()
            .code,
        ErrorCode::BadRequest
    );
    std::os::unix::fs::symlink("/etc", guest.path("etc_link")).unwrap();
    for cwd in ["..", "/etc", "etc_link", "nowhere"] {
        let spec = ExecSpec {
            cwd: Some(cwd.into()),
            ..argv(&["true"])
        };
        let code = guest.try_exec(spec, &[]).await.unwrap_err().code;
        let expected = if cwd == "nowhere" {
            ErrorCode::NotFound
        } else {
            ErrorCode::PathEscape
        };
        assert_eq!(code, expected, "cwd {cwd}");
    }
}

#[tokio::test]
async fn all_output_arrives_even_when_the_host_reads_slowly() {
    let mut guest = Guest::start().await;
    let id = guest
        .send(Request::Exec(shell("head -c 4000000 /dev/zero")), &[])
        .await;
    let mut received = 0usize;
    let mut since_stall = 0usize;
    let exit = loop {
        since_stall += 1;
        if since_stall == 16 {
            since_stall = 0;
            // Stall longer than the guest's drain grace, with output queued.
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        match guest.next_for(id).await {
            (GuestMessage::Event(Event::Output { .. }), data) => received += data.len(),
            (GuestMessage::Event(Event::Started { .. }), _) => {}
            (GuestMessage::Reply(Reply::Exited(exit)), _) => break exit,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(exit.code, Some(0));
    assert_eq!(received, 4_000_000);
}

#[tokio::test]
async fn endless_output_cannot_outrun_the_timeout() {
    let mut guest = Guest::start().await;
    let spec = ExecSpec {
        timeout_ms: Some(300),
        output_cap: Some(1000),
        ..argv(&["yes"])
    };
    let started = Instant::now();
    let outcome = guest.exec(spec).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        outcome.exit.timed_out && outcome.exit.truncated,
        "{:?}",
        outcome.exit
    );
    assert_eq!(outcome.exit.signal, Some(9));
}

#[tokio::test]
async fn a_grandchild_flooding_the_pipes_does_not_hold_the_exec_forever() {
    let mut guest = Guest::start().await;
    let started = Instant::now();
    let spec = ExecSpec {
        output_cap: Some(10),
        ..shell("yes & echo")
    };
    let outcome = guest.exec(spec).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(outcome.exit.code, Some(0));
    assert!(outcome.exit.truncated);
}
