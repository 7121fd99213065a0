//! TLS interception for the hosts of a sandbox's secrets. The sandbox gets
//! its own CA (made here, its key never leaves this process; the
//! certificate is installed in the sandbox's trust store), the proxy
//! answers a CONNECT to a secret's host with a leaf certificate of that
//! CA, reads the one request of the connection, rewrites its headers
//! ([`crate::secrets::rewrite`]) and forwards it over TLS verified against
//! the system's roots and the operator's (`EgressConfig::extra_roots`),
//! with `Connection: close`: every request that carries a secret is one
//! the proxy read. Only HTTP/1.1 is offered.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use paddock_proto::{SecretSpec, Target};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::relay::copy;
use crate::secrets::{Header, rewrite};

/// The system's CA bundle (Debian's), trusted for upstreams and copied
/// into the sandbox's bundle beside its own CA.
pub const SYSTEM_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_HEAD: usize = 16 * 1024;
const MAX_HEADERS: usize = 64;
/// Hop-by-hop headers of the client leg, not forwarded.
const HOP_HEADERS: &[&str] = &["connection", "keep-alive", "proxy-connection", "upgrade"];

#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("making the sandbox's CA")]
    Ca(#[source] rcgen::Error),
    #[error("reading the egress root certificates in {path}")]
    Roots {
        path: PathBuf,
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    #[error("configuring TLS")]
    Config(#[source] rustls::Error),
}

/// The sandbox's CA and the proxy's two TLS sides.
pub(crate) struct Interceptor {
    ca: CertifiedIssuer<'static, KeyPair>,
    leaves: Mutex<HashMap<String, TlsAcceptor>>,
    upstream: TlsConnector,
}

impl std::fmt::Debug for Interceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interceptor").finish_non_exhaustive()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

fn roots(extra: &[PathBuf]) -> Result<RootCertStore, TlsSetupError> {
    let mut store = RootCertStore::empty();
    let system = Path::new(SYSTEM_BUNDLE);
    let files = system
        .exists()
        .then(|| system.to_path_buf())
        .into_iter()
        .chain(extra.iter().cloned());
    for path in files {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&path)
            .and_then(|iter| iter.collect())
            .map_err(|source| TlsSetupError::Roots {
                path: path.clone(),
                source,
            })?;
        store.add_parsable_certificates(certs);
    }
    Ok(store)
}

impl Interceptor {
    pub(crate) fn new(sandbox_id: &str, extra_roots: &[PathBuf]) -> Result<Self, TlsSetupError> {
        let key = KeyPair::generate().map_err(TlsSetupError::Ca)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(TlsSetupError::Ca)?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.distinguished_name.push(
            DnType::CommonName,
            format!("paddock sandbox {sandbox_id} CA"),
        );
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(params, key).map_err(TlsSetupError::Ca)?;
        let mut client = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(TlsSetupError::Config)?
            .with_root_certificates(roots(extra_roots)?)
            .with_no_client_auth();
        client.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            ca,
            leaves: Mutex::new(HashMap::new()),
            upstream: TlsConnector::from(Arc::new(client)),
        })
    }

    /// The CA certificate the sandbox trusts.
    pub(crate) fn ca_pem(&self) -> String {
        self.ca.pem()
    }

    /// The TLS server side for `host`: a leaf of the sandbox's CA, made once.
    fn acceptor(&self, host: &str) -> Result<TlsAcceptor, TlsSetupError> {
        if let Some(found) = self.leaves.lock().ok().and_then(|l| l.get(host).cloned()) {
            return Ok(found);
        }
        let key = KeyPair::generate().map_err(TlsSetupError::Ca)?;
        let params = CertificateParams::new(vec![host.to_owned()]).map_err(TlsSetupError::Ca)?;
        let cert = params
            .signed_by(&key, &self.ca)
            .map_err(TlsSetupError::Ca)?;
        let chain = vec![cert.der().clone()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut server = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(TlsSetupError::Config)?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(TlsSetupError::Config)?;
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(server));
        if let Ok(mut leaves) = self.leaves.lock() {
            leaves.insert(host.to_owned(), acceptor.clone());
        }
        Ok(acceptor)
    }

    /// Serves one intercepted connection (the CONNECT already answered):
    /// returns the bytes (out, in), or why it stopped.
    pub(crate) async fn serve(
        &self,
        client: TcpStream,
        upstream: TcpStream,
        host: &Target,
        secrets: &[&SecretSpec],
    ) -> Result<(u64, u64), String> {
        let name = match host {
            Target::Name(n) => n.clone(),
            Target::Ip(ip) => ip.to_string(),
        };
        let acceptor = self.acceptor(&name).map_err(|e| e.to_string())?;
        let mut client = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(client))
            .await
            .map_err(|_| "no TLS handshake from the sandbox within 10s".to_owned())?
            .map_err(|e| format!("TLS handshake with the sandbox: {e}"))?;
        let (head, extra) = tokio::time::timeout(HANDSHAKE_TIMEOUT, read_head(&mut client))
            .await
            .map_err(|_| "no request within 10s".to_owned())?
            .ok_or_else(|| "not an HTTP/1 request head of at most 16 KiB".to_owned())?;
        let forwarded =
            forward_head(&head, secrets).ok_or_else(|| "not an HTTP/1 request".to_owned())?;
        let server_name = ServerName::try_from(name.clone())
            .map_err(|e| format!("{name} is not a TLS server name: {e}"))?;
        let mut upstream = tokio::time::timeout(
            HANDSHAKE_TIMEOUT,
            self.upstream.connect(server_name, upstream),
        )
        .await
        .map_err(|_| format!("no TLS handshake from {name} within 10s"))?
        .map_err(|e| format!("TLS to {name}: {e}"))?;
        let sent = (forwarded.len() + extra.len()) as u64;
        upstream
            .write_all(&forwarded)
            .await
            .and(upstream.write_all(&extra).await)
            .map_err(|e| format!("writing to {name}: {e}"))?;
        let (out, inn) = copy(&mut client, &mut upstream).await;
        Ok((out + sent, inn))
    }
}

/// The request head as forwarded: hop-by-hop headers dropped, the secrets'
/// rewrite applied, `Connection: close`.
fn forward_head(head: &[u8], secrets: &[&SecretSpec]) -> Option<Vec<u8>> {
    let mut parsed = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut parsed);
    if !matches!(request.parse(head), Ok(httparse::Status::Complete(_))) {
        return None;
    }
    let (method, path) = (request.method?, request.path?);
    let mut headers: Vec<Header> = request
        .headers
        .iter()
        .filter(|h| {
            !HOP_HEADERS
                .iter()
                .any(|hop| h.name.eq_ignore_ascii_case(hop))
        })
        .map(|h| (h.name.to_owned(), h.value.to_vec()))
        .collect();
    rewrite(&mut headers, secrets);
    let mut out = format!("{method} {path} HTTP/1.1\r\n").into_bytes();
    for (name, value) in headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(&value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Some(out)
}

/// Reads up to the end of the head; returns (head, bytes read past it).
async fn read_head<R: AsyncRead + Unpin>(reader: &mut R) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = reader.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf[from..]
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|p| from + p + 4)
        {
            let extra = buf.split_off(end);
            return Some((buf, extra));
        }
        if buf.len() > MAX_HEAD {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use paddock_proto::SecretValue;

    #[test]
    fn the_forwarded_head_carries_the_value_and_closes() {
        let secret = SecretSpec::new(
            "API_KEY",
            SecretValue::new("sk-9"),
            &["api.test"],
            Some("Authorization: Bearer {{secret}}"),
        )
        .unwrap();
        let head = b"GET /v1/x HTTP/1.1\r\nHost: api.test\r\nConnection: keep-alive\r\nX-Key: paddock-secret-placeholder-API_KEY\r\n\r\n";
        let out = String::from_utf8(forward_head(head, &[&secret]).unwrap()).unwrap();
        assert_eq!(
            out,
            "GET /v1/x HTTP/1.1\r\nHost: api.test\r\nX-Key: sk-9\r\nAuthorization: Bearer sk-9\r\nConnection: close\r\n\r\n"
        );
        assert!(forward_head(b"nonsense\r\n\r\n", &[&secret]).is_none());
    }

    #[test]
    fn a_sandbox_ca_issues_leaves_for_hosts() {
        let interceptor = Interceptor::new("sb-test", &[]).unwrap();
        assert!(
            interceptor
                .ca_pem()
                .starts_with("-----BEGIN CERTIFICATE-----")
        );
        interceptor.acceptor("api.test").unwrap();
        interceptor.acceptor("198.51.100.7").unwrap();
        assert_eq!(interceptor.leaves.lock().unwrap().len(), 2);
    }
}
