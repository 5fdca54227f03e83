//! The lab's TLS: a self-signed certificate made at start (rcgen, ring) that covers
//! localhost, 127.0.0.1 and any extra names or addresses (the wire adds its
//! 198.18.x.2), and a rustls server configuration with session resumption (tickets
//! and a session cache), so clients can measure a resumed handshake. The same
//! certificate serves QUIC (`--http3`): [`LabTls::quic_config`].

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::ServerConfig;

use super::LabError;
use crate::net::tls::{provider, ALPN_H2, ALPN_HTTP11};

/// A generated certificate and the server configuration that uses it.
#[derive(Debug, Clone)]
pub struct LabTls {
    config: Arc<ServerConfig>,
    cert_pem: String,
    names: Vec<String>,
    /// Sessions can be resumed (false after [`LabTls::without_resumption`]).
    resumption: bool,
}

impl LabTls {
    /// Generates a self-signed certificate for localhost, 127.0.0.1, ::1 and
    /// `extra_names` (host names or IP addresses).
    pub fn self_signed(extra_names: &[String]) -> Result<LabTls, LabError> {
        let mut names: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        for n in extra_names {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
        let key = rcgen::generate_simple_self_signed(names.clone())
            .map_err(|e| LabError::Certificate(e.to_string()))?;
        let cert_der: CertificateDer<'static> = key.cert.der().clone();
        let key_der =
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.signing_key.serialize_der()));
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(vec![cert_der], key_der)?;
        // Stateless tickets for TLS 1.3 and 1.2; the default in-memory session cache
        // stays for TLS 1.2 session ids.
        config.ticketer = rustls::crypto::ring::Ticketer::new()?;
        config.alpn_protocols = vec![ALPN_HTTP11.to_vec()];
        Ok(LabTls {
            config: Arc::new(config),
            cert_pem: key.cert.pem(),
            names,
            resumption: true,
        })
    }

    /// The certificate, PEM-encoded (what `--cert-out` writes, for `--cacert`).
    /// The same certificate on a server that never resumes a TLS session: no session
    /// cache, no tickets (what `no-tls-resumption` is about).
    pub fn without_resumption(&self) -> LabTls {
        let mut config = (*self.config).clone();
        config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        config.ticketer = Arc::new(NoTickets);
        config.send_tls13_tickets = 0;
        LabTls {
            config: Arc::new(config),
            cert_pem: self.cert_pem.clone(),
            names: self.names.clone(),
            resumption: false,
        }
    }

    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The names and addresses the certificate covers.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The server configuration, offering h2 and http/1.1 in ALPN when `http2`, else
    /// http/1.1 only. Clones share the ticket keys and session cache.
    pub(crate) fn server_config(&self, http2: bool) -> Arc<ServerConfig> {
        let mut config = (*self.config).clone();
        config.alpn_protocols = if http2 {
            vec![ALPN_H2.to_vec(), ALPN_HTTP11.to_vec()]
        } else {
            vec![ALPN_HTTP11.to_vec()]
        };
        Arc::new(config)
    }

    /// The configuration for QUIC (HTTP/3): ALPN `h3`, TLS 1.3 only (QUIC's rule).
    /// With resumption, sessions are kept in `sessions` and 0-RTT is accepted —
    /// rustls allows early data only with stateful resumption, so QUIC gets no
    /// stateless tickets; without, no session is kept and no early data accepted.
    pub(crate) fn quic_config(
        &self,
        sessions: Arc<dyn rustls::server::StoresServerSessions>,
    ) -> ServerConfig {
        let mut config = (*self.config).clone();
        config.alpn_protocols = vec![ALPN_H3.to_vec()];
        if self.resumption {
            config.ticketer = Arc::new(NoTickets);
            config.session_storage = sessions;
            config.max_early_data_size = u32::MAX;
        }
        config
    }
}

/// HTTP/3's ALPN protocol id (RFC 9114, section 3.1).
pub(crate) const ALPN_H3: &[u8] = b"h3";

/// A ticketer that issues no tickets.
#[derive(Debug)]
struct NoTickets;

impl rustls::server::ProducesTickets for NoTickets {
    fn enabled(&self) -> bool {
        false
    }
    fn lifetime(&self) -> u32 {
        0
    }
    fn encrypt(&self, _plain: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn decrypt(&self, _cipher: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_covers_extra_names() {
        let tls = LabTls::self_signed(&["198.18.0.2".into(), "lab.test".into()]).unwrap();
        assert!(tls.cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(tls.names().iter().any(|n| n == "198.18.0.2"));
        assert!(tls.names().iter().any(|n| n == "localhost"));
        assert_eq!(tls.server_config(true).alpn_protocols[0], b"h2");
        assert_eq!(tls.server_config(false).alpn_protocols.len(), 1);
        let cache = rustls::server::ServerSessionMemoryCache::new(16);
        let quic = tls.quic_config(cache.clone());
        assert_eq!(quic.alpn_protocols, vec![b"h3".to_vec()]);
        assert_eq!(quic.max_early_data_size, u32::MAX);
        let quic = tls.without_resumption().quic_config(cache);
        assert_eq!(quic.max_early_data_size, 0);
        assert!(!quic.session_storage.can_cache());
    }
}
