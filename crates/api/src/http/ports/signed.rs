//! Signed port URLs: a token that lets whoever holds it reach one port of
//! one sandbox until it expires, without the tenant's bearer token (a
//! preview link for a browser).
//!
//! The token is `{expires}.{tenant}.{signature}`: the expiry in Unix
//! seconds, the tenant it acts for, and HMAC-SHA256 (base64url, no
//! padding) over a domain tag, the tenant, the sandbox id, the port and the
//! expiry, with a server key kept in the data dir (`port-url.key`). Any
//! change to any of them, or another key, fails the check; nothing but the
//! expiry revokes a token (a new key revokes them all).

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use paddock_core::ids::TenantId;
use paddock_core::sandbox::SandboxId;
use sha2::Sha256;

/// Bytes of the server key: SHA-256's block, so HMAC takes it as it is.
const KEY_LEN: usize = 64;
/// Separates the signed fields from those of any other use of the key.
const DOMAIN: &str = "paddock-port-url-v1";

/// The query parameter (and cookie) a signed token rides in.
pub const TOKEN_PARAM: &str = "paddock_token";

/// The server key of signed port URLs. Its bytes never reach a log.
#[derive(Clone)]
pub struct PortUrlKey {
    key: [u8; KEY_LEN],
}

impl std::fmt::Debug for PortUrlKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PortUrlKey(..)")
    }
}

/// Loading or creating the key failed.
#[derive(Debug, thiserror::Error)]
pub enum PortKeyError {
    #[error("reading the port URL key {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("writing a new port URL key {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the port URL key {path} holds {len} bytes, not {KEY_LEN}; remove it to make a new one"
    )]
    Length { path: PathBuf, len: usize },
    #[error("drawing random bytes for a port URL key")]
    Random(#[source] std::io::Error),
}

/// Why a signed token does not let the request in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortUrlRefused {
    #[error("the port URL token is malformed")]
    Malformed,
    #[error("the port URL expired at {expired_at}")]
    Expired { expired_at: String },
    #[error("the port URL's signature does not match this sandbox and port")]
    BadSignature,
}

fn random_key() -> Result<[u8; KEY_LEN], PortKeyError> {
    let mut key = [0u8; KEY_LEN];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut key))
        .map_err(PortKeyError::Random)?;
    Ok(key)
}

impl PortUrlKey {
    /// A key for this process only: its URLs die with it.
    pub fn ephemeral() -> Result<Self, PortKeyError> {
        Ok(Self { key: random_key()? })
    }

    /// The key in `path`, made (mode 0600) when there is none yet, so
    /// signed URLs outlive a restart of the server.
    pub fn load_or_create(path: &Path) -> Result<Self, PortKeyError> {
        match std::fs::read(path) {
            Ok(bytes) => {
                let key = <[u8; KEY_LEN]>::try_from(bytes.as_slice()).map_err(|_| {
                    PortKeyError::Length {
                        path: path.to_owned(),
                        len: bytes.len(),
                    }
                })?;
                Ok(Self { key })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = random_key()?;
                let write = |key: &[u8]| {
                    std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(0o600)
                        .open(path)
                        .and_then(|mut f| f.write_all(key).and_then(|()| f.sync_all()))
                };
                match write(&key) {
                    Ok(()) => Ok(Self { key }),
                    // Another server on this data dir made it first: use theirs.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        Self::load_or_create(path)
                    }
                    Err(source) => Err(PortKeyError::Write {
                        path: path.to_owned(),
                        source,
                    }),
                }
            }
            Err(source) => Err(PortKeyError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    fn signature(
        &self,
        tenant: &str,
        sandbox: &SandboxId,
        port: u16,
        expires: u64,
    ) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new(&self.key.into());
        for field in [
            DOMAIN,
            tenant,
            sandbox.as_str(),
            &port.to_string(),
            &expires.to_string(),
        ] {
            mac.update(field.as_bytes());
            mac.update(&[0]);
        }
        mac
    }

    /// A token for `port` of `sandbox`, acting for `tenant`, good until
    /// `expires` (Unix seconds).
    pub fn mint(&self, tenant: &TenantId, sandbox: &SandboxId, port: u16, expires: u64) -> String {
        let signature = self
            .signature(tenant.as_str(), sandbox, port, expires)
            .finalize()
            .into_bytes();
        format!("{expires}.{tenant}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    /// The tenant a token acts for, when it is this key's for `port` of
    /// `sandbox` and `now` (Unix seconds) is before its expiry.
    pub fn verify(
        &self,
        token: &str,
        sandbox: &SandboxId,
        port: u16,
        now: u64,
    ) -> Result<TenantId, PortUrlRefused> {
        let mut parts = token.splitn(3, '.');
        let (Some(expires), Some(tenant), Some(signature)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(PortUrlRefused::Malformed);
        };
        let expires: u64 = expires.parse().map_err(|_| PortUrlRefused::Malformed)?;
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| PortUrlRefused::Malformed)?;
        // Constant-time comparison inside `verify_slice`.
        self.signature(tenant, sandbox, port, expires)
            .verify_slice(&signature)
            .map_err(|_| PortUrlRefused::BadSignature)?;
        if now >= expires {
            let millis = i64::try_from(expires.saturating_mul(1000)).unwrap_or(i64::MAX);
            return Err(PortUrlRefused::Expired {
                expired_at: paddock_core::store::Timestamp::from_millis(millis).to_string(),
            });
        }
        TenantId::parse(tenant).map_err(|_| PortUrlRefused::Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> PortUrlKey {
        PortUrlKey { key: [7; KEY_LEN] }
    }

    fn ids() -> (TenantId, SandboxId, SandboxId) {
        (
            TenantId::parse("acme").unwrap(),
            SandboxId::parse("sb-1").unwrap(),
            SandboxId::parse("sb-2").unwrap(),
        )
    }

    #[test]
    fn a_token_opens_its_port_of_its_sandbox_until_it_expires() {
        let (tenant, sandbox, other) = ids();
        let token = key().mint(&tenant, &sandbox, 8000, 1_000);
        assert_eq!(
            key().verify(&token, &sandbox, 8000, 999),
            Ok(tenant.clone())
        );
        assert!(matches!(
            key().verify(&token, &sandbox, 8000, 1_000),
            Err(PortUrlRefused::Expired { .. })
        ));
        assert_eq!(
            key().verify(&token, &sandbox, 8001, 999),
            Err(PortUrlRefused::BadSignature)
        );
        assert_eq!(
            key().verify(&token, &other, 8000, 999),
            Err(PortUrlRefused::BadSignature)
        );
        let other_key = PortUrlKey { key: [8; KEY_LEN] };
        assert_eq!(
            other_key.verify(&token, &sandbox, 8000, 999),
            Err(PortUrlRefused::BadSignature)
        );
    }

    #[test]
    fn a_changed_expiry_or_tenant_breaks_the_signature() {
        let (tenant, sandbox, _) = ids();
        let token = key().mint(&tenant, &sandbox, 8000, 1_000);
        let (_, rest) = token.split_once('.').unwrap();
        let later = format!("9999999999.{rest}");
        assert_eq!(
            key().verify(&later, &sandbox, 8000, 999),
            Err(PortUrlRefused::BadSignature)
        );
        let other_tenant = token.replace(".acme.", ".globex.");
        assert_eq!(
            key().verify(&other_tenant, &sandbox, 8000, 999),
            Err(PortUrlRefused::BadSignature)
        );
        for junk in ["", "1.2", "x.acme.AAAA", "1.acme.***"] {
            assert_eq!(
                key().verify(junk, &sandbox, 8000, 0),
                Err(PortUrlRefused::Malformed),
                "{junk}"
            );
        }
    }

    #[test]
    fn the_key_is_made_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("port-url.key");
        let made = PortUrlKey::load_or_create(&path).unwrap();
        let read = PortUrlKey::load_or_create(&path).unwrap();
        assert_eq!(made.key, read.key);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(&path, b"short").unwrap();
        assert!(matches!(
            PortUrlKey::load_or_create(&path),
            Err(PortKeyError::Length { len: 5, .. })
        ));
        assert!(!format!("{made:?}").contains('7'));
    }
}
