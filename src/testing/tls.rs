//! https for tests: [`TlsFront`] puts TLS in front of a plain server (a [`super::FixtureServer`]),
//! with a certificate for 127.0.0.1 and localhost issued by a certificate authority of its own.
//! A test trusts that authority (its PEM, [`TlsFront::ca_pem`], given to
//! [`crate::EngineBuilder::root_certificate`] or `wachet --root-certificate`), or leaves it
//! untrusted to see a certificate error.

use std::io::Error;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::net::TcpListener;

/// A TLS server on 127.0.0.1 relaying every connection, decrypted, to a plain server. Stops
/// when dropped.
pub struct TlsFront {
    addr: SocketAddr,
    handshakes: Arc<AtomicU64>,
    resumed: Arc<AtomicU64>,
    ca_pem: String,
    task: tokio::task::JoinHandle<()>,
}

fn other(e: impl std::fmt::Display) -> Error {
    Error::other(e.to_string())
}

impl TlsFront {
    /// Starts the front for the plain server at `backend`, with a new authority and key.
    pub async fn start(backend: SocketAddr) -> std::io::Result<TlsFront> {
        let ca_key = rcgen::KeyPair::generate().map_err(other)?;
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(other)?;
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "wachet test CA");
        let ca_cert = ca_params.self_signed(&ca_key).map_err(other)?;
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let key = rcgen::KeyPair::generate().map_err(other)?;
        let params = rcgen::CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])
            .map_err(other)?;
        let cert = params.signed_by(&key, &issuer).map_err(other)?;
        let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(Arc::new(
            tokio_rustls::rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(other)?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            tokio_rustls::rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .map_err(other)?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let handshakes = Arc::new(AtomicU64::new(0));
        let resumed = Arc::new(AtomicU64::new(0));
        let (counted, counted_resumed) = (handshakes.clone(), resumed.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::AcqRel);
                let (acceptor, resumed) = (acceptor.clone(), counted_resumed.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    if tls.get_ref().1.handshake_kind()
                        == Some(tokio_rustls::rustls::HandshakeKind::Resumed)
                    {
                        resumed.fetch_add(1, Ordering::AcqRel);
                    }
                    let Ok(mut plain) = tokio::net::TcpStream::connect(backend).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        Ok(TlsFront {
            addr,
            handshakes,
            resumed,
            ca_pem: ca_cert.pem(),
            task,
        })
    }

    /// The https URL of `path` on this front.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.addr.port())
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The PEM of the authority that issued its certificate.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// TLS connections accepted so far (handshakes tried, whether or not they succeeded).
    pub fn handshakes(&self) -> u64 {
        self.handshakes.load(Ordering::Acquire)
    }

    /// Handshakes that resumed a session the client had from an earlier connection.
    pub fn resumed(&self) -> u64 {
        self.resumed.load(Ordering::Acquire)
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}
