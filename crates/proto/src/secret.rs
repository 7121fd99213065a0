//! Secrets injected at egress: a sandbox sees only a placeholder in its
//! environment; the egress proxy terminates TLS for the secret's hosts
//! (with the sandbox's own CA, which the sandbox trusts) and swaps the
//! placeholder for the value in the secret's one header ([`SecretHeader`])
//! of requests to those hosts only, then forwards over verified TLS; a
//! request with the placeholder anywhere else is refused. A value is never serialized (no `Serialize`, a redacted
//! `Debug`), so it cannot reach the store, an event, a log line or a
//! snapshot.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::network::{Destination, InvalidNetworkPolicy, MAX_DESTINATIONS, NetworkPolicy};

/// Most secrets of one sandbox.
pub const MAX_SECRETS: usize = 32;
/// The part of a header template the value replaces.
pub const SECRET_SLOT: &str = "{{secret}}";

/// A secret's value: never printed, never serialized.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself, for the proxy's header rewrite only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretValue(<redacted>)")
    }
}

/// One secret of a sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretSpec {
    /// The environment variable holding the placeholder (`[A-Z_][A-Z0-9_]*`).
    pub name: String,
    pub value: SecretValue,
    /// Only requests to these hosts get the value (a port-less destination
    /// is HTTPS on 443).
    pub hosts: Vec<Destination>,
    /// The one header of those requests the value may go in.
    pub header: SecretHeader,
}

/// The header a secret's value goes in: the proxy swaps the placeholder
/// for the value in this header only, and refuses a request that carries
/// the placeholder anywhere else. Given as `Name` (the placeholder is
/// swapped where the program puts it in that header) or `Name: text with
/// {{secret}}` (a template, also added when the program sent no header of
/// that name); none given is [`DEFAULT_SECRET_HEADER`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretHeader {
    pub name: String,
    /// `text with {{secret}}`, added when the program sent no `name` header.
    pub template: Option<String>,
}

/// The header of a secret that names none.
pub const DEFAULT_SECRET_HEADER: &str = "Authorization";

impl Default for SecretHeader {
    fn default() -> Self {
        Self {
            name: DEFAULT_SECRET_HEADER.to_owned(),
            template: None,
        }
    }
}

impl fmt::Display for SecretHeader {
    /// The form it is given in (`Name` or `Name: template`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.template {
            Some(template) => write!(f, "{}: {template}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidSecret {
    #[error("secret {0:?}: the name must be an environment variable name ([A-Z_][A-Z0-9_]*)")]
    BadName(String),
    #[error("secret {name}: no host it may go to")]
    NoHosts { name: String },
    #[error("secret {name}: at most {MAX_DESTINATIONS} hosts")]
    TooManyHosts { name: String },
    #[error("secret {name}: host {source}")]
    BadHost {
        name: String,
        #[source]
        source: InvalidNetworkPolicy,
    },
    #[error(
        "secret {name}: header {header:?}: expected a header name or `Name: text with {SECRET_SLOT}`"
    )]
    BadHeader { name: String, header: String },
    #[error("secret {name}: empty value")]
    EmptyValue { name: String },
    #[error("secret {0:?}: expected NAME@HOST[,HOST...][=HEADER: ...{SECRET_SLOT}...]")]
    BadForm(String),
    #[error("at most {MAX_SECRETS} secrets")]
    TooMany,
    #[error(
        "network none: a secret reaches only its hosts, through the egress proxy; \
         ask for a network that allows them"
    )]
    NoEgress,
}

/// Whether `count` secrets can be used with `network`: only the egress
/// proxy puts a secret's value in, and network `none` has no proxy, so
/// secrets with it are refused. The one rule the API
/// (`SecretCatalog::resolve`) and the CLI (`paddock run`, `paddock sandbox
/// run|create`) both apply.
pub fn check_secrets_network(count: usize, network: &NetworkPolicy) -> Result<(), InvalidSecret> {
    if count > 0 && !network.has_egress() {
        return Err(InvalidSecret::NoEgress);
    }
    Ok(())
}

fn valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
        && bytes.all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// `Name` or `Name: value with {{secret}}` -> the header.
pub fn parse_header_template(raw: &str) -> Option<SecretHeader> {
    let (name, value) = match raw.split_once(':') {
        Some((name, value)) => (name.trim(), Some(value.trim())),
        None => (raw.trim(), None),
    };
    let token_ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let value_ok = value.is_none_or(|v| v.contains(SECRET_SLOT) && !v.contains(['\r', '\n']));
    (token_ok && value_ok).then(|| SecretHeader {
        name: name.to_owned(),
        template: value.map(str::to_owned),
    })
}

impl SecretSpec {
    /// A secret checked: its name, hosts and header template.
    pub fn new(
        name: &str,
        value: SecretValue,
        hosts: &[&str],
        header: Option<&str>,
    ) -> Result<Self, InvalidSecret> {
        if !valid_name(name) {
            return Err(InvalidSecret::BadName(name.to_owned()));
        }
        if hosts.len() > MAX_DESTINATIONS {
            return Err(InvalidSecret::TooManyHosts {
                name: name.to_owned(),
            });
        }
        if value.expose().is_empty() || value.expose().contains(['\r', '\n']) {
            return Err(InvalidSecret::EmptyValue {
                name: name.to_owned(),
            });
        }
        let hosts: Vec<Destination> = hosts
            .iter()
            .map(|h| h.trim())
            .filter(|h| !h.is_empty())
            .map(|h| {
                h.parse().map_err(|source| InvalidSecret::BadHost {
                    name: name.to_owned(),
                    source,
                })
            })
            .collect::<Result<_, _>>()?;
        if hosts.is_empty() {
            return Err(InvalidSecret::NoHosts {
                name: name.to_owned(),
            });
        }
        let header = header
            .map(|raw| {
                parse_header_template(raw).ok_or_else(|| InvalidSecret::BadHeader {
                    name: name.to_owned(),
                    header: raw.to_owned(),
                })
            })
            .transpose()?
            .unwrap_or_default();
        Ok(Self {
            name: name.to_owned(),
            value,
            hosts,
            header,
        })
    }

    /// What the sandbox's environment holds instead of the value.
    pub fn placeholder(&self) -> String {
        format!("paddock-secret-placeholder-{}", self.name)
    }

    /// What may be shown of it: its name and hosts.
    pub fn notice(&self) -> SecretNotice {
        SecretNotice {
            name: self.name.clone(),
            hosts: self.hosts.clone(),
        }
    }
}

/// What is shown of a secret (in `run.started`, a sandbox's enforcement
/// report): its name and the hosts it goes to, never its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SecretNotice {
    /// The environment variable holding the placeholder.
    pub name: String,
    pub hosts: Vec<Destination>,
}

/// The command line's form, `NAME@HOST[,HOST...][=HEADER]`, its value
/// given apart (from the caller's environment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretRequest {
    pub name: String,
    pub hosts: Vec<String>,
    pub header: Option<String>,
}

impl FromStr for SecretRequest {
    type Err = InvalidSecret;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        let (name, rest) = raw
            .split_once('@')
            .ok_or_else(|| InvalidSecret::BadForm(raw.to_owned()))?;
        let (hosts, header) = match rest.split_once('=') {
            Some((hosts, header)) => (hosts, Some(header.to_owned())),
            None => (rest, None),
        };
        Ok(Self {
            name: name.trim().to_owned(),
            hosts: hosts.split(',').map(|h| h.trim().to_owned()).collect(),
            header,
        })
    }
}

impl SecretRequest {
    pub fn with_value(&self, value: SecretValue) -> Result<SecretSpec, InvalidSecret> {
        let hosts: Vec<&str> = self.hosts.iter().map(String::as_str).collect();
        SecretSpec::new(&self.name, value, &hosts, self.header.as_deref())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_value_is_never_printed() {
        let s = SecretSpec::new(
            "API_KEY",
            SecretValue::new("sk-live-123"),
            &["api.test"],
            Some("Authorization: Bearer {{secret}}"),
        )
        .unwrap();
        let shown = format!("{s:?}");
        assert!(!shown.contains("sk-live-123"), "{shown}");
        let notice = serde_json::to_string(&s.notice()).unwrap();
        assert_eq!(notice, r#"{"name":"API_KEY","hosts":["api.test"]}"#);
        assert_eq!(s.placeholder(), "paddock-secret-placeholder-API_KEY");
        assert_eq!(
            s.header,
            SecretHeader {
                name: "Authorization".into(),
                template: Some("Bearer {{secret}}".into())
            }
        );
    }

    #[test]
    fn a_header_is_a_name_a_template_or_authorization() {
        let header = |h: Option<&str>| {
            SecretSpec::new("K", SecretValue::new("x"), &["a.test"], h)
                .unwrap()
                .header
        };
        assert_eq!(header(None), SecretHeader::default());
        assert_eq!(header(None).name, "Authorization");
        let named = header(Some("X-Api-Key"));
        assert_eq!((named.name.as_str(), named.template), ("X-Api-Key", None));
        let templated = header(Some("Authorization: Bearer {{secret}}"));
        assert_eq!(templated.to_string(), "Authorization: Bearer {{secret}}");
        assert_eq!(header(Some(" X-Key ")).to_string(), "X-Key");
        assert!(SecretSpec::new("K", SecretValue::new("x"), &["a.test"], Some("X Key")).is_err());
    }

    #[test]
    fn bad_secrets_are_refused() {
        let v = || SecretValue::new("x");
        assert!(SecretSpec::new("api-key", v(), &["a.test"], None).is_err());
        assert!(SecretSpec::new("K", v(), &[], None).is_err());
        assert!(SecretSpec::new("K", v(), &["a..test"], None).is_err());
        assert!(SecretSpec::new("K", v(), &["a.test"], Some("Authorization Bearer")).is_err());
        assert!(SecretSpec::new("K", v(), &["a.test"], Some("")).is_err());
        assert!(SecretSpec::new("K", v(), &["a.test"], Some("X: no slot")).is_err());
        assert!(SecretSpec::new("K", SecretValue::new("a\r\nb"), &["a.test"], None).is_err());
        let many: Vec<String> = (0..=MAX_DESTINATIONS)
            .map(|i| format!("h{i}.test"))
            .collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(
            SecretSpec::new("K", v(), &many, None),
            Err(InvalidSecret::TooManyHosts { name: "K".into() })
        );
    }

    #[test]
    fn the_command_line_form_parses() {
        let r: SecretRequest = "API_KEY@api.test,*.api.test=Authorization: Bearer {{secret}}"
            .parse()
            .unwrap();
        assert_eq!(r.name, "API_KEY");
        assert_eq!(r.hosts, ["api.test", "*.api.test"]);
        assert_eq!(
            r.header.as_deref(),
            Some("Authorization: Bearer {{secret}}")
        );
        assert!("API_KEY".parse::<SecretRequest>().is_err());
    }
}
