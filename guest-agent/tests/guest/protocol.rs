//! Handshake, info, malformed frames and the end of a connection.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Guest, argv, eventually_gone, parent_of, shell};
use paddock_proto::{
    Enforcement, ErrorCode, GuestIsolation, GuestMessage, HostFrame, LayerState, PROTOCOL_VERSION,
    Reply, Request, encode_frame,
};

#[tokio::test]
async fn nothing_is_served_before_hello_and_versions_must_match() {
    let mut guest = Guest::spawn(&[]);
    assert_eq!(guest.error_code(Request::Info).await, ErrorCode::BadRequest);
    assert_eq!(
        guest.error_code(Request::Exec(argv(&["true"]))).await,
        ErrorCode::BadRequest
    );
    let mismatch = guest
        .error(
            Request::Hello {
                version: PROTOCOL_VERSION + 1,
            },
            &[],
        )
        .await;
    assert_eq!(mismatch.code, ErrorCode::VersionMismatch);
    assert!(
        mismatch.message.contains(&PROTOCOL_VERSION.to_string()),
        "{mismatch}"
    );
    assert_eq!(guest.error_code(Request::Info).await, ErrorCode::BadRequest);

    let hello = guest
        .call(
            Request::Hello {
                version: PROTOCOL_VERSION,
            },
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        hello.0,
        Reply::Hello {
            version: PROTOCOL_VERSION,
            agent_version: env!("CARGO_PKG_VERSION").to_string()
        }
    );
    let info = guest.call(Request::Info, &[]).await.unwrap();
    assert_eq!(
        info.0,
        Reply::Info {
            version: PROTOCOL_VERSION,
            agent_version: env!("CARGO_PKG_VERSION").to_string(),
            // unconfined: no layer, but the guest still guards itself
            // against its commands, and says it shares its uid with them
            enforcement: Enforcement {
                guest: Some(GuestIsolation {
                    not_dumpable: LayerState::Enforced,
                    connection_in_agent_only: true,
                    connection_mode_zero: false,
                    guest_uid: nix::unistd::geteuid().as_raw(),
                    command_uid: nix::unistd::geteuid().as_raw(),
                    shared_uid_reason: Some(
                        "unconfined: the guest runs as its caller and so do its commands".into()
                    ),
                }),
                ..Enforcement::unconfined()
            },
        }
    );
}

#[tokio::test]
async fn a_malformed_request_with_an_id_gets_bad_request_and_serving_goes_on() {
    let mut guest = Guest::start().await;
    for header in [
        br#"{"id":41,"request":{"op":"no_such_op"}}"#.as_slice(),
        br#"{"id":42,"request":{"op":"file_read"}}"#.as_slice(),
        br#"{"id":43}"#.as_slice(),
    ] {
        let mut frame = Vec::new();
        frame.extend_from_slice(&(header.len() as u32).to_be_bytes());
        frame.extend_from_slice(&0u32.to_be_bytes());
        frame.extend_from_slice(header);
        guest.send_raw(&frame).await;
    }
    for id in 41..=43 {
        match guest.next_for(id).await {
            (GuestMessage::Error(error), _) => {
                assert_eq!(error.code, ErrorCode::BadRequest);
                assert!(error.message.starts_with("malformed request"), "{error}");
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(matches!(
        guest.call(Request::Info, &[]).await,
        Ok((Reply::Info { .. }, _))
    ));
}

#[tokio::test]
async fn a_frame_without_a_readable_id_closes_the_connection_cleanly() {
    let mut guest = Guest::start().await;
    let header = b"this is not json";
    let mut frame = Vec::new();
    frame.extend_from_slice(&(header.len() as u32).to_be_bytes());
    frame.extend_from_slice(&0u32.to_be_bytes());
    frame.extend_from_slice(header);
    guest.send_raw(&frame).await;
    assert!(guest.next_frame().await.is_none());
    assert!(guest.wait_exit().success());
}

#[tokio::test]
async fn an_oversized_frame_closes_the_connection_cleanly() {
    let mut guest = Guest::start().await;
    let mut frame = Vec::new();
    frame.extend_from_slice(&u32::MAX.to_be_bytes());
    frame.extend_from_slice(&0u32.to_be_bytes());
    guest.send_raw(&frame).await;
    assert!(guest.next_frame().await.is_none());
    assert!(guest.wait_exit().success());
}

#[tokio::test]
async fn a_frame_cut_short_by_the_host_ends_the_guest_cleanly() {
    let mut guest = Guest::start().await;
    let full = encode_frame(
        &HostFrame {
            id: 9,
            request: Request::Info,
        },
        b"",
    )
    .unwrap();
    guest.send_raw(&full[..full.len() - 3]).await;
    assert!(guest.close_and_wait().success());
}

#[tokio::test]
async fn shutdown_replies_then_ends_the_guest_and_its_processes() {
    let mut guest = Guest::start().await;
    let (started, _) = guest
        .call(Request::ProcessStart(argv(&["sleep", "30"])), &[])
        .await
        .unwrap();
    let Reply::ProcessStarted { pid, .. } = started else {
        panic!("{started:?}")
    };
    let id = guest.send(Request::Shutdown, &[]).await;
    assert!(matches!(
        guest.next_for(id).await,
        (GuestMessage::Reply(Reply::Ok), _)
    ));
    assert!(guest.next_frame().await.is_none());
    assert!(guest.wait_exit().success());
    assert!(
        eventually_gone(pid).await,
        "background process {pid} survived shutdown"
    );
}

#[tokio::test]
async fn suspend_waits_for_no_exec_keeps_processes_and_asks_the_next_host_to_greet() {
    let mut guest = Guest::start().await;
    let (started, _) = guest
        .call(Request::ProcessStart(argv(&["sleep", "30"])), &[])
        .await
        .unwrap();
    let Reply::ProcessStarted { pid, .. } = started else {
        panic!("{started:?}")
    };
    // a running exec holds the suspend off, with the reason
    let exec = guest.send(Request::Exec(shell("sleep 1")), &[]).await;
    assert!(matches!(
        guest.next_for(exec).await,
        (GuestMessage::Event(_), _)
    ));
    let busy = guest.error(Request::Suspend, &[]).await;
    assert_eq!(busy.code, ErrorCode::Busy, "{busy}");
    assert!(busy.message.contains("exec"), "{busy}");
    guest.finish_of(exec).await.unwrap();

    guest.ok(Request::Suspend).await;
    // detached: nothing is served until the next host's Hello
    assert_eq!(guest.error_code(Request::Info).await, ErrorCode::BadRequest);
    guest
        .call(
            Request::Hello {
                version: PROTOCOL_VERSION,
            },
            &[],
        )
        .await
        .unwrap();
    let Reply::Processes { processes } = guest.call(Request::ProcessList, &[]).await.unwrap().0
    else {
        panic!("not a process list")
    };
    assert!(
        processes.iter().any(|p| p.pid == pid && p.running),
        "{processes:?}"
    );
    assert!(parent_of(pid).is_some(), "process {pid} died at suspend");
    // greeted again, the guest is back in normal operation: a close ends it
    assert!(guest.close_and_wait().success());
    assert!(
        eventually_gone(pid).await,
        "process {pid} survived the close"
    );
}

#[tokio::test]
async fn closing_the_connection_kills_every_process_group() {
    let mut guest = Guest::start().await;
    let (started, _) = guest
        .call(Request::ProcessStart(argv(&["sleep", "30"])), &[])
        .await
        .unwrap();
    let Reply::ProcessStarted {
        pid: background, ..
    } = started
    else {
        panic!()
    };
    let exec_id = guest.send(Request::Exec(argv(&["sleep", "30"])), &[]).await;
    let (GuestMessage::Event(paddock_proto::Event::Started { pid: running }), _) =
        guest.next_for(exec_id).await
    else {
        panic!("no Started event")
    };
    assert!(guest.close_and_wait().success());
    assert!(
        eventually_gone(background).await,
        "background process survived"
    );
    assert!(eventually_gone(running).await, "running exec survived");
}

#[tokio::test]
async fn commands_never_inherit_the_connection() {
    let mut guest = Guest::start().await;
    // /proc/self/fd of `ls` itself: only its stdio and the directory it reads.
    let outcome = guest.exec(argv(&["ls", "-l", "/proc/self/fd/"])).await;
    assert_eq!(outcome.exit.code, Some(0));
    let listing = outcome.stdout();
    assert!(!listing.contains("socket:"), "{listing}");
    let fds: Vec<&str> = listing
        .lines()
        .filter_map(|l| l.split_whitespace().nth(8))
        .collect();
    assert_eq!(fds, ["0", "1", "2", "3"], "{listing}");
}

#[tokio::test]
async fn requests_run_concurrently() {
    let mut guest = Guest::start().await;
    let slow = guest
        .send(Request::Exec(common::shell("sleep 0.5; echo slow")), &[])
        .await;
    let fast = guest
        .send(Request::Exec(common::shell("echo fast")), &[])
        .await;
    // The fast one finishes while the slow one still runs.
    let fast_outcome = guest.collect_exec(fast).await.unwrap();
    assert_eq!(fast_outcome.stdout(), "fast\n");
    let info = guest.call(Request::Info, &[]).await;
    assert!(info.is_ok());
    let slow_outcome = guest.collect_exec(slow).await.unwrap();
    assert_eq!(slow_outcome.stdout(), "slow\n");
}

#[tokio::test]
async fn orphans_are_reaped_by_the_init() {
    let mut guest = Guest::start().await;
    // The shell exits at once; its background sleep is orphaned.
    let outcome = guest
        .exec(shell("sleep 0.3 >/dev/null 2>&1 & echo $!"))
        .await;
    let orphan: u32 = outcome.stdout().trim().parse().unwrap();
    assert_eq!(
        parent_of(orphan),
        Some(guest.reaper_pid()),
        "not adopted by the init"
    );
    let mut reaped = false;
    for _ in 0..150 {
        // Reaped, not merely a zombie: the /proc entry disappears.
        if !std::path::Path::new(&format!("/proc/{orphan}")).exists() {
            reaped = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(reaped, "orphan {orphan} was not reaped");
}

#[test]
fn start_up_failures_exit_with_a_clear_status() {
    let run = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_paddock-guest"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    // The spec comes as a frame on fd 0, not in argv.
    let jail = |frame: &[u8]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_paddock-guest"))
            .args(["jail", "--sandbox", "sb-x"])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), frame).unwrap();
        let output = child.wait_with_output().unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let mut frame = 9u32.to_le_bytes().to_vec();
    frame.extend(b"{not json");
    let (code, stderr) = jail(&frame);
    assert_eq!(code, Some(64));
    assert!(stderr.contains("invalid spec"), "{stderr}");
    let (code, stderr) = run(&["jail", "--sandbox", "sb-x"]);
    assert_eq!(code, Some(64), "no spec on fd 0");
    assert!(
        stderr.contains("reading the jail spec") || stderr.contains("ended after 0"),
        "{stderr}"
    );
    let (code, stderr) = run(&["serve", "--workspace", "/nonexistent/paddock"]);
    assert_eq!(code, Some(66));
    assert!(stderr.contains("/nonexistent/paddock"), "{stderr}");
    let (code, stderr) = run(&["serve", "--workspace", "/tmp"]);
    assert_eq!(code, Some(70), "fd 0 is not a socket");
    assert!(stderr.contains("not a socket"), "{stderr}");
}

/// Exec output is flow-controlled per stream: without credit the guest stops
/// after one window (the command blocks on its pipe) while other requests are
/// still answered; each grant lets about that much more through.
#[tokio::test]
async fn exec_output_stops_at_the_window_until_credit_comes() {
    use paddock_proto::{Event, STREAM_WINDOW};
    let mut guest = Guest::start().await;
    guest.grant_credit = false;
    let id = guest.send(Request::Exec(argv(&["yes"])), &[]).await;
    let mut received = 0u64;
    // Until the guest goes quiet: it must, one window in.
    while let Ok(frame) = tokio::time::timeout(Duration::from_millis(700), guest.next_frame()).await
    {
        let (frame, payload) = frame.expect("connection closed");
        assert_eq!(frame.id, id);
        received += payload.len() as u64;
        assert!(received <= STREAM_WINDOW, "{received} bytes without credit");
    }
    assert!(
        received > STREAM_WINDOW / 2,
        "only {received} bytes of a window"
    );
    // The connection is not blocked by the stalled stream.
    let info = guest.call(Request::Info, &[]).await;
    assert!(matches!(info, Ok((Reply::Info { .. }, _))), "{info:?}");

    let grant = 100_000u64;
    guest
        .send(
            Request::StreamCredit {
                target: id,
                bytes: grant,
            },
            &[],
        )
        .await;
    let mut more = 0u64;
    while let Ok(frame) = tokio::time::timeout(Duration::from_millis(700), guest.next_frame()).await
    {
        let (frame, payload) = frame.expect("connection closed");
        if let GuestMessage::Event(Event::Output { .. }) = frame.message {
            more += payload.len() as u64;
        }
    }
    assert!(
        more > 0 && more <= grant + (STREAM_WINDOW - received),
        "{more} bytes after a grant of {grant}"
    );
    // As a host that stops reading does: let the stream drain, then kill.
    guest.grant_credit = true;
    guest
        .send(
            Request::StreamCredit {
                target: id,
                bytes: u64::MAX / 2,
            },
            &[],
        )
        .await;
    guest
        .ok(Request::ExecSignal {
            target: id,
            signal: 9,
        })
        .await;
    let exit = guest.finish_of(id).await;
    assert!(matches!(exit, Ok((Reply::Exited(_), _))), "{exit:?}");
}
