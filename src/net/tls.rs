//! TLS client configuration (rustls with the ring provider, chosen explicitly so
//! two enabled providers can never panic at run time).
//!
//! Certificates are verified against the built-in web roots plus `--cacert` (see
//! `verify`: a `--cacert` that is exactly the server's certificate is accepted, as
//! OpenSSL does), unless the user passed `-k`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::verify::Verifier;

/// ALPN protocol ids.
pub const ALPN_H2: &[u8] = b"h2";
pub const ALPN_HTTP11: &[u8] = b"http/1.1";

/// How a TLS client should behave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Accept any certificate (`-k`).
    pub insecure: bool,
    /// Extra trusted certificates (PEM).
    pub cacert: Option<PathBuf>,
    /// ALPN protocols to offer, most preferred first.
    pub alpn: Vec<Vec<u8>>,
}

/// Why a TLS configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsConfigError {
    #[error("cannot read --cacert {path}: {source}")]
    ReadCa {
        path: String,
        source: crate::input::InputError,
    },
    #[error("--cacert {0} holds no PEM certificate")]
    NoCertificate(String),
    #[error("--cacert {path}: {reason}")]
    BadCertificate { path: String, reason: String },
    #[error("TLS setup failed: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The crypto provider latscope uses everywhere.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds a client configuration. Session resumption uses rustls' in-memory store,
/// so connections made with the same `Arc<ClientConfig>` can resume.
pub fn client_config(opts: &TlsOptions) -> Result<Arc<ClientConfig>, TlsConfigError> {
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(server_verifier(opts)?)
        .with_no_client_auth();
    config.alpn_protocols = opts.alpn.clone();
    Ok(Arc::new(config))
}

/// How the server's certificate is checked: not at all with `-k` (handshake
/// signatures still are), else the built-in web roots plus `--cacert` (see `verify`).
/// Shared by TLS over TCP and by QUIC (`net::quic`).
pub fn server_verifier(opts: &TlsOptions) -> Result<Arc<dyn ServerCertVerifier>, TlsConfigError> {
    if opts.insecure {
        return Ok(Arc::new(NoVerify(provider())));
    }
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let mut pinned = Vec::new();
    if let Some(path) = &opts.cacert {
        for cert in read_pem_certs(path)? {
            // A certificate the web PKI cannot take as a root (e.g. a self-signed
            // leaf without CA:TRUE) may still be the server's own: it stays pinned.
            let _ = roots.add(cert.clone());
            pinned.push(cert);
        }
    }
    let verifier = Verifier::new(
        roots,
        pinned,
        opts.cacert.as_ref().map(|p| p.display().to_string()),
        provider(),
    )?;
    Ok(Arc::new(verifier))
}

/// The same configuration with session resumption switched off: every connection
/// pays the full handshake, as a first visit (or a curl loop) does.
pub fn without_resumption(config: &Arc<ClientConfig>) -> Arc<ClientConfig> {
    let mut c = (**config).clone();
    c.resumption = rustls::client::Resumption::disabled();
    Arc::new(c)
}

/// The largest `--cacert` file read: 16 MiB (the system's whole CA bundle is
/// about 200 KiB).
pub const MAX_CA_FILE: u64 = 16 << 20;

/// Reads every certificate from a PEM file (at most [`MAX_CA_FILE`]; a device is
/// refused before a byte is read).
pub fn read_pem_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let data =
        crate::input::read_capped(path, MAX_CA_FILE).map_err(|source| TlsConfigError::ReadCa {
            path: path.display().to_string(),
            source,
        })?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&data)
        .collect::<Result<_, _>>()
        .map_err(|e| TlsConfigError::BadCertificate {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsConfigError::NoCertificate(path.display().to_string()));
    }
    Ok(certs)
}

/// The server name to send in SNI and verify against.
pub fn server_name(
    host: &str,
) -> Result<ServerName<'static>, rustls::pki_types::InvalidDnsNameError> {
    ServerName::try_from(host.to_string())
}

/// Accepts every certificate (`-k`), but still checks handshake signatures so the
/// handshake itself is real.
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
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
