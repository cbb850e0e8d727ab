//! Certificate verification toward servers, shared by every TLS client of an engine: the plain
//! fetcher's routes (direct, and one per proxy location) and the render egress's connections to
//! real servers. It trusts the platform's roots plus the roots the
//! engine was built to trust. One [`Verification`] reads the system's roots once; each client
//! building its own read them again, which cost an engine's start about 2 ms a client. Each
//! route of the plain fetcher and each render session still makes its own configuration of
//! it, so its own cache of TLS sessions: none is resumed across routes or checks' renders.

use rustls::ClientConfig;
use rustls::client::danger::ServerCertVerifier;
use rustls_pki_types::CertificateDer;
use std::sync::Arc;

/// The verifier of an engine's TLS clients.
#[derive(Clone)]
pub(crate) struct Verification {
    provider: Arc<rustls::crypto::CryptoProvider>,
    verifier: Arc<dyn ServerCertVerifier>,
}

impl std::fmt::Debug for Verification {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Verification")
    }
}

impl Verification {
    /// The platform's roots and `extra_roots` (DER); an error when no root can be loaded, an
    /// extra one cannot be read, or no client configuration can be made of them (so clients
    /// made later cannot fail).
    pub fn new(extra_roots: &[Vec<u8>]) -> Result<Self, String> {
        let provider = provider();
        let verifier = if extra_roots.is_empty() {
            rustls_platform_verifier::Verifier::new(provider.clone())
        } else {
            rustls_platform_verifier::Verifier::new_with_extra_roots(
                extra_roots
                    .iter()
                    .map(|der| CertificateDer::from(der.clone())),
                provider.clone(),
            )
        }
        .map_err(|e| format!("cannot set up certificate verification: {e}"))?;
        let verification = Verification {
            provider,
            verifier: Arc::new(verifier),
        };
        verification.client_config(b"http/1.1")?;
        Ok(verification)
    }

    /// A client configuration with this verification, speaking `alpn`, with a new cache of TLS
    /// sessions of its own (a clone of the result shares its cache).
    pub fn client_config(&self, alpn: &[u8]) -> Result<ClientConfig, String> {
        let mut config = ClientConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(self.verifier.clone())
            .with_no_client_auth();
        config.alpn_protocols = vec![alpn.to_vec()];
        Ok(config)
    }
}

/// The process's default provider when one is installed, else aws-lc-rs.
pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
}
