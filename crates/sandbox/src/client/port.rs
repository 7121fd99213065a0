//! Port tunnels: a TCP connection to a server in the sandbox, made by the
//! guest and relayed over this connection beside every other request.
//!
//! The caller gets one end of an in-memory pipe of [`PORT_BUFFER`] bytes
//! each way; a relay task moves bytes between its other end and the guest.
//! Server to caller, the guest sends `Data` events only as far as this
//! side granted credit, and credit goes back only once the bytes are in the
//! pipe, so a caller that stops reading stops the server's side. Caller to
//! server, each chunk is a `PortWrite` acknowledged once the guest wrote it
//! to the server, one at a time, so a server that stops reading stops the
//! caller's side. Nothing on the way grows without bound.

use paddock_core::sandbox::GuestError;
use paddock_proto::{Event, GuestMessage, Request};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::{Call, GuestClient, ops};

/// Bytes the in-memory pipe holds each way.
const PORT_BUFFER: usize = 64 << 10;
/// Most bytes of one `PortWrite`.
const WRITE_CHUNK: usize = 64 << 10;

impl GuestClient {
    pub(super) async fn open_port(&self, port: u16) -> Result<DuplexStream, GuestError> {
        let request = Request::PortConnect {
            port,
            connect_timeout_ms: None,
            idle_timeout_ms: None,
        };
        let mut call = self.start(request, &[]).await?;
        let op = call.op;
        match call.next().await? {
            (GuestMessage::Event(Event::Connected), _) => {}
            (GuestMessage::Error(error), _) => return Err(GuestError::Refused { op, error }),
            (GuestMessage::Reply(other), _) => return Err(ops::unexpected(op, &other)),
            (GuestMessage::Event(other), _) => {
                return Err(GuestError::UnexpectedReply {
                    op,
                    got: format!("{other:?}"),
                });
            }
        }
        let (caller, ours) = tokio::io::duplex(PORT_BUFFER);
        tokio::spawn(relay(self.clone(), call, ours, port));
        Ok(caller)
    }
}

/// Moves bytes both ways until the guest ends the tunnel or the caller is
/// gone; a caller that goes first has the guest close the connection.
async fn relay(client: GuestClient, mut call: Call, pipe: DuplexStream, port: u16) {
    let target = call.id;
    let (mut from_caller, mut to_caller) = tokio::io::split(pipe);
    let inbound = async {
        loop {
            match call.next().await {
                Ok((GuestMessage::Event(Event::Data), data)) => {
                    if to_caller.write_all(&data).await.is_err() {
                        return Ended::CallerGone;
                    }
                }
                Ok((GuestMessage::Event(_), _)) => {}
                Ok((GuestMessage::Reply(_), _)) => break,
                Ok((GuestMessage::Error(error), _)) => {
                    tracing::debug!(port, %error, "port tunnel ended by the guest");
                    break;
                }
                Err(err) => {
                    tracing::debug!(port, error = %err, "port tunnel lost");
                    break;
                }
            }
        }
        let _ = to_caller.shutdown().await;
        Ended::ByGuest
    };
    let outbound = async {
        let mut buf = vec![0u8; WRITE_CHUNK];
        loop {
            let n = from_caller.read(&mut buf).await.unwrap_or(0);
            let eof = n == 0;
            let request = Request::PortWrite { target, eof };
            if client.call_ok(request, &buf[..n]).await.is_err() || eof {
                return;
            }
        }
    };
    tokio::pin!(inbound, outbound);
    let ended = tokio::select! {
        ended = &mut inbound => ended,
        () = &mut outbound => inbound.await,
    };
    if ended == Ended::CallerGone {
        client.send_detached(Request::PortClose { target });
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    ByGuest,
    CallerGone,
}
