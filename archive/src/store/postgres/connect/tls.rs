//! TLS for the PostgreSQL client, through rustls (the ring provider: no
//! system library at build or run time): the connector the client calls
//! once a socket is connected, what it checks of the server's
//! certificate by the address's `sslmode`, and the words of a handshake
//! that failed ([`TlsError`]).
//!
//! What is checked follows libpq: `verify-full` checks the chain up to
//! an authority of the CA file and that the certificate names the host
//! (its subjectAltName; a bare common name is not read); `verify-ca`,
//! and `prefer` or `require` when a CA file is in use, check the chain
//! only; `prefer` and `require` without a CA file encrypt without
//! checking who holds the certificate (the handshake's signatures are
//! still checked against the certificate's key). No channel binding is
//! offered: SCRAM authentication runs without it, as when libpq's
//! `channel_binding` is `prefer` and the server's certificate is not
//! read for it.
//!
//! The connector also marks the start-up's phases (`connect.rs`): the
//! socket connected, then the handshake, then the start-up exchange.

use super::Phase;
use crate::location::{SslMode, TlsSettings};
use postgres::Socket;
use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};
use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::rustls;
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::crypto::CryptoProvider;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_rustls::rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};

/// Why a TLS handshake with the server failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    /// The server's certificate is not signed by an authority of the CA
    /// file (or is signed by none at all: a self-signed certificate).
    #[error(
        "the server's certificate is not signed by an authority of {} (unknown issuer)",
        root_cert.display()
    )]
    UnknownIssuer {
        /// The CA file.
        root_cert: PathBuf,
    },
    /// The server's certificate does not name the host connected to.
    #[error("the server's certificate is not for {host} (name mismatch): {detail}")]
    NameMismatch {
        /// The host of the address.
        host: String,
        /// rustls' words: the names the certificate holds.
        detail: String,
    },
    /// Another reason the certificate was refused (expired, not yet
    /// valid, not for a server, ...).
    #[error("the server's certificate was refused")]
    Certificate {
        /// rustls' reason.
        #[source]
        source: rustls::Error,
    },
    /// The host cannot be checked against a certificate.
    #[error("{host} is not a host name or address a certificate can name")]
    HostName {
        /// The host of the address.
        host: String,
    },
    /// The CA file's authorities or the protocol versions cannot be
    /// set up.
    #[error("cannot set up TLS: {detail}")]
    Setup {
        /// rustls' words.
        detail: String,
    },
    /// The handshake failed otherwise (the connection closed, a protocol
    /// the two sides do not share).
    #[error("the TLS handshake failed")]
    Handshake {
        /// What the handshake ended with.
        #[source]
        source: io::Error,
    },
}

impl TlsError {
    /// True when the server's certificate was refused: the connection
    /// went as far as the certificate, which is not to be trusted.
    pub(crate) fn is_certificate_refused(&self) -> bool {
        matches!(
            self,
            TlsError::UnknownIssuer { .. }
                | TlsError::NameMismatch { .. }
                | TlsError::Certificate { .. }
        )
    }
}

/// The client's TLS hook for one address: a connector per attempt, each
/// marking the start-up's phase.
#[derive(Clone)]
pub(super) struct Connector {
    config: Option<Arc<rustls::ClientConfig>>,
    root_cert: Option<PathBuf>,
    phase: Arc<AtomicU8>,
}

impl Connector {
    /// The connector of `settings`, marking `phase`.
    pub(super) fn new(settings: &TlsSettings, phase: Arc<AtomicU8>) -> Result<Connector, TlsError> {
        let config = match settings.mode {
            SslMode::Disable => None,
            _ => Some(client_config(settings)?),
        };
        Ok(Connector {
            config,
            root_cert: settings.root_cert.clone(),
            phase,
        })
    }
}

impl MakeTlsConnect<Socket> for Connector {
    type Stream = TlsStream;
    type TlsConnect = HandshakeStart;
    type Error = TlsError;

    fn make_tls_connect(&mut self, domain: &str) -> Result<HandshakeStart, TlsError> {
        self.phase.store(Phase::StartUp as u8, Ordering::SeqCst);
        Ok(HandshakeStart {
            config: self.config.clone(),
            host: domain.to_string(),
            root_cert: self.root_cert.clone(),
            phase: Arc::clone(&self.phase),
        })
    }
}

/// The handshake of one attempt, which the client starts when the
/// server agrees to TLS.
pub(super) struct HandshakeStart {
    config: Option<Arc<rustls::ClientConfig>>,
    host: String,
    root_cert: Option<PathBuf>,
    phase: Arc<AtomicU8>,
}

impl TlsConnect<Socket> for HandshakeStart {
    type Stream = TlsStream;
    type Error = TlsError;
    type Future = Pin<Box<dyn Future<Output = Result<TlsStream, TlsError>> + Send>>;

    fn connect(self, socket: Socket) -> Self::Future {
        Box::pin(async move {
            // The client asks for a handshake only when its mode is not
            // `disable`, which is the one mode without a configuration.
            let config = self.config.ok_or_else(|| TlsError::Handshake {
                source: io::Error::other("TLS was not asked for"),
            })?;
            let server_name =
                ServerName::try_from(self.host.clone()).map_err(|_| TlsError::HostName {
                    host: self.host.clone(),
                })?;
            self.phase.store(Phase::Tls as u8, Ordering::SeqCst);
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(server_name, socket)
                .await
                .map_err(|err| handshake_error(err, &self.host, self.root_cert.as_ref()))?;
            self.phase.store(Phase::StartUp as u8, Ordering::SeqCst);
            Ok(TlsStream(stream))
        })
    }
}

/// The words of a failed handshake: the certificate's reason when
/// rustls refused it, else the connection's.
fn handshake_error(err: io::Error, host: &str, root_cert: Option<&PathBuf>) -> TlsError {
    let refused = err
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    let Some(rustls::Error::InvalidCertificate(reason)) = refused else {
        return TlsError::Handshake { source: err };
    };
    match (reason, root_cert) {
        (CertificateError::UnknownIssuer, Some(root_cert)) => TlsError::UnknownIssuer {
            root_cert: root_cert.clone(),
        },
        (
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            _,
        ) => TlsError::NameMismatch {
            host: host.to_string(),
            detail: reason.to_string(),
        },
        _ => TlsError::Certificate {
            source: rustls::Error::InvalidCertificate(reason.clone()),
        },
    }
}

/// The rustls configuration of `settings`: TLS 1.2 or 1.3, the ring
/// provider, the checks of the mode, and the ALPN name PostgreSQL 17
/// servers know (older ones ignore it).
fn client_config(settings: &TlsSettings) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    #[expect(
        deprecated,
        reason = "ring is chosen for a build without cmake or a system library; its \
                  key exchanges are the classical ones PostgreSQL servers offer"
    )]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match settings.roots() {
        Some(roots) => {
            let full = WebPkiServerVerifier::builder_with_provider(
                Arc::clone(roots),
                Arc::clone(&provider),
            )
            .build()
            .map_err(|err| TlsError::Setup {
                detail: err.to_string(),
            })?;
            if settings.mode == SslMode::VerifyFull {
                full
            } else {
                Arc::new(ChainOnly(full))
            }
        }
        None => Arc::new(AnyCertificate(Arc::clone(&provider))),
    };
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| TlsError::Setup {
            detail: err.to_string(),
        })?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(Arc::new(config))
}

/// Checks the chain up to an authority of the CA file, not the name:
/// `verify-ca`, and `prefer` or `require` with a CA file, as in libpq.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The name is checked after the chain, so a name refused means a
        // chain accepted.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Takes any certificate (`prefer` and `require` without a CA file, as
/// in libpq), yet checks the handshake's signatures with its key, so
/// that the session is with whoever holds that key.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
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
            &self.0.signature_verification_algorithms,
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
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The client's stream over a TLS session.
pub(super) struct TlsStream(tokio_rustls::client::TlsStream<Socket>);

impl AsyncRead for TlsStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(context, buffer)
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(context, buffer)
    }

    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(context)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(context)
    }
}

impl postgres::tls::TlsStream for TlsStream {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}
