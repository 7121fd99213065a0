//! A test CA and HTTPS server configurations for the test hosts: the CA's
//! certificate goes to a PEM file the egress proxy is told to trust
//! (`--egress-ca`), as an operator would for an internal host.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

#[derive(Debug)]
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl TestCa {
    pub fn new() -> anyhow::Result<Self> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "paddock test hosts CA");
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        Ok(Self { issuer })
    }

    /// Writes the CA certificate to `path` (PEM).
    pub fn write_pem(&self, path: &Path) -> anyhow::Result<()> {
        std::fs::write(path, self.issuer.pem()).with_context(|| path.display().to_string())
    }

    /// A TLS server configuration for `host`, signed by this CA.
    pub fn server(&self, host: &str) -> anyhow::Result<Arc<rustls::ServerConfig>> {
        let key = KeyPair::generate()?;
        let cert = CertificateParams::new(vec![host.to_owned()])?.signed_by(&key, &self.issuer)?;
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )?;
        Ok(Arc::new(config))
    }
}
