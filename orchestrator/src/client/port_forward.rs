//! `paddock sandbox port-forward ID PORT`: a local listener whose every
//! connection becomes a `paddock-tcp` tunnel (`GET
//! /v1/sandboxes/{id}/tunnel/{port}`, upgraded) to the port in the sandbox.

use anyhow::Context;
use paddock_api::http::{ErrorBody, TCP_PROTOCOL};
use reqwest::header::{CONNECTION, UPGRADE};
use reqwest::{Method, StatusCode};
use tokio::net::{TcpListener, TcpStream};

use super::{ApiClient, ServerError};
use crate::cli::PortForwardArgs;

pub async fn port_forward(client: &ApiClient, args: PortForwardArgs) -> anyhow::Result<u8> {
    let port = match paddock_proto::check_port(args.port) {
        Ok(port) => port,
        Err(err) => {
            eprintln!("paddock: {err}");
            return Ok(crate::agent::EXIT_USAGE);
        }
    };
    let client = client.without_read_timeout()?;
    let path = format!("/v1/sandboxes/{}/tunnel/{port}", args.id);
    // The sandbox and the token are checked once before listening: a
    // mistake is told now, not at the first connection.
    let probe = client.request(Method::GET, &format!("/v1/sandboxes/{}", args.id));
    client.send(probe).await?;
    let local = args.local_port.unwrap_or(port);
    let listener = TcpListener::bind(("127.0.0.1", local))
        .await
        .with_context(|| format!("listening on 127.0.0.1:{local}"))?;
    let bound = listener.local_addr()?;
    // Scripts and tests read this line to find a port chosen by the kernel.
    println!(
        "paddock: forwarding {bound} to port {port} of {} (Ctrl-C stops)",
        args.id
    );
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = tokio::signal::ctrl_c() => return Ok(0),
        };
        let (conn, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                eprintln!("paddock: accepting a connection: {err}");
                continue;
            }
        };
        let client = client.clone();
        let path = path.clone();
        tokio::spawn(async move {
            if let Err(err) = relay(&client, &path, conn).await {
                eprintln!("paddock: connection from {peer}: {err:#}");
            }
        });
    }
}

/// Opens a tunnel and carries `conn` through it until either side closes.
async fn relay(client: &ApiClient, path: &str, mut conn: TcpStream) -> anyhow::Result<()> {
    let request = client
        .request(Method::GET, path)
        .header(CONNECTION, "upgrade")
        .header(UPGRADE, TCP_PROTOCOL);
    let response = request
        .send()
        .await
        .with_context(|| format!("talking to {}", client.base()))?;
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        let status = response.status();
        let body = response.bytes().await.unwrap_or_default();
        return Err(match serde_json::from_slice::<ErrorBody>(&body) {
            Ok(body) => ServerError::from_body(Some(status.as_u16()), body).into(),
            Err(_) => anyhow::anyhow!("the server answered HTTP {status}"),
        });
    }
    let mut tunnel = response.upgrade().await.context("upgrading to a tunnel")?;
    tokio::io::copy_bidirectional(&mut conn, &mut tunnel)
        .await
        .context("relaying")?;
    Ok(())
}
