//! Certificate verification toward servers, shared by every TLS client of an engine: the plain
//! fetcher's routes (direct, and one per proxy location) and the render egress's connections to
//! real servers. It trusts the platform's roots plus the roots the
//! engine was built to trust. One [`Verification`] reads the system's roots once, at the first
//! certificate it verifies (again at the next one if that failed): reading them (about 300 files on Debian) was most of the 3 ms an
//! engine took to build, paid again by every short command and crawl, and by an engine that
//! never meets https at all. Each route of the plain fetcher and each render session still
//! makes its own configuration of it, so its own cache of TLS sessions: none is resumed across
//! routes or checks' renders.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use std::sync::{Arc, OnceLock};

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
    /// The platform's roots and `extra_roots` (DER); an error when an extra root cannot be
    /// read or no client configuration can be made (so clients made later cannot fail). The
    /// platform's roots are read at the first verification; a platform without any fails each
    /// https request then, saying so, and plain http still works.
    pub fn new(extra_roots: &[Vec<u8>]) -> Result<Self, String> {
        let provider = provider();
        let extra_roots: Vec<CertificateDer<'static>> = extra_roots
            .iter()
            .map(|der| CertificateDer::from(der.clone()))
            .collect();
        // Read now, so a root the engine was given that is no certificate fails its build.
        let mut readable = RootCertStore::empty();
        for root in &extra_roots {
            readable
                .add(root.clone())
                .map_err(|e| format!("cannot set up certificate verification: {e}"))?;
        }
        let verification = Verification {
            provider: provider.clone(),
            verifier: Arc::new(PlatformRoots {
                provider,
                extra_roots,
                verifier: OnceLock::new(),
            }),
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

/// The platform verifier (the system's roots and the engine's own), made at the first
/// certificate to verify. Signatures are checked as that verifier checks them, by the
/// provider's algorithms, so a handshake needs the roots only for the chain.
#[derive(Debug)]
struct PlatformRoots {
    provider: Arc<rustls::crypto::CryptoProvider>,
    extra_roots: Vec<CertificateDer<'static>>,
    verifier: OnceLock<rustls_platform_verifier::Verifier>,
}

impl PlatformRoots {
    /// The verifier, made at the first call that succeeds: a failure (no roots yet, in a
    /// container still starting, say) is not kept, so a later request tries again. The first
    /// call reads the roots on the caller's thread, a few milliseconds once an engine.
    fn verifier(&self) -> Result<&rustls_platform_verifier::Verifier, rustls::Error> {
        if let Some(verifier) = self.verifier.get() {
            return Ok(verifier);
        }
        let made = if self.extra_roots.is_empty() {
            rustls_platform_verifier::Verifier::new(self.provider.clone())
        } else {
            rustls_platform_verifier::Verifier::new_with_extra_roots(
                self.extra_roots.iter().cloned(),
                self.provider.clone(),
            )
        };
        match made {
            // Two first handshakes at once may both have made one; the first kept is used.
            Ok(verifier) => Ok(self.verifier.get_or_init(|| verifier)),
            Err(e) => Err(rustls::Error::General(format!(
                "cannot set up certificate verification: {e}"
            ))),
        }
    }
}

impl ServerCertVerifier for PlatformRoots {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The process's default provider when one is installed, else aws-lc-rs.
pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
}
