//! Port tunnels on every backend: a server in the sandbox (the probe's TCP
//! echo) reached through the guest (`GuestOps::port_connect`), with network
//! `none`, and a clear refusal where nothing listens.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use paddock_proto::{ErrorCode, ExecSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::cases::{Ctx, PROBE, in_workspace};
use paddock_tests::backends;

const PORT: u16 = 8702;

pub fn port_tunnel(ctx: &Ctx) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
    Box::pin(async move {
        let ws = backends::workspace(ctx.kind);
        let probe = paddock_tests::bins::stage_in_workspace(ws.path(), PROBE);
        let sb = ctx.create(in_workspace(&ws)).await;
        let guest = sb.guest();
        let err = guest.port_connect(PORT).await.unwrap_err();
        assert_eq!(err.code(), Some(ErrorCode::NotListening), "{err:?}");
        guest
            .process_start(ExecSpec {
                argv: vec![probe, "echo-server".into(), PORT.to_string()],
                ..ExecSpec::default()
            })
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut stream = loop {
            match guest.port_connect(PORT).await {
                Ok(stream) => break stream,
                Err(err) if err.code() == Some(ErrorCode::NotListening) => {
                    assert!(Instant::now() < deadline, "the echo server never listened");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(err) => panic!("port_connect [{}]: {err:?}", ctx.kind.name()),
            }
        };
        let message: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        stream.write_all(&message).await.unwrap();
        stream.shutdown().await.unwrap();
        let mut back = Vec::new();
        stream.read_to_end(&mut back).await.unwrap();
        assert!(back == message, "echo differs [{}]", ctx.kind.name());
        sb.destroy().await.unwrap();
    })
}
