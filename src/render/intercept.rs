//! The TLS of the egress proxy's interception of https: the engine reads what a rendered page
//! loads over https, so its size caps hold there as on plain http. It owns the two ends. Toward
//! the browser, one key pair per process ([`authority`]) and a certificate per host, issued
//! with that key on first use and cached; Chromium is launched trusting that key alone
//! (`--ignore-certificate-errors-spki-list`). Toward the site, [`UpstreamTls`] verifies the
//! real server's certificate exactly as the plain fetcher does (the engine's one
//! [`Verification`]: the platform's roots, plus the roots the engine was built to trust), so a
//! certificate the plain path refuses is refused here too, and a render's https is never less
//! checked than a fetch's.

use crate::fetch::tls::{Verification, provider};
use rustls::ServerConfig;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use sha2::Digest;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// Certificates kept per host at most; the cache starts over when full (issuing one is cheap).
const MAX_LEAVES: usize = 256;

/// Days a host's certificate is valid from the day before it was issued.
const LEAF_DAYS: i64 = 30;

/// A cached certificate is issued again after this long, well before it expires (a service
/// runs for months on one key).
const LEAF_REISSUE: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// The only protocol spoken inside an intercepted connection, on both ends: the proxy reads
/// HTTP/1.1 heads and bodies.
const ALPN: &[u8] = b"http/1.1";

/// The engine's key and the certificates issued with it.
pub(crate) struct Authority {
    key: rcgen::KeyPair,
    /// Base64 of the SHA-256 of the key's SubjectPublicKeyInfo, as Chromium's flag takes it.
    spki_sha256: String,
    /// Acceptors by host, with when their certificate was issued.
    leaves: Mutex<HashMap<String, (std::time::Instant, TlsAcceptor)>>,
}

/// The process's authority, made on first use.
pub(crate) fn authority() -> Result<&'static Authority, String> {
    static AUTHORITY: OnceLock<Result<Authority, String>> = OnceLock::new();
    AUTHORITY
        .get_or_init(Authority::generate)
        .as_ref()
        .map_err(Clone::clone)
}

impl Authority {
    fn generate() -> Result<Self, String> {
        use base64::Engine as _;
        use rcgen::PublicKeyData as _;
        let key = rcgen::KeyPair::generate()
            .map_err(|e| format!("cannot generate the egress proxy's key: {e}"))?;
        let digest = sha2::Sha256::digest(key.subject_public_key_info());
        Ok(Authority {
            key,
            spki_sha256: base64::engine::general_purpose::STANDARD.encode(digest),
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// The value of Chromium's `--ignore-certificate-errors-spki-list` for this key.
    pub fn spki_sha256(&self) -> &str {
        &self.spki_sha256
    }

    /// A TLS acceptor presenting a certificate for `host` (a name or an IP address).
    pub fn acceptor(&self, host: &str) -> Result<TlsAcceptor, String> {
        let host = host.to_ascii_lowercase();
        if let Ok(leaves) = self.leaves.lock()
            && let Some((issued, acceptor)) = leaves.get(&host)
            && issued.elapsed() < LEAF_REISSUE
        {
            return Ok(acceptor.clone());
        }
        let acceptor = self.issue(&host)?;
        if let Ok(mut leaves) = self.leaves.lock() {
            if leaves.len() >= MAX_LEAVES {
                leaves.clear();
            }
            leaves.insert(host, (std::time::Instant::now(), acceptor.clone()));
        }
        Ok(acceptor)
    }

    fn issue(&self, host: &str) -> Result<TlsAcceptor, String> {
        // A name rcgen cannot put in a certificate gets one without names: the browser trusts
        // the key, not the names, and the proxy has already checked where it connects.
        let mut params = rcgen::CertificateParams::new(vec![host.to_string()])
            .or_else(|_| rcgen::CertificateParams::new(Vec::<String>::new()))
            .map_err(|e| format!("cannot describe a certificate for {host}: {e}"))?;
        let day = |offset: i64| {
            let date = (chrono::Utc::now() + chrono::Duration::days(offset)).date_naive();
            use chrono::Datelike as _;
            rcgen::date_time_ymd(date.year(), date.month() as u8, date.day() as u8)
        };
        params.not_before = day(-1);
        params.not_after = day(LEAF_DAYS);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "wachet egress proxy");
        let cert = params
            .self_signed(&self.key)
            .map_err(|e| format!("cannot issue a certificate for {host}: {e}"))?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.serialize_der()));
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], key)
            .map_err(|e| format!("cannot use the certificate for {host}: {e}"))?;
        config.alpn_protocols = vec![ALPN.to_vec()];
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

/// TLS toward the real servers, verified as the plain fetcher verifies: one a render session,
/// with its own cache of TLS sessions (not `Clone`: a clone would share that cache).
pub(crate) struct UpstreamTls {
    connector: TlsConnector,
}

impl std::fmt::Debug for UpstreamTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UpstreamTls")
    }
}

impl UpstreamTls {
    /// A client verifying servers with the engine's `verification`, as the plain fetcher does,
    /// resuming only the TLS sessions it made itself.
    pub fn new(verification: &Verification) -> Result<Self, String> {
        let config = verification.client_config(ALPN)?;
        Ok(UpstreamTls {
            connector: TlsConnector::from(Arc::new(config)),
        })
    }

    /// Opens TLS to `host` over `stream` (to the server, or a tunnel to it), verifying its
    /// certificate for `host`.
    pub async fn connect<S>(
        &self,
        host: &str,
        stream: S,
    ) -> std::io::Result<tokio_rustls::client::TlsStream<S>>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        let name = ServerName::try_from(host.to_string()).map_err(|e| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{host}: {e}"))
        })?;
        self.connector.connect(name, stream).await
    }
}
