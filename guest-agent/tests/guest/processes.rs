//! Background processes: start, list, read from an offset, write, signal, wait.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Guest, argv, shell};
use paddock_proto::{ErrorCode, ExecSpec, ExitInfo, Reply, Request, StdinMode};

async fn start(guest: &mut Guest, spec: ExecSpec) -> (u64, u32) {
    match guest
        .call(Request::ProcessStart(spec), &[])
        .await
        .unwrap()
        .0
    {
        Reply::ProcessStarted { handle, pid } => (handle, pid),
        other => panic!("{other:?}"),
    }
}

async fn wait(guest: &mut Guest, handle: u64, timeout_ms: Option<u64>) -> Option<ExitInfo> {
    match guest
        .call(Request::ProcessWait { handle, timeout_ms }, &[])
        .await
        .unwrap()
        .0
    {
        Reply::ProcessStatus { running, exit } => {
            assert_eq!(running, exit.is_none());
            exit
        }
        other => panic!("{other:?}"),
    }
}

/// (offset, next_offset, dropped, running, data)
async fn read(
    guest: &mut Guest,
    handle: u64,
    offset: u64,
    max_bytes: u64,
) -> (u64, u64, u64, bool, Vec<u8>) {
    let request = Request::ProcessRead {
        handle,
        offset,
        max_bytes,
        wait_ms: None,
    };
    match guest.call(request, &[]).await.unwrap() {
        (
            Reply::ProcessOutput {
                offset,
                next_offset,
                dropped,
                running,
                exit,
                ..
            },
            data,
        ) => {
            assert_eq!(running, exit.is_none());
            assert_eq!(next_offset, offset + data.len() as u64);
            (offset, next_offset, dropped, running, data)
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn output_is_kept_and_can_be_read_from_any_offset() {
    let mut guest = Guest::start().await;
    let (handle, pid) = start(
        &mut guest,
        shell("echo one; sleep 0.1; echo two >&2; sleep 0.1; echo three"),
    )
    .await;
    assert!(pid > 0);
    let exit = wait(&mut guest, handle, None).await.unwrap();
    assert_eq!(exit.code, Some(0));

    // Stdout and stderr combined in arrival order.
    let (offset, next, dropped, running, data) = read(&mut guest, handle, 0, 1 << 20).await;
    assert_eq!((offset, next, dropped, running), (0, 14, 0, false));
    assert_eq!(data, b"one\ntwo\nthree\n");
    // Reattach from an offset, in small pieces.
    let (_, next, _, _, data) = read(&mut guest, handle, 4, 4).await;
    assert_eq!((data.as_slice(), next), (b"two\n".as_slice(), 8));
    let (_, next, _, _, data) = read(&mut guest, handle, next, 100).await;
    assert_eq!((data.as_slice(), next), (b"three\n".as_slice(), 14));
    let (_, _, _, _, data) = read(&mut guest, handle, 14, 100).await;
    assert!(data.is_empty());
    assert_eq!(
        guest
            .error_code(Request::ProcessRead {
                handle,
                offset: 15,
                max_bytes: 1,
                wait_ms: None,
            })
            .await,
        ErrorCode::BadRequest
    );

    let Reply::Processes { processes } = guest.call(Request::ProcessList, &[]).await.unwrap().0
    else {
        panic!()
    };
    assert_eq!(processes.len(), 1);
    let info = &processes[0];
    assert_eq!(
        (info.handle, info.pid, info.running, info.output_bytes),
        (handle, pid, false, 14)
    );
    assert_eq!(info.command[..2], ["/bin/sh".to_string(), "-c".to_string()]);
    assert_eq!(info.exit.as_ref().unwrap().code, Some(0));
}

#[tokio::test]
async fn the_bounded_buffer_reports_what_it_dropped() {
    let mut guest = Guest::start_with(&["--process-buffer-bytes", "1000"]).await;
    // 400 lines of "line NNN\n" = 3600 bytes.
    let (handle, _) = start(
        &mut guest,
        shell("i=100; while [ $i -lt 500 ]; do echo line $i; i=$((i+1)); done"),
    )
    .await;
    wait(&mut guest, handle, None).await.unwrap();
    let (offset, next, dropped, _, data) = read(&mut guest, handle, 0, 1 << 20).await;
    assert_eq!((offset, dropped, next), (2600, 2600, 3600));
    let expected: String = (100..500).map(|i| format!("line {i}\n")).collect();
    assert_eq!(data, expected.as_bytes()[2600..]);
    // A reader that kept up loses nothing.
    let (offset, _, dropped, _, data) = read(&mut guest, handle, 3000, 1 << 20).await;
    assert_eq!((offset, dropped), (3000, 0));
    assert_eq!(data, expected.as_bytes()[3000..]);
}

#[tokio::test]
async fn the_default_buffer_keeps_the_last_mebibyte() {
    let mut guest = Guest::start().await;
    let (handle, _) = start(&mut guest, shell("head -c 3000000 /dev/zero")).await;
    wait(&mut guest, handle, None).await.unwrap();
    let (offset, next, dropped, _, data) = read(&mut guest, handle, 0, 1 << 24).await;
    assert_eq!(
        (offset, dropped, next),
        (3_000_000 - (1 << 20), 3_000_000 - (1 << 20), 3_000_000)
    );
    assert_eq!(data.len(), 1 << 20);
}

#[tokio::test]
async fn stdin_can_be_written_until_eof() {
    let mut guest = Guest::start().await;
    let spec = ExecSpec {
        stdin: StdinMode::Stream,
        ..argv(&["cat"])
    };
    let (handle, _) = start(&mut guest, spec).await;
    assert!(matches!(
        guest
            .call(Request::ProcessWrite { handle, eof: false }, b"hello ")
            .await,
        Ok((Reply::Ok, _))
    ));
    assert_eq!(
        wait(&mut guest, handle, Some(100)).await,
        None,
        "cat ended before eof"
    );
    assert!(matches!(
        guest
            .call(Request::ProcessWrite { handle, eof: true }, &[0, 1, 255])
            .await,
        Ok((Reply::Ok, _))
    ));
    assert_eq!(wait(&mut guest, handle, None).await.unwrap().code, Some(0));
    let (_, _, _, _, data) = read(&mut guest, handle, 0, 100).await;
    assert_eq!(data, b"hello \x00\x01\xff");
    assert_eq!(
        guest
            .error(Request::ProcessWrite { handle, eof: false }, b"late")
            .await
            .code,
        ErrorCode::StdinClosed
    );
}

#[tokio::test]
async fn stdin_of_a_process_that_stopped_reading_is_closed_not_an_io_failure() {
    let mut guest = Guest::start().await;
    // The shell closes its stdin, then lingers: a write meets a broken pipe.
    let spec = ExecSpec {
        stdin: StdinMode::Stream,
        ..shell("exec 0<&-; sleep 5")
    };
    let (handle, _) = start(&mut guest, spec).await;
    // Writes may land in the pipe until the shell has closed its end.
    let mut last = None;
    for _ in 0..50 {
        match guest
            .call(Request::ProcessWrite { handle, eof: false }, b"x")
            .await
        {
            Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            Err(error) => {
                last = Some(error.code);
                break;
            }
        }
    }
    assert_eq!(last, Some(ErrorCode::StdinClosed));
}

#[tokio::test]
async fn signals_go_to_the_group_and_wait_can_time_out() {
    let mut guest = Guest::start().await;
    let (handle, _) = start(&mut guest, shell("sleep 30; echo never")).await;
    assert_eq!(wait(&mut guest, handle, Some(50)).await, None);
    let waiter = guest
        .send(
            Request::ProcessWait {
                handle,
                timeout_ms: None,
            },
            &[],
        )
        .await;
    guest
        .ok(Request::ProcessSignal { handle, signal: 15 })
        .await;
    let Ok((
        Reply::ProcessStatus {
            running: false,
            exit: Some(exit),
        },
        _,
    )) = guest.finish_of(waiter).await
    else {
        panic!("wait did not end")
    };
    assert_eq!(exit.signal, Some(15));
    let (_, _, _, running, data) = read(&mut guest, handle, 0, 100).await;
    assert!(!running && data.is_empty());
    // Signalling an ended process is harmless.
    guest
        .ok(Request::ProcessSignal { handle, signal: 15 })
        .await;
}

#[tokio::test]
async fn timeouts_and_caps_apply_to_background_processes() {
    let mut guest = Guest::start().await;
    let spec = ExecSpec {
        timeout_ms: Some(200),
        output_cap: Some(5),
        ..shell("echo 0123456789; sleep 30")
    };
    let (handle, _) = start(&mut guest, spec).await;
    let exit = wait(&mut guest, handle, None).await.unwrap();
    assert!(exit.timed_out && exit.truncated, "{exit:?}");
    let (_, _, _, _, data) = read(&mut guest, handle, 0, 100).await;
    assert_eq!(data, b"01234");
}

#[tokio::test]
async fn unknown_handles_are_refused() {
    let mut guest = Guest::start().await;
    for request in [
        Request::ProcessRead {
            handle: 77,
            offset: 0,
            max_bytes: 1,
            wait_ms: None,
        },
        Request::ProcessWrite {
            handle: 77,
            eof: true,
        },
        Request::ProcessSignal {
            handle: 77,
            signal: 9,
        },
        Request::ProcessWait {
            handle: 77,
            timeout_ms: None,
        },
    ] {
        assert_eq!(guest.error_code(request).await, ErrorCode::UnknownProcess);
    }
    let (handle, _) = start(&mut guest, argv(&["true"])).await;
    assert_eq!(
        guest
            .error_code(Request::ProcessWrite { handle, eof: true })
            .await,
        ErrorCode::BadRequest,
        "stdin was not streamed"
    );
    let failed = guest
        .call(Request::ProcessStart(argv(&["no-such-command-here"])), &[])
        .await;
    assert_eq!(failed.unwrap_err().code, ErrorCode::SpawnFailed);
}

#[tokio::test]
async fn only_the_latest_ended_processes_are_remembered() {
    let mut guest = Guest::start().await;
    let running = start(&mut guest, argv(&["sleep", "30"])).await.0;
    let mut handles = Vec::new();
    for _ in 0..40 {
        let (handle, _) = start(&mut guest, argv(&["true"])).await;
        wait(&mut guest, handle, None).await.unwrap();
        handles.push(handle);
    }
    let Reply::Processes { processes } = guest.call(Request::ProcessList, &[]).await.unwrap().0
    else {
        panic!()
    };
    let listed: Vec<u64> = processes.iter().map(|p| p.handle).collect();
    assert!(listed.contains(&running), "a running process was forgotten");
    assert!(listed.contains(handles.last().unwrap()));
    assert!(!listed.contains(&handles[0]));
    assert_eq!(listed.len(), 1 + 32);
    assert_eq!(
        guest
            .error_code(Request::ProcessWait {
                handle: handles[0],
                timeout_ms: None
            })
            .await,
        ErrorCode::UnknownProcess
    );
}
