//! What a tunnelled connection (a CONNECT the proxy does not intercept, a
//! transparent connection) opens with, checked before a byte of it leaves:
//! a TLS ClientHello must name the host the connection was admitted for
//! (its SNI, read with rustls' server-side `Acceptor`, which stops at the
//! ClientHello), an HTTP request must too (its Host header and absolute
//! URL, [`crate::proxy::secrets::forward_head`]'s rule, and no secret's
//! placeholder), and it is forwarded with `Connection: close`, so a server
//! answers that one request only. What the server says first (SSH, SMTP)
//! or what is neither TLS nor HTTP carries no name the proxy can read and
//! is tunnelled as is (docs/security.md says so).

use std::time::Duration;

use paddock_proto::Target;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::proxy::relay::splice;

use crate::proxy::secrets::{Admitted, Secrets, forward_head};

/// How long the client may take to send its whole ClientHello or head.
const OPENING_TIMEOUT: Duration = Duration::from_secs(10);
/// The most bytes read for a ClientHello (it may span TLS records).
const MAX_HELLO: usize = 64 * 1024;
/// The most bytes of an HTTP request head.
const MAX_HEAD: usize = 16 * 1024;

/// Checks a TLS server name (None: the ClientHello had none) against the
/// host the connection was admitted for: a name needs its own SNI; an IP
/// literal needs none (a client sends none for an address).
pub(crate) fn check_sni(sni: Option<&str>, target: &Target) -> Result<(), String> {
    match (sni, target) {
        (Some(name), _) if Target::parse(name).is_ok_and(|t| &t == target) => Ok(()),
        (None, Target::Ip(_)) => Ok(()),
        (None, Target::Name(_)) => Err(format!(
            "a TLS ClientHello without a server name (the connection was admitted for {target})"
        )),
        (Some(name), _) => Err(format!(
            "the TLS server name {} is not {target}, which the connection was admitted for",
            printable(name)
        )),
    }
}

fn printable(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii_graphic())
        .take(100)
        .collect()
}

/// What the client's first bytes were.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Tls,
    Http,
    Other,
    /// Not enough bytes to tell yet.
    Unknown,
}

fn kind(buf: &[u8]) -> Kind {
    match buf.first() {
        None => Kind::Unknown,
        Some(0x16) => Kind::Tls,
        Some(_) => {
            // an HTTP method: upper-case letters, then a space
            let letters = buf.iter().take_while(|b| b.is_ascii_uppercase()).count();
            match buf.get(letters) {
                _ if letters == 0 || letters > 16 => Kind::Other,
                Some(b' ') => Kind::Http,
                Some(_) => Kind::Other,
                None => Kind::Unknown,
            }
        }
    }
}

/// The SNI of a complete ClientHello in `buf`: Ok(None) when it needs
/// more bytes, Ok(Some(sni)) when read, Err when it is not one.
fn client_hello(buf: &[u8]) -> Result<Option<Option<String>>, String> {
    let mut acceptor = rustls::server::Acceptor::default();
    let mut rest = buf;
    while !rest.is_empty() {
        match acceptor.read_tls(&mut rest) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Err(format!("not a TLS ClientHello the proxy can read: {e}")),
        }
    }
    match acceptor.accept() {
        Ok(Some(accepted)) => Ok(Some(
            accepted.client_hello().server_name().map(str::to_owned),
        )),
        Ok(None) => Ok(None),
        Err((e, _)) => Err(format!("not a TLS ClientHello the proxy can read: {e}")),
    }
}

/// Why a tunnel was refused, and whether the client spoke HTTP (it then
/// gets a 403 saying so).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    pub(crate) why: String,
    pub(crate) http: bool,
}

/// Relays an admitted tunnel once its opening passed [`check`]: the client
/// speaking first is checked, a server speaking first is relayed as is.
/// `early` are bytes of the client read already (past a CONNECT head).
/// Returns the bytes (out, in), or why it was refused (nothing sent).
pub(crate) async fn relay(
    client: &mut TcpStream,
    upstream: &mut TcpStream,
    admitted: Admitted<'_>,
    secrets: &Secrets,
    early: Vec<u8>,
) -> Result<(u64, u64), Refused> {
    let client_first = !early.is_empty()
        || tokio::select! {
            biased;
            _ = client.readable() => true,
            _ = upstream.readable() => false,
        };
    let first = if client_first {
        let mut reader = AsyncReadExt::chain(&early[..], &mut *client);
        check(&mut reader, admitted, secrets).await?
    } else {
        Vec::new()
    };
    if upstream.write_all(&first).await.is_err() {
        return Ok((0, 0));
    }
    let (out, inn) = splice(client, upstream).await;
    Ok((out + first.len() as u64, inn))
}

/// Reads the client's opening and checks the name it carries against
/// `admitted`: returns the bytes to send upstream first (the opening as
/// read, an HTTP head rewritten to close after one answer), or why the
/// connection is refused.
pub(crate) async fn check<S: AsyncRead + Unpin>(
    client: &mut S,
    admitted: Admitted<'_>,
    secrets: &Secrets,
) -> Result<Vec<u8>, Refused> {
    tokio::time::timeout(OPENING_TIMEOUT, read_and_check(client, admitted, secrets))
        .await
        .unwrap_or_else(|_| {
            Err(Refused {
                why: format!("no complete TLS ClientHello or HTTP head within {OPENING_TIMEOUT:?}"),
                http: false,
            })
        })
}

async fn read_and_check<S: AsyncRead + Unpin>(
    client: &mut S,
    admitted: Admitted<'_>,
    secrets: &Secrets,
) -> Result<Vec<u8>, Refused> {
    let tls = |why: String| Refused { why, http: false };
    let http = |why: String| Refused { why, http: true };
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client
            .read(&mut chunk)
            .await
            .map_err(|e| tls(format!("reading the opening: {e}")))?;
        if n == 0 {
            // the client closed before its opening was whole: nothing to name
            return Ok(buf);
        }
        buf.extend_from_slice(&chunk[..n]);
        match kind(&buf) {
            Kind::Unknown => continue,
            Kind::Other => return Ok(buf),
            Kind::Tls => {
                if let Some(sni) = client_hello(&buf).map_err(tls)? {
                    check_sni(sni.as_deref(), admitted.target).map_err(tls)?;
                    return Ok(buf);
                }
                if buf.len() > MAX_HELLO {
                    return Err(tls("a TLS ClientHello of more than 64 KiB".to_owned()));
                }
            }
            Kind::Http => {
                if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let extra = buf.split_off(end + 4);
                    return plain_request(&buf, extra, admitted, secrets).map_err(http);
                }
                if buf.len() > MAX_HEAD {
                    return Err(http("an HTTP request head of more than 16 KiB".to_owned()));
                }
            }
        }
    }
}

/// Checks one plaintext request head (no secret goes in plaintext: a
/// placeholder anywhere refuses it) and returns it rewritten, `extra`
/// after it.
pub(crate) fn plain_request(
    head: &[u8],
    extra: Vec<u8>,
    admitted: Admitted<'_>,
    secrets: &Secrets,
) -> Result<Vec<u8>, String> {
    if let Some(name) = secrets.found_in(head) {
        return Err(format!(
            "the placeholder of secret {name} in a plaintext request (a secret only goes over TLS)"
        ));
    }
    let mut out = forward_head(head, admitted, &Secrets::default())?;
    out.extend_from_slice(&extra);
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Arc;

    fn name(n: &str) -> Target {
        Target::Name(n.to_owned())
    }

    /// A real ClientHello of rustls' client for `server` (a name or an IP).
    fn hello(server: &str) -> Vec<u8> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        let server = rustls_pki_types::ServerName::try_from(server.to_owned()).unwrap();
        let mut conn = rustls::ClientConnection::new(Arc::new(config), server).unwrap();
        let mut out = Vec::new();
        conn.write_tls(&mut out).unwrap();
        out
    }

    async fn opening(bytes: &[u8], target: &Target, port: u16) -> Result<Vec<u8>, String> {
        let secrets = Secrets::new(vec![
            paddock_proto::SecretSpec::new(
                "API_KEY",
                paddock_proto::SecretValue::new("sk-1"),
                &["good.test"],
                None,
            )
            .unwrap(),
        ]);
        let mut reader = bytes;
        check(&mut reader, Admitted { target, port }, &secrets)
            .await
            .map_err(|r| r.why)
    }

    #[tokio::test]
    async fn a_client_hello_must_name_the_admitted_host() {
        let good = hello("good.test");
        assert_eq!(
            opening(&good, &name("good.test"), 443).await,
            Ok(good.clone())
        );
        assert_eq!(
            opening(&hello("evil.test"), &name("good.test"), 443).await,
            Err("the TLS server name evil.test is not good.test, which the connection was admitted for".into())
        );
        // rustls sends no SNI for an address: fine for an IP literal, not for a name
        let ip = Target::Ip("192.0.2.7".parse().unwrap());
        let bare = hello("192.0.2.7");
        assert_eq!(opening(&bare, &ip, 443).await, Ok(bare.clone()));
        assert!(
            opening(&bare, &name("good.test"), 443)
                .await
                .unwrap_err()
                .contains("without a server name")
        );
        assert!(opening(&hello("good.test"), &ip, 443).await.is_err());
        // split across reads it is read whole
        let mut reader = in_pieces(&good);
        let secrets = Secrets::default();
        let target = name("good.test");
        let admitted = Admitted {
            target: &target,
            port: 443,
        };
        assert_eq!(check(&mut reader, admitted, &secrets).await, Ok(good));
        let refused = check(
            &mut &b"GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n"[..],
            admitted,
            &secrets,
        )
        .await;
        assert!(refused.unwrap_err().http);
        // a TLS record that is no ClientHello is refused
        assert!(
            opening(&[0x16, 3, 1, 0, 4, 2, 0, 0, 0], &name("good.test"), 443)
                .await
                .is_err()
        );
    }

    /// A reader giving `bytes` 7 at a time.
    fn in_pieces(bytes: &[u8]) -> PieceReader {
        PieceReader(bytes.chunks(7).rev().map(<[u8]>::to_vec).collect())
    }

    struct PieceReader(Vec<Vec<u8>>);

    impl AsyncRead for PieceReader {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            if let Some(piece) = self.0.pop() {
                buf.put_slice(&piece);
            }
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn an_http_request_must_name_the_admitted_host_and_is_closed_after_one() {
        let good = name("good.test");
        let out = opening(
            b"GET /a HTTP/1.1\r\nHost: good.test\r\nConnection: keep-alive\r\n\r\nbody",
            &good,
            80,
        )
        .await
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET /a HTTP/1.1\r\nHost: good.test\r\nConnection: close\r\n\r\nbody"
        );
        let fronted = opening(b"GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n", &good, 80).await;
        assert!(
            fronted
                .unwrap_err()
                .contains("the Host header names evil.test, not good.test")
        );
        let absolute = opening(
            b"GET http://evil.test/ HTTP/1.1\r\nHost: good.test\r\n\r\n",
            &good,
            80,
        )
        .await;
        assert!(absolute.unwrap_err().contains("the URL names evil.test"));
        let placeholder = opening(
            b"GET / HTTP/1.1\r\nHost: good.test\r\nAuthorization: paddock-secret-placeholder-API_KEY\r\n\r\n",
            &good,
            80,
        )
        .await;
        assert!(placeholder.unwrap_err().contains("in a plaintext request"));
    }

    #[tokio::test]
    async fn other_protocols_pass_as_they_are() {
        let good = name("good.test");
        for bytes in [&b"SSH-2.0-OpenSSH_9.2\r\n"[..], b"\x00\x01binary", b"hello"] {
            assert_eq!(
                opening(bytes, &good, 22).await,
                Ok(bytes.to_vec()),
                "{bytes:?}"
            );
        }
    }
}
