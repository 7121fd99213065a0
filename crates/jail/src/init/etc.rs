//! The sandbox's sanitized /etc: a few generated files plus read-only binds
//! of an allowlist. Anything not listed (shadow, ssh keys, sudoers,
//! machine-id, tool configs that may hold tokens, ...) does not exist inside.

/// An allowlisted /etc entry, bound read-only from the host (or the rootfs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EtcEntry {
    pub name: &'static str,
    pub reason: &'static str,
}

const fn entry(name: &'static str, reason: &'static str) -> EtcEntry {
    EtcEntry { name, reason }
}

pub(crate) const ALLOWLIST: &[EtcEntry] = &[
    entry(
        "ld.so.cache",
        "dynamic linker cache: programs find their libraries",
    ),
    entry("ld.so.conf", "dynamic linker search path"),
    entry("ld.so.conf.d", "dynamic linker search path fragments"),
    entry(
        "alternatives",
        "Debian alternatives symlinks (awk, editor, java, ...)",
    ),
    entry(
        "ssl/certs",
        "CA certificate directory for TLS clients (not ssl/private)",
    ),
    entry("ssl/openssl.cnf", "OpenSSL configuration"),
    entry("ca-certificates", "CA certificates for TLS clients"),
    entry("localtime", "time zone"),
    entry("timezone", "time zone name"),
    entry("nsswitch.conf", "how libc looks up users, groups and hosts"),
    entry("host.conf", "resolver options"),
    entry("gai.conf", "getaddrinfo address ordering"),
    entry(
        "os-release",
        "distribution identification, read by many tools",
    ),
    entry("debian_version", "distribution version"),
    entry("bash.bashrc", "system-wide bash startup"),
    entry("profile", "login shell startup"),
    entry("inputrc", "readline key bindings"),
    entry("protocols", "protocol names for getprotobyname"),
    entry("services", "port names for getservbyname"),
    entry("mime.types", "MIME type table"),
];

/// The resolver of a sandbox with egress: the egress proxy's DNS, which
/// listens on the sandbox's loopback and answers only names the policy allows.
pub(crate) const EGRESS_RESOLV_CONF: &str = "nameserver 127.0.0.1\noptions ndots:0\n";

/// Generated files: (name, contents).
pub(crate) fn generated(hostname: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "passwd",
            "root:x:0:0:root:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
                .to_owned(),
        ),
        ("group", "root:x:0:\nnogroup:x:65534:\n".to_owned()),
        ("hostname", format!("{hostname}\n")),
        (
            "hosts",
            format!(
                "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t{hostname}\n"
            ),
        ),
    ]
}

/// Generated symlinks: (name, target).
pub(crate) const SYMLINKS: &[(&str, &str)] = &[("mtab", "../proc/self/mounts")];

#[cfg(test)]
mod tests {
    use super::*;

    /// Host files that must never appear in a sandbox.
    const SECRETS: &[&str] = &[
        "shadow",
        "shadow-",
        "gshadow",
        "gshadow-",
        "passwd-",
        "sudoers",
        "sudoers.d",
        "ssh",
        "machine-id",
        "subuid",
        "subgid",
        "security",
        "pam.d",
        "gitconfig",
        "npmrc",
        "pip.conf",
        "environment",
        "krb5.keytab",
        "ssl/private",
    ];

    #[test]
    fn no_secret_is_allowlisted_and_every_entry_has_a_reason() {
        for e in ALLOWLIST {
            assert!(!SECRETS.contains(&e.name), "{} is allowlisted", e.name);
            assert!(!e.name.starts_with('/') && !e.name.split('/').any(|c| c.starts_with('.')));
            assert!(!e.reason.is_empty());
        }
        assert!(!ALLOWLIST.iter().any(|e| e.name == "resolv.conf"));
    }

    #[test]
    fn generated_accounts_know_only_root_and_nobody() {
        let files = generated("paddock-abc");
        let passwd = &files.iter().find(|(n, _)| *n == "passwd").unwrap().1;
        let users: Vec<&str> = passwd
            .lines()
            .map(|l| l.split(':').next().unwrap())
            .collect();
        assert_eq!(users, ["root", "nobody"]);
        let hosts = &files.iter().find(|(n, _)| *n == "hosts").unwrap().1;
        assert!(hosts.contains("127.0.1.1\tpaddock-abc\n"));
    }
}
