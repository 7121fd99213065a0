//! Port tunnels through a real native sandbox's guest (network `none`: the
//! guest connects inside the sandbox, so no network is needed). Needs
//! `paddock-guest` built and root, as the other real-sandbox tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use paddock_core::sandbox::{GuestError, GuestOps, SandboxSpec};
use paddock_proto::{ErrorCode, ExecSpec};
use paddock_sandbox::{NativeBackend, NativeConfig, locate_guest_bin};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

fn backend(temp_root: &std::path::Path) -> NativeBackend {
    let mut config = NativeConfig::new(locate_guest_bin(None).unwrap());
    config.temp_root = Some(temp_root.to_path_buf());
    config.cgroup_parent = "paddock-test".to_owned();
    config.unconfined = std::env::var("PADDOCK_UNCONFINED").is_ok_and(|v| v == "1");
    NativeBackend::new(config)
}

/// Connects once the server in the sandbox listens (it starts in the background).
async fn connect_when_up(guest: &dyn GuestOps, port: u16) -> DuplexStream {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match guest.port_connect(port).await {
            Ok(stream) => return stream,
            Err(err) if err.code() == Some(ErrorCode::NotListening) => {
                assert!(Instant::now() < deadline, "server never listened: {err}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(err) => panic!("port_connect: {err:?}"),
        }
    }
}

/// A server that echoes every byte back, then closes after the client's end of file.
const ECHO: &str = "import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', 8701)); s.listen()
while True:
    c, _ = s.accept()
    while True:
        b = c.recv(65536)
        if not b: break
        c.sendall(b)
    c.close()
";

#[tokio::test]
async fn a_tunnel_reaches_servers_in_a_sandbox_without_network() {
    let temp_root = tempfile::tempdir().unwrap();
    let sandbox = backend(temp_root.path())
        .create_native(SandboxSpec::default())
        .await
        .unwrap();
    let guest = sandbox.client();

    // Nothing listens yet: a clear refusal, not a hang.
    let err = guest.port_connect(8700).await.unwrap_err();
    assert!(
        matches!(&err, GuestError::Refused { error, .. } if error.code == ErrorCode::NotListening
            && error.message.contains("8700")),
        "{err:?}"
    );
    // The egress proxy's port is never a sandbox's server.
    let err = guest
        .port_connect(paddock_proto::PROXY_PORT)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::BadRequest), "{err:?}");

    std::fs::write(
        sandbox.info().workspace.join("hello.txt"),
        "hi from the sandbox",
    )
    .unwrap();
    let server = |script: &str| ExecSpec {
        argv: vec!["python3".into(), "-c".into(), script.into()],
        ..ExecSpec::default()
    };
    guest
        .process_start(ExecSpec {
            argv: [
                "python3",
                "-m",
                "http.server",
                "8700",
                "--bind",
                "127.0.0.1",
            ]
            .map(String::from)
            .to_vec(),
            ..ExecSpec::default()
        })
        .await
        .unwrap();
    guest.process_start(server(ECHO)).await.unwrap();

    // HTTP/1.0: the server answers and closes, which ends the tunnel.
    let mut http = connect_when_up(guest, 8700).await;
    http.write_all(b"GET /hello.txt HTTP/1.0\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    http.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
    assert!(answer.ends_with("hi from the sandbox"), "{answer}");

    // 4 MiB both ways at once, more than every buffer on the way: the
    // flow control carries it without loss or deadlock.
    let echo = connect_when_up(guest, 8701).await;
    let (mut rx, mut tx) = tokio::io::split(echo);
    let sent: Vec<u8> = (0..4u32 << 20).map(|i| (i % 251) as u8).collect();
    let expected = sent.clone();
    let writer = tokio::spawn(async move {
        tx.write_all(&sent).await.unwrap();
        tx.shutdown().await.unwrap();
        tx
    });
    let mut back = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), rx.read_to_end(&mut back))
        .await
        .expect("echo stalled")
        .unwrap();
    writer.await.unwrap();
    assert_eq!(back.len(), expected.len());
    assert!(back == expected, "echoed bytes differ");

    sandbox.destroy().await.unwrap();
}
