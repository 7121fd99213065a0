//! The explicit proxy (HTTP_PROXY / HTTPS_PROXY in the sandbox): `CONNECT
//! host:port` for TLS and any TCP, absolute-form `GET http://...` for plain
//! HTTP (one request per connection). A refusal is an HTTP 403 whose body
//! says why, never a hang.

use std::time::{Duration, Instant};

use paddock_proto::Target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::proxy::connect::{Outcome, Refusal, Shared};
use crate::proxy::live::Cut;
use crate::proxy::opening::{plain_request, relay};
use crate::proxy::relay::splice;
use crate::proxy::secrets::Admitted;

/// The most a request head may take, and how long it may take to arrive.
const MAX_HEAD: usize = 16 * 1024;
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_HEADERS: usize = 64;

pub(crate) async fn serve(ctx: Shared, mut client: TcpStream) {
    let started = Instant::now();
    let (head, extra) = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await {
        Ok(Some(read)) => read,
        Ok(None) => {
            let _ = respond(&mut client, 400, "a request head of at most 16 KiB").await;
            return;
        }
        Err(_) => {
            let _ = respond(&mut client, 408, "no request head within 10s").await;
            return;
        }
    };
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    if !matches!(request.parse(&head), Ok(httparse::Status::Complete(_))) {
        let _ = respond(&mut client, 400, "not an HTTP/1 request").await;
        return;
    }
    let (Some(method), Some(uri)) = (request.method, request.path) else {
        let _ = respond(&mut client, 400, "not an HTTP/1 request").await;
        return;
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = authority(uri, None) else {
            let _ = respond(&mut client, 400, "CONNECT needs host:port").await;
            return;
        };
        tunnel(ctx, client, host, port, extra, started).await;
        return;
    }
    let Some((host, port, _)) = absolute_http(uri) else {
        let _ = respond(
            &mut client,
            400,
            "only absolute http:// URLs are proxied (use CONNECT for https)",
        )
        .await;
        return;
    };
    let outcome = Outcome {
        host: host.to_string(),
        port,
        via: "http",
        started,
    };
    let admitted = Admitted {
        target: &host,
        port,
    };
    let first = match plain_request(&head, extra, admitted, &ctx.secrets) {
        Ok(first) => first,
        Err(why) => {
            let refusal = Refusal::Denied(why);
            let _ = refuse(&mut client, &refusal).await;
            outcome.denied(&ctx, &refusal);
            return;
        }
    };
    plain(ctx, client, outcome, host, port, first).await;
}

async fn tunnel(
    ctx: Shared,
    mut client: TcpStream,
    host: Target,
    port: u16,
    extra: Vec<u8>,
    started: Instant,
) {
    let outcome = Outcome {
        host: host.to_string(),
        port,
        via: "connect",
        started,
    };
    match ctx.open(&host, port).await {
        Ok((mut upstream, mut registration)) => {
            let established = client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await;
            if established.is_err() {
                outcome.done(&ctx, 0, 0);
                return;
            }
            let admitted = Admitted {
                target: &host,
                port,
            };
            let intercepted = !ctx.secrets.for_host(&host, port).is_empty();
            if let (Some(interceptor), true) = (&ctx.interceptor, intercepted) {
                // a TLS client waits for the 200 before it says anything
                if !extra.is_empty() {
                    outcome.denied(
                        &ctx,
                        &Refusal::Denied(
                            "bytes before the TLS handshake to a secret's host".to_owned(),
                        ),
                    );
                    return;
                }
                let serving = interceptor.serve(client, upstream, admitted, &ctx.secrets);
                match registration.until_cut(serving).await {
                    Ok(served) => outcome.served(&ctx, served),
                    Err(Cut) => outcome.cut(&ctx),
                }
                return;
            }
            let relayed = registration
                .until_cut(relay(
                    &mut client,
                    &mut upstream,
                    admitted,
                    &ctx.secrets,
                    extra,
                ))
                .await;
            match relayed {
                Ok(Ok((out, inn))) => outcome.done(&ctx, out, inn),
                Ok(Err(refused)) => {
                    let refusal = Refusal::Denied(refused.why);
                    if refused.http {
                        let _ = refuse(&mut client, &refusal).await;
                    }
                    outcome.denied(&ctx, &refusal);
                }
                Err(Cut) => outcome.cut(&ctx),
            }
        }
        Err(refusal) => {
            let _ = refuse(&mut client, &refusal).await;
            outcome.denied(&ctx, &refusal);
        }
    }
}

async fn plain(
    ctx: Shared,
    mut client: TcpStream,
    outcome: Outcome<'_>,
    host: Target,
    port: u16,
    first: Vec<u8>,
) {
    match ctx.open(&host, port).await {
        Ok((mut upstream, mut registration)) => {
            if upstream.write_all(&first).await.is_err() {
                outcome.done(&ctx, 0, 0);
                return;
            }
            match registration
                .until_cut(splice(&mut client, &mut upstream))
                .await
            {
                Ok((out, inn)) => outcome.done(&ctx, out + first.len() as u64, inn),
                Err(Cut) => outcome.cut(&ctx),
            }
        }
        Err(refusal) => {
            let _ = refuse(&mut client, &refusal).await;
            outcome.denied(&ctx, &refusal);
        }
    }
}

pub(crate) async fn refuse(client: &mut TcpStream, refusal: &Refusal) -> std::io::Result<()> {
    match refusal {
        Refusal::Denied(reason) => respond(client, 403, reason).await,
        Refusal::Unreachable(reason) => respond(client, 502, reason).await,
    }
}

async fn respond(client: &mut TcpStream, status: u16, reason: &str) -> std::io::Result<()> {
    let phrase = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        408 => "Request Timeout",
        _ => "Bad Gateway",
    };
    let body = format!("paddock egress: {reason}\n");
    let response = format!(
        "HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         X-Paddock-Egress: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        if status == 403 { "denied" } else { "error" },
        body.len()
    );
    client.write_all(response.as_bytes()).await?;
    client.shutdown().await
}

/// Reads up to the end of the head; returns (head, bytes read past it).
async fn read_head(client: &mut TcpStream) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        let searched_from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf[searched_from..]
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|p| searched_from + p + 4)
        {
            let extra = buf.split_off(end);
            return Some((buf, extra));
        }
        if buf.len() > MAX_HEAD {
            return None;
        }
    }
}

/// `host:port` (or `[v6]:port`); `default_port` when the port is left out.
fn authority(raw: &str, default_port: Option<u16>) -> Option<(Target, u16)> {
    let (host, port) = match raw.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') && (h.starts_with('[') || !h.contains(':')) => {
            (h, p.parse::<u16>().ok().filter(|p| *p != 0)?)
        }
        _ => (raw, default_port?),
    };
    Some((Target::parse(host).ok()?, port))
}

/// `http://authority/path` -> (host, port, origin-form path).
fn absolute_http(uri: &str) -> Option<(Target, u16, String)> {
    let rest = uri
        .strip_prefix("http://")
        .or_else(|| uri.strip_prefix("HTTP://"))?;
    let (auth, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], rest[i..].to_owned()),
        None => (rest, "/".to_owned()),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path
    };
    if auth.contains('@') {
        return None;
    }
    let (host, port) = authority(auth, Some(80))?;
    Some((host, port, path))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn authorities_parse_names_literals_and_ports() {
        assert_eq!(
            authority("Example.com:443", None),
            Some((Target::Name("example.com".into()), 443))
        );
        assert_eq!(
            authority("[2001:db8::1]:8443", None),
            Some((Target::Ip("2001:db8::1".parse().unwrap()), 8443))
        );
        assert_eq!(authority("example.com", None), None);
        assert_eq!(authority("example.com:0", None), None);
        assert_eq!(
            authority("example.com", Some(80)),
            Some((Target::Name("example.com".into()), 80))
        );
    }

    #[test]
    fn absolute_urls_become_origin_form() {
        assert_eq!(
            absolute_http("http://a.test:8080/x?y=1"),
            Some((Target::Name("a.test".into()), 8080, "/x?y=1".into()))
        );
        assert_eq!(
            absolute_http("http://a.test"),
            Some((Target::Name("a.test".into()), 80, "/".into()))
        );
        assert_eq!(absolute_http("https://a.test/"), None);
        assert_eq!(absolute_http("/relative"), None);
        assert_eq!(absolute_http("http://user@a.test/"), None);
    }
}
