//! Host-based port routing: with a ports domain set (`[ports] domain`),
//! a request for host `{P}-{sandbox id}.{domain}` goes to
//! port P of that sandbox whatever its path, so an app that expects to sit
//! at `/` (absolute links, its own `/api`) works, on its own origin. Off
//! unless the domain is set; the operator points a wildcard DNS name (and
//! TLS) at the server.

use axum::http::HeaderMap;
use axum::http::header::HOST;

/// `[ports]` of the config: how a sandbox's ports are reached through the
/// server besides the path route.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PortsSettings {
    /// Host-based routing: `{P}-{sandbox id}.{domain}` reaches port P of
    /// the sandbox (default: off).
    pub domain: Option<PortsDomain>,
}

/// A domain under which `{P}-{id}.` names a sandbox's port.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct PortsDomain(String);

impl TryFrom<String> for PortsDomain {
    type Error = InvalidPortsDomain;

    fn try_from(domain: String) -> Result<Self, Self::Error> {
        Self::parse(&domain)
    }
}

/// Why a ports domain was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{domain:?}: expected a DNS name such as \"preview.example.com\" (letters, digits, '-' and '.', no leading or trailing dot, no port)"
)]
pub struct InvalidPortsDomain {
    pub domain: String,
}

impl PortsDomain {
    pub fn parse(domain: &str) -> Result<Self, InvalidPortsDomain> {
        let lower = domain.to_ascii_lowercase();
        let labels_ok = !lower.is_empty()
            && lower.len() <= 253
            && lower.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && !label.starts_with('-')
                    && !label.ends_with('-')
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        if labels_ok {
            Ok(Self(lower))
        } else {
            Err(InvalidPortsDomain {
                domain: domain.to_owned(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The (port, sandbox id) a request's `Host` names under this domain,
    /// both unchecked; None for any other host.
    pub fn route<'a>(&self, headers: &'a HeaderMap) -> Option<(&'a str, &'a str)> {
        let host = headers.get(HOST)?.to_str().ok()?;
        // A port on the host (`:8443`) is the server's own, not the sandbox's.
        let name = host.rsplit_once(':').map_or(host, |(name, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                name
            } else {
                host
            }
        });
        let name = name.strip_suffix('.').unwrap_or(name);
        let split = name.len().checked_sub(self.0.len() + 1)?;
        let (label, suffix) = name.split_at(split);
        if !suffix[1..].eq_ignore_ascii_case(&self.0) || !suffix.starts_with('.') {
            return None;
        }
        let (port, id) = label.split_once('-')?;
        (!port.is_empty() && !id.is_empty() && !label.contains('.')).then_some((port, id))
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn host(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn a_port_and_sandbox_are_read_off_the_host() {
        let domain = PortsDomain::parse("Preview.Example.com").unwrap();
        assert_eq!(domain.as_str(), "preview.example.com");
        let cases = [
            (
                "8000-sb-0123.preview.example.com",
                Some(("8000", "sb-0123")),
            ),
            (
                "8000-sb-0123.PREVIEW.example.com:8443",
                Some(("8000", "sb-0123")),
            ),
            ("3000-my_box.preview.example.com.", Some(("3000", "my_box"))),
            ("preview.example.com", None),
            ("8000-sb.other.example.com", None),
            ("8000-sb.xpreview.example.com", None),
            ("8000.preview.example.com", None),
            ("a.8000-sb.preview.example.com", None),
            ("-sb.preview.example.com", None),
        ];
        for (value, expected) in cases {
            assert_eq!(domain.route(&host(value)), expected, "{value}");
        }
        assert_eq!(domain.route(&HeaderMap::new()), None);
    }

    #[test]
    fn a_domain_must_be_a_dns_name() {
        for bad in [
            "",
            ".example.com",
            "example.com.",
            "exa mple.com",
            "example.com:80",
            "-a.com",
        ] {
            assert!(PortsDomain::parse(bad).is_err(), "{bad}");
        }
    }
}
