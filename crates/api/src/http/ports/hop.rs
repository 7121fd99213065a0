//! What a proxy must not pass on (RFC 9110 §7.6.1): the hop-by-hop headers
//! and every header the `Connection` header names; plus the caller's
//! credentials, which are Paddock's and never the sandbox's. An upgrade
//! (WebSocket) keeps its `Connection: upgrade` and `Upgrade` headers, the
//! one hop-by-hop exchange a proxy passes through.

use axum::http::header::{AUTHORIZATION, CONNECTION, HeaderMap, HeaderName, HeaderValue, UPGRADE};

/// The hop-by-hop headers every proxy drops.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
];

/// Whether the message asks to switch protocols (`Connection: upgrade`
/// with an `Upgrade` header).
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(UPGRADE)
        && headers
            .get_all(CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|token| token.trim().eq_ignore_ascii_case("upgrade"))
}

/// Removes what must not cross this hop; keeps an upgrade's two headers
/// when the message is one.
pub fn strip(headers: &mut HeaderMap) {
    let upgrade = is_upgrade(headers)
        .then(|| headers.get(UPGRADE).cloned())
        .flatten();
    let named: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|token| HeaderName::from_bytes(token.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
    headers.remove(UPGRADE);
    if let Some(protocol) = upgrade {
        headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
        headers.insert(UPGRADE, protocol);
    }
}

/// [`strip`] for a request into a sandbox: the caller's bearer token goes
/// no further than Paddock.
pub fn strip_request(headers: &mut HeaderMap) {
    strip(headers);
    headers.remove(AUTHORIZATION);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        headers
    }

    fn names(headers: &HeaderMap) -> Vec<&str> {
        let mut names: Vec<&str> = headers.keys().map(HeaderName::as_str).collect();
        names.sort_unstable();
        names
    }

    #[test]
    fn hop_by_hop_headers_and_those_connection_names_go() {
        let mut headers = map(&[
            ("connection", "keep-alive, x-secret-hop"),
            ("keep-alive", "timeout=5"),
            ("x-secret-hop", "1"),
            ("te", "trailers"),
            ("transfer-encoding", "chunked"),
            ("proxy-authorization", "Basic x"),
            ("authorization", "Bearer paddock-token"),
            ("accept", "text/html"),
            ("cookie", "a=b"),
        ]);
        strip_request(&mut headers);
        assert_eq!(names(&headers), ["accept", "cookie"]);
    }

    #[test]
    fn an_upgrade_keeps_its_two_headers_and_nothing_else_hop_by_hop() {
        let mut headers = map(&[
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("authorization", "Bearer paddock-token"),
        ]);
        assert!(is_upgrade(&headers));
        strip_request(&mut headers);
        assert_eq!(
            names(&headers),
            ["connection", "sec-websocket-key", "upgrade"]
        );
        assert_eq!(headers[CONNECTION], "upgrade");
        assert_eq!(headers[UPGRADE], "websocket");
    }

    #[test]
    fn an_upgrade_header_without_connection_upgrade_is_dropped() {
        let mut headers = map(&[("upgrade", "websocket")]);
        assert!(!is_upgrade(&headers));
        strip(&mut headers);
        assert!(headers.is_empty());
    }
}
