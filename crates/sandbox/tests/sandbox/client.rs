//! The guest client against an in-process fake guest over a socketpair.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use paddock_core::sandbox::{ExecEvent, Execution, GuestError, GuestOps};
use paddock_proto::{
    Enforcement, ErrorCode, ErrorInfo, Event, ExecSpec, ExitInfo, FrameReader, GuestFrame,
    GuestMessage, HostFrame, OutputStream, PROTOCOL_VERSION, Reply, Request, StdinMode,
    encode_frame,
};
use paddock_sandbox::GuestClient;
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// Every test fails rather than hangs.
const DEADLINE: Duration = Duration::from_secs(5);

struct FakeGuest {
    reader: FrameReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
}

impl FakeGuest {
    async fn recv(&mut self) -> (HostFrame, Vec<u8>) {
        let raw = self
            .reader
            .read_frame()
            .await
            .unwrap()
            .expect("host closed");
        (raw.decode().unwrap(), raw.payload)
    }

    async fn send(&mut self, id: u64, message: GuestMessage, payload: &[u8]) {
        let frame = encode_frame(&GuestFrame { id, message }, payload).unwrap();
        self.writer.write_all(&frame).await.unwrap();
    }

    async fn reply(&mut self, id: u64, reply: Reply) {
        self.send(id, GuestMessage::Reply(reply), &[]).await;
    }

    async fn answer_hello(&mut self, version: u32) {
        let (frame, _) = self.recv().await;
        assert_eq!(
            frame.request,
            Request::Hello {
                version: PROTOCOL_VERSION
            }
        );
        let reply = Reply::Hello {
            version,
            agent_version: "fake-1".to_owned(),
        };
        self.reply(frame.id, reply).await;
    }
}

fn pair() -> (UnixStream, FakeGuest) {
    let (host, guest) = UnixStream::pair().unwrap();
    let (reader, writer) = guest.into_split();
    let fake = FakeGuest {
        reader: FrameReader::new(reader),
        writer,
    };
    (host, fake)
}

async fn connected() -> (GuestClient, FakeGuest) {
    let (host, mut fake) = pair();
    let (client, ()) = tokio::join!(
        GuestClient::connect_unix(host),
        fake.answer_hello(PROTOCOL_VERSION)
    );
    (client.unwrap(), fake)
}

async fn within<F: std::future::Future>(fut: F) -> F::Output {
    tokio::time::timeout(DEADLINE, fut)
        .await
        .expect("hung past the deadline")
}

fn argv(args: &[&str]) -> ExecSpec {
    ExecSpec {
        argv: args.iter().map(|s| s.to_string()).collect(),
        ..ExecSpec::default()
    }
}

fn exited(code: i32) -> GuestMessage {
    GuestMessage::Reply(Reply::Exited(ExitInfo {
        code: Some(code),
        ..ExitInfo::default()
    }))
}

fn output(stream: OutputStream) -> GuestMessage {
    GuestMessage::Event(Event::Output { stream })
}

#[tokio::test]
async fn handshake_keeps_the_agent_version() {
    let (client, _fake) = within(connected()).await;
    assert_eq!(client.agent_version(), "fake-1");
    assert!(!client.is_closed());
}

#[tokio::test]
async fn a_guest_of_another_version_is_refused_clearly() {
    let (host, mut fake) = pair();
    let (client, ()) = within(async {
        tokio::join!(
            GuestClient::connect_unix(host),
            fake.answer_hello(PROTOCOL_VERSION + 1)
        )
    })
    .await;
    let err = client.unwrap_err();
    assert!(
        matches!(&err, GuestError::VersionMismatch { host, guest } if *host == PROTOCOL_VERSION && *guest == (PROTOCOL_VERSION + 1).to_string()),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_guest_refusing_our_version_is_a_version_mismatch() {
    let (host, mut fake) = pair();
    let refuse = async {
        let (frame, _) = fake.recv().await;
        let error = ErrorInfo::new(ErrorCode::VersionMismatch, "guest speaks 7");
        fake.send(frame.id, GuestMessage::Error(error), &[]).await;
    };
    let (client, ()) =
        within(async { tokio::join!(GuestClient::connect_unix(host), refuse) }).await;
    let err = client.unwrap_err();
    assert!(
        matches!(&err, GuestError::VersionMismatch { guest, .. } if guest == "guest speaks 7"),
        "{err:?}"
    );
}

#[tokio::test]
async fn interleaved_answers_reach_their_own_requests() {
    let (client, mut fake) = within(connected()).await;

    let guest = async {
        let mut ids = Vec::new();
        for _ in 0..4 {
            let (frame, _) = fake.recv().await;
            ids.push((frame.request.clone(), frame.id));
        }
        let id_of = |want: &dyn Fn(&Request) -> bool| {
            ids.iter()
                .find(|(r, _)| want(r))
                .map(|(_, id)| *id)
                .unwrap()
        };
        let a = id_of(&|r| matches!(r, Request::Exec(s) if s.argv == ["a"]));
        let b = id_of(&|r| matches!(r, Request::Exec(s) if s.argv == ["b"]));
        let c = id_of(&|r| matches!(r, Request::FileRead { .. }));
        let d = id_of(&|r| matches!(r, Request::Info));

        fake.send(b, GuestMessage::Event(Event::Started { pid: 20 }), &[])
            .await;
        fake.send(a, GuestMessage::Event(Event::Started { pid: 10 }), &[])
            .await;
        fake.send(a, output(OutputStream::Stdout), b"a1").await;
        let data = Reply::FileData { size: 9, offset: 2 };
        fake.send(c, GuestMessage::Reply(data), b"ccc").await;
        fake.send(b, output(OutputStream::Stderr), b"b1").await;
        fake.send(a, output(OutputStream::Stdout), b"a2").await;
        fake.send(b, exited(3), &[]).await;
        let info = Reply::Info {
            version: PROTOCOL_VERSION,
            agent_version: "fake-1".to_owned(),
            enforcement: Enforcement::unconfined(),
        };
        fake.reply(d, info).await;
        fake.send(a, output(OutputStream::Stderr), b"a3").await;
        fake.send(a, exited(0), &[]).await;
    };

    let f = paddock_proto::FsPath::from("f");
    let (a, b, c, d, ()) = within(async {
        tokio::join!(
            client.exec_output(argv(&["a"]), &[]),
            client.exec_output(argv(&["b"]), &[]),
            client.file_read(&f, 2, Some(3)),
            client.info(),
            guest,
        )
    })
    .await;
    let (a, b, c, d) = (a.unwrap(), b.unwrap(), c.unwrap(), d.unwrap());
    assert_eq!(
        (a.stdout.as_slice(), a.stderr.as_slice(), a.exit.code),
        (&b"a1a2"[..], &b"a3"[..], Some(0))
    );
    assert_eq!(
        (b.stdout.as_slice(), b.stderr.as_slice(), b.exit.code),
        (&b""[..], &b"b1"[..], Some(3))
    );
    assert_eq!((c.size, c.offset, c.data.as_slice()), (9, 2, &b"ccc"[..]));
    assert_eq!(d.enforcement, Enforcement::unconfined());
}

#[tokio::test]
async fn exec_events_arrive_in_order_and_end_after_the_exit() {
    let (client, mut fake) = within(connected()).await;
    let mut exec = within(client.exec(argv(&["x"]), &[])).await.unwrap();
    let (frame, _) = within(fake.recv()).await;
    assert_eq!(frame.id, exec.id());
    fake.send(
        frame.id,
        GuestMessage::Event(Event::Started { pid: 5 }),
        &[],
    )
    .await;
    fake.send(frame.id, output(OutputStream::Stdout), b"\0\xffbin")
        .await;
    fake.send(frame.id, exited(1), &[]).await;

    let mut events = Vec::new();
    while let Some(event) = within(exec.next_event()).await.unwrap() {
        events.push(event);
    }
    assert_eq!(
        events,
        vec![
            ExecEvent::Started { pid: 5 },
            ExecEvent::Output {
                stream: OutputStream::Stdout,
                data: b"\0\xffbin".to_vec()
            },
            ExecEvent::Exited(ExitInfo {
                code: Some(1),
                ..ExitInfo::default()
            }),
        ]
    );
    assert_eq!(within(exec.next_event()).await.unwrap(), None);
}

#[tokio::test]
async fn a_guest_dying_mid_request_fails_every_pending_request() {
    let (client, mut fake) = within(connected()).await;
    let mut exec = within(client.exec(argv(&["sleep"]), &[])).await.unwrap();
    let (frame, _) = within(fake.recv()).await;
    fake.send(
        frame.id,
        GuestMessage::Event(Event::Started { pid: 5 }),
        &[],
    )
    .await;

    let stat = tokio::spawn({
        let client = client.clone();
        async move { client.file_stat(&paddock_proto::FsPath::from("x")).await }
    });
    let _ = within(fake.recv()).await;
    drop(fake);

    assert_eq!(
        within(exec.next_event()).await.unwrap(),
        Some(ExecEvent::Started { pid: 5 })
    );
    let err = within(exec.next_event()).await.unwrap_err();
    assert!(
        matches!(&err, GuestError::Disconnected { op: "exec", reason } if reason == "guest closed the connection"),
        "{err:?}"
    );
    let err = within(stat).await.unwrap().unwrap_err();
    assert!(
        matches!(
            &err,
            GuestError::Disconnected {
                op: "file_stat",
                ..
            }
        ),
        "{err:?}"
    );

    // Later requests fail at once too.
    let err = within(client.info()).await.unwrap_err();
    assert!(
        matches!(&err, GuestError::Disconnected { op: "info", .. }),
        "{err:?}"
    );
    assert!(client.is_closed());
}

#[tokio::test]
async fn a_malformed_guest_frame_breaks_the_connection_with_an_error() {
    let (client, mut fake) = within(connected()).await;
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.file_list(&paddock_proto::FsPath::from(".")).await }
    });
    let _ = within(fake.recv()).await;
    let garbage = b"{not json";
    let mut frame = Vec::new();
    frame.extend_from_slice(&(garbage.len() as u32).to_be_bytes());
    frame.extend_from_slice(&0u32.to_be_bytes());
    frame.extend_from_slice(garbage);
    fake.writer.write_all(&frame).await.unwrap();

    let err = within(pending).await.unwrap().unwrap_err();
    assert!(
        matches!(&err, GuestError::Disconnected { op: "file_list", reason } if reason.starts_with("guest sent a malformed frame")),
        "{err:?}"
    );
}

#[tokio::test]
async fn an_oversized_guest_frame_is_an_error_not_an_allocation() {
    let (client, mut fake) = within(connected()).await;
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.process_list().await }
    });
    let _ = within(fake.recv()).await;
    let mut frame = Vec::new();
    frame.extend_from_slice(&2u32.to_be_bytes());
    frame.extend_from_slice(&u32::MAX.to_be_bytes());
    fake.writer.write_all(&frame).await.unwrap();

    let err = within(pending).await.unwrap().unwrap_err();
    assert!(
        matches!(&err, GuestError::Disconnected { reason, .. } if reason.contains("exceeds")),
        "{err:?}"
    );
}

#[tokio::test]
async fn guest_errors_keep_their_code() {
    let (client, mut fake) = within(connected()).await;
    let guest = async {
        let (frame, _) = fake.recv().await;
        assert_eq!(
            frame.request,
            Request::FileRead {
                path: "../etc/passwd".into(),
                offset: 0,
                len: None
            }
        );
        let error = ErrorInfo::new(ErrorCode::PathEscape, "leaves the workspace");
        fake.send(frame.id, GuestMessage::Error(error), &[]).await;
    };
    let escape = paddock_proto::FsPath::from("../etc/passwd");
    let (read, ()) =
        within(async { tokio::join!(client.file_read(&escape, 0, None), guest) }).await;
    let err = read.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::PathEscape));
    assert!(matches!(
        err,
        GuestError::Refused {
            op: "file_read",
            ..
        }
    ));
}

#[tokio::test]
async fn a_reply_of_the_wrong_kind_is_an_error() {
    let (client, mut fake) = within(connected()).await;
    let guest = async {
        let (frame, _) = fake.recv().await;
        fake.reply(frame.id, Reply::Ok).await;
    };
    let a = paddock_proto::FsPath::from("a");
    let (stat, ()) = within(async { tokio::join!(client.file_stat(&a), guest) }).await;
    assert!(
        matches!(stat, Err(GuestError::UnexpectedReply { op: "file_stat", ref got }) if got == "ok"),
        "{stat:?}"
    );
}

#[tokio::test]
async fn streamed_stdin_targets_the_running_exec() {
    let (client, mut fake) = within(connected()).await;
    let spec = ExecSpec {
        stdin: StdinMode::Stream,
        ..argv(&["cat"])
    };
    let exec = within(client.exec(spec, b"ignored")).await.unwrap();
    let (frame, payload) = within(fake.recv()).await;
    assert!(payload.is_empty(), "stdin payload sent in Stream mode");
    assert_eq!(frame.id, exec.id());

    let guest = async {
        let (frame, payload) = fake.recv().await;
        assert_eq!(
            frame.request,
            Request::ExecStdin {
                target: exec.id(),
                eof: true
            }
        );
        assert_eq!(payload, b"hello");
        fake.reply(frame.id, Reply::Ok).await;
    };
    let (sent, ()) =
        within(async { tokio::join!(client.exec_stdin(exec.id(), b"hello", true), guest) }).await;
    sent.unwrap();
}

#[tokio::test]
async fn payload_stdin_rides_in_the_exec_frame() {
    let (client, mut fake) = within(connected()).await;
    let spec = ExecSpec {
        stdin: StdinMode::Payload,
        ..argv(&["cat"])
    };
    let _exec = within(client.exec(spec, b"input bytes")).await.unwrap();
    let (_, payload) = within(fake.recv()).await;
    assert_eq!(payload, b"input bytes");
}

#[tokio::test]
async fn dropping_an_unfinished_exec_kills_it() {
    let (client, mut fake) = within(connected()).await;
    let exec = within(client.exec(argv(&["sleep", "100"]), &[]))
        .await
        .unwrap();
    let target = exec.id();
    let _ = within(fake.recv()).await;
    drop(exec);
    let (frame, _) = within(fake.recv()).await;
    assert_eq!(
        frame.request,
        Request::ExecSignal {
            target,
            signal: libc::SIGKILL
        }
    );
}

#[tokio::test]
async fn dropping_the_last_client_closes_the_connection() {
    let (client, mut fake) = within(connected()).await;
    let other = client.clone();
    drop(client);
    drop(other);
    let end = within(fake.reader.read_frame()).await.unwrap();
    assert!(end.is_none(), "{end:?}");
}

/// A guest that ignores its credit and floods one exec nobody reads: the
/// host keeps at most the stream's cap of it, answers the connection's other
/// requests meanwhile, and the reader later gets a marker for what was dropped.
#[tokio::test]
async fn a_flooded_stream_is_capped_and_does_not_block_the_others() {
    let (client, mut fake) = within(connected()).await;
    let cap = client.limits().stream_buffer_bytes;
    let mut exec = within(client.exec_stream(argv(&["yes"]), &[]))
        .await
        .unwrap();
    let (frame, _) = within(fake.recv()).await;
    let exec_id = frame.id;
    let chunk = vec![b'y'; 64 << 10];
    let flood = cap * 4;
    let mut sent = 0;
    while sent < flood {
        within(fake.send(exec_id, output(OutputStream::Stdout), &chunk)).await;
        sent += chunk.len();
    }
    let info = async {
        let (frame, _) = fake.recv().await;
        assert_eq!(frame.request, Request::Info);
        let reply = Reply::Info {
            version: PROTOCOL_VERSION,
            agent_version: "fake-1".to_owned(),
            enforcement: Enforcement::unconfined(),
        };
        fake.reply(frame.id, reply).await;
        fake
    };
    let (answered, mut fake) = within(async { tokio::join!(client.info(), info) }).await;
    assert_eq!(answered.unwrap().agent_version, "fake-1");
    within(fake.send(exec_id, exited(0), &[])).await;

    let mut kept = 0;
    let mut marker = None;
    let exit = loop {
        match within(exec.next_event()).await.unwrap().unwrap() {
            ExecEvent::Output {
                stream: OutputStream::Stdout,
                data,
            } => kept += data.len(),
            ExecEvent::Output {
                stream: OutputStream::Stderr,
                data,
            } => marker = Some(String::from_utf8(data).unwrap()),
            ExecEvent::Exited(exit) => break exit,
            ExecEvent::Started { .. } => {}
        }
    };
    assert!(kept <= cap, "kept {kept} bytes past the cap of {cap}");
    let marker = marker.expect("no drop marker");
    assert!(
        marker.contains(&format!("{} bytes of output dropped", flood - kept)),
        "{marker}"
    );
    assert!(
        exit.truncated,
        "an exit after dropped output says truncated"
    );
}

/// Taking events grants the guest credit for them, in steps.
#[tokio::test]
async fn reading_a_stream_grants_credit() {
    let (client, mut fake) = within(connected()).await;
    let mut exec = within(client.exec_stream(argv(&["yes"]), &[]))
        .await
        .unwrap();
    let (frame, _) = within(fake.recv()).await;
    let chunk = vec![b'y'; 64 << 10];
    for _ in 0..4 {
        within(fake.send(frame.id, output(OutputStream::Stdout), &chunk)).await;
    }
    let mut granted = 0u64;
    for _ in 0..4 {
        within(exec.next_event()).await.unwrap().unwrap();
    }
    while granted < 4 * chunk.len() as u64 {
        let (credit, _) = within(fake.recv()).await;
        match credit.request {
            Request::StreamCredit { target, bytes } => {
                assert_eq!(target, frame.id);
                granted += bytes;
            }
            other => panic!("expected credit, got {other:?}"),
        }
    }
    assert_eq!(granted, 4 * chunk.len() as u64);
}

/// A guest that takes input and never answers holds the input budget; the
/// next request with a payload waits for room, then fails clearly instead of
/// queueing without bound.
#[tokio::test]
async fn input_to_a_guest_that_stopped_answering_is_bounded() {
    let (host, mut fake) = pair();
    let limits = paddock_sandbox::StreamLimits {
        input_budget_bytes: 1 << 20,
        input_stall: Duration::from_millis(200),
        ..paddock_sandbox::StreamLimits::default()
    };
    let (client, ()) = within(async {
        tokio::join!(
            GuestClient::connect_unix_with(host, limits),
            fake.answer_hello(PROTOCOL_VERSION)
        )
    })
    .await;
    let client = client.unwrap();
    let data = vec![b'x'; 1 << 20];
    let first = {
        let client = client.clone();
        let data = data.clone();
        tokio::spawn(async move { client.process_write(1, &data, false).await })
    };
    let (frame, payload) = within(fake.recv()).await;
    assert!(matches!(frame.request, Request::ProcessWrite { .. }));
    assert_eq!(payload.len(), data.len());
    let started = std::time::Instant::now();
    let err = within(client.process_write(1, &data, false))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GuestError::Refused { error, .. } if error.code == ErrorCode::Timeout),
        "{err:?}"
    );
    assert!(started.elapsed() >= Duration::from_millis(150));
    // The unanswered one frees its share when answered.
    within(fake.reply(frame.id, Reply::Ok)).await;
    within(first).await.unwrap().unwrap();
    let again = {
        let client = client.clone();
        let data = data.clone();
        tokio::spawn(async move { client.process_write(1, &data, false).await })
    };
    let (frame, _) = within(fake.recv()).await;
    within(fake.reply(frame.id, Reply::Ok)).await;
    within(again).await.unwrap().unwrap();
}
