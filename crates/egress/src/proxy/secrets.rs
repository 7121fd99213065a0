//! Which requests get a secret, and the one rewrite: pure, so the rule is
//! tested without TLS. The rule, clause by clause (one test each):
//!
//! - the request goes to the host the connection was admitted for: its
//!   Host header names that host (and that port, when it gives one), and a
//!   request target in absolute form names it too (it is forwarded in
//!   origin form); any other target form is refused;
//! - a secret's placeholder is swapped for its value only in the secret's
//!   header ([`SecretHeader`]) of a request to one of the secret's hosts;
//! - a placeholder anywhere else (another header, a header's name, the
//!   URL, Host, Origin, `X-Forwarded-*`, another host's secret) refuses
//!   the request, naming why; the body is checked as it streams
//!   ([`Scan`]);
//! - the secret's template is added when the program sent no header of
//!   its name.
//!
//! So the value only ever leaves in the configured header of a request to
//! the configured host: a server that echoes Host, Origin or the URL back
//! never saw it there, and a front end that routes by Host or URL routes
//! the request to the admitted host or it is never sent.

use std::pin::Pin;
use std::task::{Context, Poll};

use paddock_proto::{SECRET_SLOT, SecretHeader, SecretSpec, Target};
use tokio::io::{AsyncRead, ReadBuf};

/// The most headers a request head may have.
const MAX_HEADERS: usize = 64;
/// Hop-by-hop headers of the client leg, not forwarded.
const HOP_HEADERS: &[&str] = &["connection", "keep-alive", "proxy-connection", "upgrade"];

/// The secrets of one sandbox.
#[derive(Debug, Clone, Default)]
pub(crate) struct Secrets(Vec<SecretSpec>);

impl Secrets {
    pub(crate) fn new(secrets: Vec<SecretSpec>) -> Self {
        Self(secrets)
    }

    /// The secrets that may go to `target:port`.
    pub(crate) fn for_host(&self, target: &Target, port: u16) -> Vec<&SecretSpec> {
        self.0
            .iter()
            .filter(|s| {
                s.hosts.iter().any(|d| match d.port {
                    Some(_) => d.allows(target, port),
                    None => port == 443 && d.allows(target, port),
                })
            })
            .collect()
    }

    /// Every placeholder of the sandbox, with its secret's name.
    pub(crate) fn placeholders(&self) -> Vec<(String, Vec<u8>)> {
        self.0
            .iter()
            .map(|s| (s.name.clone(), s.placeholder().into_bytes()))
            .collect()
    }

    /// The name of the first secret whose placeholder `bytes` holds.
    pub(crate) fn found_in(&self, bytes: &[u8]) -> Option<&str> {
        self.0
            .iter()
            .find(|s| contains(bytes, s.placeholder().as_bytes()))
            .map(|s| s.name.as_str())
    }
}

/// The connection a request came on: the name (or IP literal) and port it
/// was admitted for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Admitted<'a> {
    pub(crate) target: &'a Target,
    pub(crate) port: u16,
}

/// Checks one request head of an intercepted connection against the rule
/// and returns it as forwarded (hop-by-hop headers dropped, the secrets'
/// value in their header, origin form, `Connection: close`), or why it is
/// refused.
pub(crate) fn forward_head(
    head: &[u8],
    admitted: Admitted<'_>,
    secrets: &Secrets,
) -> Result<Vec<u8>, String> {
    let mut parsed = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut parsed);
    if !matches!(request.parse(head), Ok(httparse::Status::Complete(_))) {
        return Err("not an HTTP/1 request head".to_owned());
    }
    let (Some(method), Some(uri)) = (request.method, request.path) else {
        return Err("not an HTTP/1 request head".to_owned());
    };
    if let Some(name) = secrets.found_in(uri.as_bytes()) {
        return Err(format!("the placeholder of secret {name} in the URL"));
    }
    let path = origin_form(uri, admitted)?;
    let mut hosts = request
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("host"));
    match (hosts.next(), hosts.next()) {
        (Some(host), None) => {
            if let Some(name) = secrets.found_in(host.value) {
                return Err(format!(
                    "the placeholder of secret {name} in the Host header"
                ));
            }
            check_host(host.value, admitted)?;
        }
        (None, _) => return Err("a request without a Host header".to_owned()),
        (Some(_), Some(_)) => return Err("a request with two Host headers".to_owned()),
    }
    let for_host = secrets.for_host(admitted.target, admitted.port);
    let mut headers: Vec<(String, Vec<u8>)> = Vec::with_capacity(request.headers.len() + 1);
    for h in request.headers.iter() {
        if let Some(name) = secrets.found_in(h.name.as_bytes()) {
            return Err(format!(
                "the placeholder of secret {name} in a header's name"
            ));
        }
        let mut value = h.value.to_vec();
        for secret in &for_host {
            if h.name.eq_ignore_ascii_case(&secret.header.name)
                && let Some(swapped) = swap(
                    &value,
                    secret.placeholder().as_bytes(),
                    secret.value.expose(),
                )
            {
                value = swapped;
            }
        }
        if let Some(name) = secrets.found_in(&value) {
            return Err(misplaced(name, h.name, admitted, &for_host));
        }
        if !HOP_HEADERS
            .iter()
            .any(|hop| h.name.eq_ignore_ascii_case(hop))
        {
            headers.push((h.name.to_owned(), value));
        }
    }
    for secret in &for_host {
        add_template(&mut headers, &secret.header, secret.value.expose());
    }
    let mut out = format!("{method} {path} HTTP/1.1\r\n").into_bytes();
    for (name, value) in headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(&value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(out)
}

/// Why a placeholder left in header `header` refuses the request.
fn misplaced(
    secret: &str,
    header: &str,
    admitted: Admitted<'_>,
    for_host: &[&SecretSpec],
) -> String {
    match for_host.iter().find(|s| s.name == secret) {
        Some(s) => format!(
            "the placeholder of secret {secret} in the {header} header (only its {} header carries it)",
            s.header.name
        ),
        None => format!(
            "the placeholder of secret {secret} in a request to {}:{}, not one of its hosts",
            admitted.target, admitted.port
        ),
    }
}

/// The request target in origin form: a path as is; an absolute URL only
/// when it names the admitted host (and port, when it gives one).
fn origin_form(uri: &str, admitted: Admitted<'_>) -> Result<String, String> {
    if uri.starts_with('/') || (uri == "*") {
        return Ok(uri.to_owned());
    }
    let rest = uri.split_once("://").and_then(|(scheme, rest)| {
        (scheme.eq_ignore_ascii_case("https") || scheme.eq_ignore_ascii_case("http"))
            .then_some(rest)
    });
    let Some(rest) = rest else {
        return Err("a request target that is neither a path nor an absolute URL".to_owned());
    };
    let (authority, path) = match rest.find(['/', '?', '#']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.contains('@') {
        return Err("an absolute URL with user information".to_owned());
    }
    check_authority(authority, admitted).map_err(|named| {
        format!(
            "the URL names {named}, not {}:{}, which the connection was admitted for",
            admitted.target, admitted.port
        )
    })?;
    Ok(if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    })
}

/// Checks a Host header's value against the admitted host and port.
pub(crate) fn check_host(value: &[u8], admitted: Admitted<'_>) -> Result<(), String> {
    let text = std::str::from_utf8(value).unwrap_or("").trim();
    check_authority(text, admitted).map_err(|named| {
        format!(
            "the Host header names {named}, not {}, which the connection was admitted for",
            admitted.target
        )
    })
}

/// `host[:port]` names the admitted host (and port when it gives one);
/// else Err(what it names, printable).
fn check_authority(authority: &str, admitted: Admitted<'_>) -> Result<(), String> {
    let shown = || {
        authority
            .chars()
            .filter(|c| !c.is_control())
            .take(100)
            .collect::<String>()
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') && (h.starts_with('[') || !h.contains(':')) => {
            (h, Some(p.parse::<u16>().map_err(|_| shown())?))
        }
        _ => (authority, None),
    };
    let same_host = Target::parse(host).is_ok_and(|t| &t == admitted.target);
    let same_port = port.is_none_or(|p| p == admitted.port);
    if same_host && same_port {
        Ok(())
    } else {
        Err(shown())
    }
}

fn add_template(headers: &mut Vec<(String, Vec<u8>)>, header: &SecretHeader, value: &str) {
    if let Some(template) = &header.template
        && !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(&header.name))
    {
        let filled = template.replace(SECRET_SLOT, value);
        headers.push((header.name.clone(), filled.into_bytes()));
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

fn swap(haystack: &[u8], needle: &[u8], value: &str) -> Option<Vec<u8>> {
    if !contains(haystack, needle) {
        return None;
    }
    let mut out = Vec::with_capacity(haystack.len() + value.len());
    let mut rest = haystack;
    while let Some(i) = rest.windows(needle.len()).position(|w| w == needle) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(value.as_bytes());
        rest = &rest[i + needle.len()..];
    }
    out.extend_from_slice(rest);
    Some(out)
}

/// A reader of what the sandbox sends after a request head (its body and
/// anything after it) that fails, before handing them on, at the first
/// bytes completing a placeholder of the sandbox's secrets; `found` then
/// names the secret. A placeholder split across reads is found too (the
/// last bytes of each read are kept).
pub(crate) struct Scan<R> {
    inner: R,
    needles: Vec<(String, Vec<u8>)>,
    tail: Vec<u8>,
    pub(crate) found: Option<String>,
}

impl<R> Scan<R> {
    pub(crate) fn new(inner: R, needles: Vec<(String, Vec<u8>)>) -> Self {
        Self {
            inner,
            needles,
            tail: Vec::new(),
            found: None,
        }
    }

    /// Checks `bytes` (the next ones of the stream); remembers its tail.
    pub(crate) fn check(&mut self, bytes: &[u8]) -> Option<String> {
        let longest = self.needles.iter().map(|(_, n)| n.len()).max().unwrap_or(0);
        let mut window = std::mem::take(&mut self.tail);
        window.extend_from_slice(bytes);
        let hit = self
            .needles
            .iter()
            .find(|(_, n)| contains(&window, n))
            .map(|(name, _)| name.clone());
        let keep = longest.saturating_sub(1).min(window.len());
        self.tail = window.split_off(window.len() - keep);
        if hit.is_some() {
            self.found.clone_from(&hit);
        }
        hit
    }

    pub(crate) fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Scan<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.found.is_some() {
            return Poll::Ready(Err(std::io::Error::other(
                "a placeholder in the request body",
            )));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let new = buf.filled()[before..].to_vec();
                if this.check(&new).is_some() {
                    buf.set_filled(before);
                    return Poll::Ready(Err(std::io::Error::other(
                        "a placeholder in the request body",
                    )));
                }
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

impl<R: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Scan<R> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use paddock_proto::SecretValue;

    const P: &str = "paddock-secret-placeholder-API_KEY";

    fn secret(header: Option<&str>) -> SecretSpec {
        SecretSpec::new(
            "API_KEY",
            SecretValue::new("sk-123"),
            &["api.test", "*.pay.test:8443"],
            header,
        )
        .unwrap()
    }

    fn api() -> Target {
        Target::Name("api.test".into())
    }

    /// The forwarded head of `head` to api.test:443, or why it is refused.
    fn forward(head: &str, secrets: &[SecretSpec]) -> Result<String, String> {
        let target = api();
        let admitted = Admitted {
            target: &target,
            port: 443,
        };
        forward_head(head.as_bytes(), admitted, &Secrets::new(secrets.to_vec()))
            .map(|out| String::from_utf8(out).unwrap())
    }

    #[test]
    fn only_the_secret_hosts_on_their_ports_get_it() {
        let secrets = Secrets::new(vec![secret(None)]);
        let name = |n: &str| Target::Name(n.to_owned());
        let gets = |host: &str, port| !secrets.for_host(&name(host), port).is_empty();
        assert!(gets("api.test", 443));
        assert!(!gets("api.test", 80));
        assert!(!gets("other.test", 443));
        assert!(gets("a.pay.test", 8443));
        assert!(!gets("a.pay.test", 443));
    }

    #[test]
    fn the_value_goes_in_the_configured_header_only_and_the_template_is_added() {
        let out = forward(
            &format!(
                "GET /v1/x HTTP/1.1\r\nHost: api.test\r\nConnection: keep-alive\r\nAuthorization: Bearer {P}\r\n\r\n"
            ),
            &[secret(None)],
        );
        assert_eq!(
            out.unwrap(),
            "GET /v1/x HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer sk-123\r\nConnection: close\r\n\r\n"
        );
        let named = forward(
            &format!("GET / HTTP/1.1\r\nhost: API.test:443\r\nx-api-key: {P}\r\n\r\n"),
            &[secret(Some("X-Api-Key"))],
        );
        assert_eq!(
            named.unwrap(),
            "GET / HTTP/1.1\r\nhost: API.test:443\r\nx-api-key: sk-123\r\nConnection: close\r\n\r\n"
        );
        let templated = forward(
            "GET / HTTP/1.1\r\nHost: api.test\r\nAccept: */*\r\n\r\n",
            &[secret(Some("Authorization: Bearer {{secret}}"))],
        );
        assert_eq!(
            templated.unwrap(),
            "GET / HTTP/1.1\r\nHost: api.test\r\nAccept: */*\r\nAuthorization: Bearer sk-123\r\nConnection: close\r\n\r\n"
        );
        // the program's own header of that name wins over the template
        let sent = forward(
            &format!("GET / HTTP/1.1\r\nHost: api.test\r\nauthorization: Token {P}\r\n\r\n"),
            &[secret(Some("Authorization: Bearer {{secret}}"))],
        );
        assert_eq!(
            sent.unwrap(),
            "GET / HTTP/1.1\r\nHost: api.test\r\nauthorization: Token sk-123\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn a_placeholder_anywhere_else_refuses_the_request() {
        let s = [secret(None)];
        for (head, why) in [
            (
                format!("GET / HTTP/1.1\r\nHost: {P}\r\n\r\n"),
                "in the Host header",
            ),
            (
                format!("GET / HTTP/1.1\r\nHost: {P}.evil.test\r\n\r\n"),
                "in the Host header",
            ),
            (
                format!("GET / HTTP/1.1\r\nHost: api.test\r\nOrigin: https://{P}\r\n\r\n"),
                "in the Origin header (only its Authorization header carries it)",
            ),
            (
                format!("GET / HTTP/1.1\r\nHost: api.test\r\nX-Forwarded-Host: {P}\r\n\r\n"),
                "in the X-Forwarded-Host header",
            ),
            (
                format!("GET / HTTP/1.1\r\nHost: api.test\r\nConnection: {P}\r\n\r\n"),
                "in the Connection header",
            ),
            (
                format!("GET / HTTP/1.1\r\nHost: api.test\r\n{P}: 1\r\n\r\n"),
                "in a header's name",
            ),
            (
                format!("GET /?k={P} HTTP/1.1\r\nHost: api.test\r\n\r\n"),
                "in the URL",
            ),
            (
                format!("GET https://api.test/{P} HTTP/1.1\r\nHost: api.test\r\n\r\n"),
                "in the URL",
            ),
        ] {
            let refused = forward(&head, &s).unwrap_err();
            assert!(
                refused.starts_with("the placeholder of secret API_KEY"),
                "{refused}"
            );
            assert!(refused.contains(why), "{head:?}: {refused}");
        }
        // another host's secret is refused, not swapped
        let other =
            SecretSpec::new("OTHER", SecretValue::new("sk-other"), &["other.test"], None).unwrap();
        let refused = forward(
            "GET / HTTP/1.1\r\nHost: api.test\r\nAuthorization: paddock-secret-placeholder-OTHER\r\n\r\n",
            &[secret(None), other],
        )
        .unwrap_err();
        assert_eq!(
            refused,
            "the placeholder of secret OTHER in a request to api.test:443, not one of its hosts"
        );
    }

    #[test]
    fn the_request_names_the_admitted_host_or_is_refused() {
        let s = [secret(None)];
        let auth = format!("Authorization: Bearer {P}\r\n");
        for (head, why) in [
            (
                format!("GET / HTTP/1.1\r\nHost: evil.test\r\n{auth}\r\n"),
                "the Host header names evil.test, not api.test",
            ),
            (
                format!("GET / HTTP/1.1\r\nHost: api.test:8443\r\n{auth}\r\n"),
                "the Host header names api.test:8443",
            ),
            (
                format!("GET / HTTP/1.1\r\n{auth}\r\n"),
                "a request without a Host header",
            ),
            (
                format!("GET / HTTP/1.1\r\nHost: api.test\r\nHost: evil.test\r\n{auth}\r\n"),
                "two Host headers",
            ),
            (
                format!("GET https://evil.test/x HTTP/1.1\r\nHost: api.test\r\n{auth}\r\n"),
                "the URL names evil.test, not api.test:443",
            ),
            (
                format!("GET https://api.test@evil.test/ HTTP/1.1\r\nHost: api.test\r\n{auth}\r\n"),
                "user information",
            ),
            (
                format!("CONNECT evil.test:443 HTTP/1.1\r\nHost: api.test\r\n{auth}\r\n"),
                "neither a path nor an absolute URL",
            ),
        ] {
            let refused = forward(&head, &s).unwrap_err();
            assert!(refused.contains(why), "{head:?}: {refused}");
        }
        // an absolute URL naming the admitted host goes on in origin form
        let out = forward(
            &format!("GET HTTPS://api.test:443?q=1 HTTP/1.1\r\nHost: api.test\r\n{auth}\r\n"),
            &s,
        )
        .unwrap();
        assert!(out.starts_with("GET /?q=1 HTTP/1.1\r\n"), "{out}");
    }

    #[test]
    fn the_body_scan_finds_a_placeholder_split_across_reads() {
        let mut scan = Scan::new((), Secrets::new(vec![secret(None)]).placeholders());
        assert_eq!(scan.check(b"{\"a\": \"paddock-secret-"), None);
        assert_eq!(scan.check(b"placeholder-API_"), None);
        assert_eq!(scan.check(b"KEY\"}").as_deref(), Some("API_KEY"));
        assert_eq!(scan.found.as_deref(), Some("API_KEY"));
        let mut clean = Scan::new((), Secrets::new(vec![secret(None)]).placeholders());
        for chunk in [&b"paddock-secret-placeholder"[..], b"-API", b"-KEY"] {
            assert_eq!(clean.check(chunk), None);
        }
    }
}
