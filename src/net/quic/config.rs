//! The QUIC client's TLS: a rustls configuration from the same [`TlsOptions`] as TLS
//! over TCP (TLS 1.3 only, ALPN `h3`, sessions kept or not), wrapped so a
//! [`QuicClient`](super::QuicClient) can tell a resumed handshake (no certificate)
//! and keep the verifier's worded refusal.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use super::ALPN_H3;
use crate::net::tls::{self, TlsConfigError, TlsOptions};

/// A QUIC client configuration for HTTP/3 from the same options as TLS over TCP:
/// certificate verification unless `-k`, `--cacert` trusted, TLS 1.3 only (QUIC
/// needs it), ALPN `h3` (whatever `opts.alpn` says). `keep_sessions`: keep session
/// tickets (in rustls' in-memory store, shared by every connection made with this
/// configuration) so later connections resume and may send 0-RTT data; without it
/// every connection pays the full handshake, as a first visit does.
pub fn client_config(
    opts: &TlsOptions,
    keep_sessions: bool,
) -> Result<quinn::ClientConfig, TlsConfigError> {
    build_config(opts, keep_sessions, None)
}

/// What a [`QuicClient`](super::QuicClient) watches in its handshakes.
pub(super) struct Watch {
    pub full_handshakes: Arc<AtomicU64>,
    pub refused: Refused,
    pub tickets: Arc<Tickets>,
}

pub(super) fn build_config(
    opts: &TlsOptions,
    keep_sessions: bool,
    watch: Option<Watch>,
) -> Result<quinn::ClientConfig, TlsConfigError> {
    let mut verifier = tls::server_verifier(opts)?;
    let mut tickets = None;
    if let Some(w) = watch {
        verifier = Arc::new(Counting {
            inner: verifier,
            full_handshakes: w.full_handshakes,
            refused: w.refused,
        });
        tickets = Some(w.tickets);
    }
    let mut config = rustls::ClientConfig::builder_with_provider(tls::provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![ALPN_H3.to_vec()];
    if keep_sessions {
        config.enable_early_data = true;
        if let Some(tickets) = tickets {
            config.resumption = rustls::client::Resumption::store(Arc::new(TicketStore {
                inner: rustls::client::ClientSessionMemoryCache::new(256),
                tickets,
            }));
        }
    } else {
        config.resumption = rustls::client::Resumption::disabled();
    }
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(config)
        .map_err(|e| TlsConfigError::Rustls(rustls::Error::General(e.to_string())))?;
    Ok(quinn::ClientConfig::new(Arc::new(crypto)))
}

/// The session tickets servers sent a client that keeps sessions: how many so far,
/// and a wake-up for whoever waits for the next.
#[derive(Debug, Default)]
pub(super) struct Tickets {
    pub count: AtomicU64,
    pub arrived: tokio::sync::Notify,
}

/// rustls' in-memory session store (the default one, 256 servers), counting the
/// TLS 1.3 tickets put in.
#[derive(Debug)]
struct TicketStore {
    inner: rustls::client::ClientSessionMemoryCache,
    tickets: Arc<Tickets>,
}

impl rustls::client::ClientSessionStore for TicketStore {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: rustls::NamedGroup) {
        self.inner.set_kx_hint(server_name, group);
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<rustls::NamedGroup> {
        self.inner.kx_hint(server_name)
    }

    fn set_tls12_session(
        &self,
        server_name: ServerName<'static>,
        value: rustls::client::Tls12ClientSessionValue,
    ) {
        self.inner.set_tls12_session(server_name, value);
    }

    fn tls12_session(
        &self,
        server_name: &ServerName<'_>,
    ) -> Option<rustls::client::Tls12ClientSessionValue> {
        self.inner.tls12_session(server_name)
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.inner.remove_tls12_session(server_name);
    }

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: rustls::client::Tls13ClientSessionValue,
    ) {
        self.inner.insert_tls13_ticket(server_name, value);
        self.tickets.count.fetch_add(1, Ordering::Relaxed);
        self.tickets.arrived.notify_waiters();
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        self.inner.take_tls13_ticket(server_name)
    }
}

/// Where [`Counting`] leaves the worded reason of a refused certificate.
pub(super) type Refused = Arc<Mutex<Option<String>>>;

/// Counts the server certificates verified: a TLS 1.3 handshake that resumes a
/// session carries none, so a connection that completed without one more count
/// resumed (exact when one handshake runs at a time, as in the probe).
#[derive(Debug)]
struct Counting {
    inner: Arc<dyn ServerCertVerifier>,
    full_handshakes: Arc<AtomicU64>,
    /// The worded reason of the last certificate refused by `net::verify` (QUIC's
    /// error keeps only rustls' debug text of it).
    refused: Refused,
}

impl ServerCertVerifier for Counting {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.full_handshakes.fetch_add(1, Ordering::Relaxed);
        let verdict =
            self.inner
                .verify_server_cert(end_entity, intermediates, server_name, ocsp, now);
        if let Err(rustls::Error::InvalidCertificate(rustls::CertificateError::Other(o))) = &verdict
        {
            if let Some(r) = o.0.downcast_ref::<crate::net::verify::CertRefused>() {
                *self.refused.lock().unwrap_or_else(|e| e.into_inner()) = Some(r.0.clone());
            }
        }
        verdict
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
