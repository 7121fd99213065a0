//! Background processes on a pseudo-terminal: typed input echoes, a resize
//! reaches `stty size`, a reader that comes back later gets the scrollback,
//! and the exit code is the shell's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Guest, argv, shell};
use paddock_proto::{ErrorCode, ExecSpec, ExitInfo, PtySize, Reply, Request};

fn on_pty(mut spec: ExecSpec, rows: u16, cols: u16) -> ExecSpec {
    spec.pty = Some(PtySize { rows, cols });
    spec
}

async fn start(guest: &mut Guest, spec: ExecSpec) -> u64 {
    match guest
        .call(Request::ProcessStart(spec), &[])
        .await
        .unwrap()
        .0
    {
        Reply::ProcessStarted { handle, .. } => handle,
        other => panic!("{other:?}"),
    }
}

async fn type_in(guest: &mut Guest, handle: u64, text: &str) {
    let reply = guest
        .call(
            Request::ProcessWrite { handle, eof: false },
            text.as_bytes(),
        )
        .await
        .unwrap()
        .0;
    assert_eq!(reply, Reply::Ok);
}

/// (data, next_offset, exit) of one long-polled read.
async fn follow(
    guest: &mut Guest,
    handle: u64,
    offset: u64,
    wait_ms: u64,
) -> (Vec<u8>, u64, Option<ExitInfo>) {
    let request = Request::ProcessRead {
        handle,
        offset,
        max_bytes: 1 << 20,
        wait_ms: Some(wait_ms),
    };
    match guest.call(request, &[]).await.unwrap() {
        (
            Reply::ProcessOutput {
                next_offset, exit, ..
            },
            data,
        ) => (data, next_offset, exit),
        other => panic!("{other:?}"),
    }
}

/// Reads on from `offset` until the screen so far contains `needle`.
async fn read_until(guest: &mut Guest, handle: u64, offset: &mut u64, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = String::new();
    while !seen.contains(needle) {
        assert!(Instant::now() < deadline, "no {needle:?} in {seen:?}");
        let (data, next, exit) = follow(guest, handle, *offset, 2_000).await;
        seen.push_str(&String::from_utf8_lossy(&data));
        *offset = next;
        if exit.is_some() && data.is_empty() {
            assert!(seen.contains(needle), "exited without {needle:?}: {seen:?}");
        }
    }
    seen
}

#[tokio::test]
async fn a_shell_on_a_pty_echoes_input_sees_resizes_and_exits_with_its_code() {
    let mut guest = Guest::start().await;
    let handle = start(&mut guest, on_pty(argv(&["/bin/sh"]), 24, 80)).await;
    let mut offset = 0;

    // It is a terminal: the line discipline echoes what is typed, and the
    // shell's stdin is a tty of the size asked.
    type_in(&mut guest, handle, "test -t 0 && echo TTY-$((6*7))\n").await;
    let screen = read_until(&mut guest, handle, &mut offset, "TTY-42").await;
    assert!(
        screen.contains("echo TTY-"),
        "no echo of the input: {screen:?}"
    );
    type_in(&mut guest, handle, "stty size\n").await;
    read_until(&mut guest, handle, &mut offset, "24 80").await;

    let resize = |rows, cols| Request::ProcessResize {
        handle,
        size: PtySize { rows, cols },
    };
    assert_eq!(guest.call(resize(40, 132), &[]).await.unwrap().0, Reply::Ok);
    type_in(&mut guest, handle, "stty size\n").await;
    read_until(&mut guest, handle, &mut offset, "40 132").await;
    assert_eq!(
        guest.error_code(resize(0, 80)).await,
        ErrorCode::BadRequest,
        "a zero-row terminal"
    );

    // The process leads its own session: job control has a terminal.
    type_in(
        &mut guest,
        handle,
        "awk '{ if ($6 == $1) print \"LEADS-\" \"SESSION\" }' /proc/$$/stat\n",
    )
    .await;
    read_until(&mut guest, handle, &mut offset, "LEADS-SESSION").await;

    type_in(&mut guest, handle, "exit 7\n").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let exit = loop {
        let (_, next, exit) = follow(&mut guest, handle, offset, 2_000).await;
        offset = next;
        if let Some(exit) = exit {
            break exit;
        }
        assert!(Instant::now() < deadline, "the shell did not exit");
    };
    assert_eq!(exit.code, Some(7));

    let listed = match guest.call(Request::ProcessList, &[]).await.unwrap().0 {
        Reply::Processes { processes } => processes,
        other => panic!("{other:?}"),
    };
    assert!(
        listed
            .iter()
            .any(|p| p.handle == handle && p.pty && !p.running)
    );
}

#[tokio::test]
async fn a_reader_that_comes_back_gets_the_scrollback_and_a_wait_returns_on_output() {
    let mut guest = Guest::start().await;
    let handle = start(
        &mut guest,
        on_pty(
            shell("for i in 1 2 3; do echo line-$i; done; read x; echo got-$x"),
            10,
            40,
        ),
    )
    .await;
    let mut offset = 0;
    read_until(&mut guest, handle, &mut offset, "line-3").await;

    // A second reader (another attach) starts from the beginning and sees
    // the same screen so far.
    let (again, next, _) = follow(&mut guest, handle, 0, 0).await;
    let again = String::from_utf8_lossy(&again);
    assert!(
        again.contains("line-1") && again.contains("line-3"),
        "{again:?}"
    );
    assert_eq!(next, offset);

    // At the end, a long poll waits for the next output rather than
    // answering at once, and answers as soon as it comes.
    let started = Instant::now();
    let (nothing, _, _) = follow(&mut guest, handle, offset, 300).await;
    assert!(nothing.is_empty());
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );
    type_in(&mut guest, handle, "yes\n").await;
    read_until(&mut guest, handle, &mut offset, "got-yes").await;
}

#[tokio::test]
async fn a_pty_is_refused_for_exec_and_bad_sizes_are_refused() {
    let mut guest = Guest::start().await;
    assert_eq!(
        guest
            .error_code(Request::Exec(on_pty(argv(&["true"]), 24, 80)))
            .await,
        ErrorCode::BadRequest
    );
    assert_eq!(
        guest
            .error_code(Request::ProcessStart(on_pty(argv(&["true"]), 24, 5000)))
            .await,
        ErrorCode::BadRequest
    );
    let plain = start(&mut guest, argv(&["sleep", "5"])).await;
    assert_eq!(
        guest
            .error_code(Request::ProcessResize {
                handle: plain,
                size: PtySize { rows: 24, cols: 80 },
            })
            .await,
        ErrorCode::BadRequest,
        "resizing a process without a terminal"
    );
    let _ = guest
        .call(
            Request::ProcessSignal {
                handle: plain,
                signal: 9,
            },
            &[],
        )
        .await;
}
