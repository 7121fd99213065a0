//! Which requests get a secret, and the header rewrite: pure, so the rule
//! is tested without TLS. A request to a secret's host has every
//! placeholder in its header values swapped for the value, and the
//! secret's header template added when the program sent no header of that
//! name. The body is never touched, and nothing else is.

use paddock_proto::{SECRET_SLOT, SecretSpec, Target};

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
}

/// One header of a request head.
pub(crate) type Header = (String, Vec<u8>);

/// Swaps placeholders and adds templates for `secrets` in `headers`.
pub(crate) fn rewrite(headers: &mut Vec<Header>, secrets: &[&SecretSpec]) {
    for secret in secrets {
        let placeholder = secret.placeholder();
        for (_, value) in headers.iter_mut() {
            if let Some(swapped) = swap(value, placeholder.as_bytes(), secret.value.expose()) {
                *value = swapped;
            }
        }
        if let Some((name, template)) = &secret.header
            && !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            let value = template.replace(SECRET_SLOT, secret.value.expose());
            headers.push((name.clone(), value.into_bytes()));
        }
    }
}

fn swap(haystack: &[u8], needle: &[u8], value: &str) -> Option<Vec<u8>> {
    if needle.is_empty() || !haystack.windows(needle.len()).any(|w| w == needle) {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use paddock_proto::SecretValue;

    fn secret(header: Option<&str>) -> SecretSpec {
        SecretSpec::new(
            "API_KEY",
            SecretValue::new("sk-123"),
            &["api.test", "*.pay.test:8443"],
            header,
        )
        .unwrap()
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
    fn placeholders_are_swapped_in_headers_and_a_template_added_when_missing() {
        let with_template = secret(Some("Authorization: Bearer {{secret}}"));
        let mut headers: Vec<Header> = vec![
            (
                "X-Key".into(),
                b"k=paddock-secret-placeholder-API_KEY;x".to_vec(),
            ),
            ("Accept".into(), b"*/*".to_vec()),
        ];
        rewrite(&mut headers, &[&with_template]);
        assert_eq!(headers[0].1, b"k=sk-123;x");
        assert_eq!(headers[1].1, b"*/*");
        assert_eq!(
            headers[2],
            ("Authorization".into(), b"Bearer sk-123".to_vec())
        );
        // a header the program sent wins over the template (after the swap)
        let mut sent: Vec<Header> = vec![(
            "authorization".into(),
            b"Token paddock-secret-placeholder-API_KEY".to_vec(),
        )];
        rewrite(&mut sent, &[&with_template]);
        assert_eq!(sent, [("authorization".into(), b"Token sk-123".to_vec())]);
    }
}
