//! TLS interception for the hosts of a sandbox's secrets. The sandbox gets
//! its own CA (made here, its key never leaves this process; the
//! certificate is installed in the sandbox's trust store), the proxy
//! answers a CONNECT to a secret's host with a leaf certificate of that
//! CA, checks the server name the sandbox sent, reads the one request of
//! the connection, checks and rewrites it ([`crate::proxy::secrets`]: the value in
//! the secret's header of a request to the admitted host, or a 403) and
//! forwards it over TLS verified against
//! the system's roots and the operator's (`EgressConfig::extra_roots`),
//! with `Connection: close`: every request that carries a secret is one
//! the proxy read. Only HTTP/1.1 is offered.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use paddock_proto::Target;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::proxy::relay::copy;
use crate::proxy::secrets::{Admitted, Scan, Secrets, forward_head};

/// The system's CA bundle (Debian's), trusted for upstreams and copied
/// into the sandbox's bundle beside its own CA.
pub const SYSTEM_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_HEAD: usize = 16 * 1024;

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
    /// the sandbox's TLS server name must be the admitted host, its one
    /// request must pass [`forward_head`] and its body [`Scan`]; a refused
    /// request gets a 403 over the sandbox's TLS and never reaches the host.
    pub(crate) async fn serve(
        &self,
        client: TcpStream,
        upstream: TcpStream,
        admitted: Admitted<'_>,
        secrets: &Secrets,
    ) -> Served {
        let served = Served::default();
        let host = admitted.target;
        let name = match host {
            Target::Name(n) => n.clone(),
            Target::Ip(ip) => ip.to_string(),
        };
        let acceptor = match self.acceptor(&name) {
            Ok(acceptor) => acceptor,
            Err(e) => return served.failed(e.to_string()),
        };
        let mut client =
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(client)).await {
                Err(_) => {
                    return served.failed("no TLS handshake from the sandbox within 10s".into());
                }
                Ok(Err(e)) => return served.failed(format!("TLS handshake with the sandbox: {e}")),
                Ok(Ok(client)) => client,
            };
        let sni = client.get_ref().1.server_name().map(str::to_owned);
        if let Err(why) = crate::proxy::opening::check_sni(sni.as_deref(), host) {
            return served.refused(why);
        }
        let read = tokio::time::timeout(HANDSHAKE_TIMEOUT, read_head(&mut client)).await;
        let (head, extra) = match read {
            Err(_) => return served.failed("no request within 10s".to_owned()),
            Ok(None) => {
                return served.failed("not an HTTP/1 request head of at most 16 KiB".to_owned());
            }
            Ok(Some(read)) => read,
        };
        let forwarded = match forward_head(&head, admitted, secrets) {
            Ok(forwarded) => forwarded,
            Err(why) => {
                let _ = forbid(&mut client, &why).await;
                return served.refused(why);
            }
        };
        let mut scan = Scan::new(client, secrets.placeholders());
        if let Some(secret) = scan.check(&extra) {
            let why = body_refusal(&secret);
            let _ = forbid(scan.get_mut(), &why).await;
            return served.refused(why);
        }
        let server_name = match ServerName::try_from(name.clone()) {
            Ok(server_name) => server_name,
            Err(e) => return served.failed(format!("{name} is not a TLS server name: {e}")),
        };
        let connected = tokio::time::timeout(
            HANDSHAKE_TIMEOUT,
            self.upstream.connect(server_name, upstream),
        )
        .await;
        let mut upstream = match connected {
            Err(_) => return served.failed(format!("no TLS handshake from {name} within 10s")),
            Ok(Err(e)) => return served.failed(format!("TLS to {name}: {e}")),
            Ok(Ok(upstream)) => upstream,
        };
        let written = async {
            upstream.write_all(&forwarded).await?;
            upstream.write_all(&extra).await
        }
        .await;
        if let Err(e) = written {
            return served.failed(format!("writing to {name}: {e}"));
        }
        let (out, inn) = copy(&mut scan, &mut upstream).await;
        let served = Served {
            bytes_out: (forwarded.len() + extra.len()) as u64 + out,
            bytes_in: inn,
            stopped: None,
        };
        match scan.found.clone() {
            Some(secret) => served.refused(body_refusal(&secret)),
            None => served,
        }
    }
}

fn body_refusal(secret: &str) -> String {
    format!("the placeholder of secret {secret} in the request body")
}

/// How an intercepted connection went: the bytes each way and, when it
/// stopped early, why.
#[derive(Debug, Default)]
pub(crate) struct Served {
    pub(crate) bytes_out: u64,
    pub(crate) bytes_in: u64,
    pub(crate) stopped: Option<Stopped>,
}

/// Why an intercepted connection stopped early.
#[derive(Debug)]
pub(crate) enum Stopped {
    /// The rule refused the request (a denied decision).
    Refused(String),
    /// The exchange failed (TLS, a bad request).
    Failed(String),
}

impl Served {
    fn failed(mut self, why: String) -> Self {
        self.stopped = Some(Stopped::Failed(why));
        self
    }

    fn refused(mut self, why: String) -> Self {
        self.stopped = Some(Stopped::Refused(why));
        self
    }
}

/// A 403 over the sandbox's TLS, saying why.
async fn forbid<S: AsyncWrite + Unpin>(client: &mut S, why: &str) -> std::io::Result<()> {
    let body = format!("paddock egress: {why}\n");
    let response = format!(
        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n\
         X-Paddock-Egress: denied\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(response.as_bytes()).await?;
    client.shutdown().await
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
