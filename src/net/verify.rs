//! Verifying the server's certificate: the web PKI (built-in roots plus `--cacert`),
//! and one case the web PKI refuses but OpenSSL and curl accept — a `--cacert` file
//! that holds exactly the server's own certificate (the usual `openssl req -x509`
//! self-signed certificate, which OpenSSL marks CA:TRUE). Such a pinned certificate is
//! still checked for its validity dates and the server's name; the handshake proves
//! the server holds its key.
//!
//! When a certificate is refused, the error names the real reason in words (expired,
//! wrong name, self-signed, issued by an unknown CA, a CA used as the server's own
//! certificate) and gives advice only where it adds something: never "pass --cacert"
//! to a user who did.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, DigitallySignedStruct, Error, OtherError, RootCertStore, SignatureScheme,
};

/// Why the server's certificate was refused, in words for people (carried inside
/// `rustls::Error::InvalidCertificate(CertificateError::Other(..))`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CertRefused(pub String);

/// The web PKI verifier plus the `--cacert` certificates a server may present as its
/// own certificate.
#[derive(Debug)]
pub(crate) struct Verifier {
    inner: Arc<WebPkiServerVerifier>,
    /// The certificates of `--cacert`, as DER (compared byte for byte with the leaf).
    pinned: Vec<CertificateDer<'static>>,
    /// `--cacert`'s path as given, when there is one (for messages).
    cacert: Option<String>,
    provider: Arc<CryptoProvider>,
}

impl Verifier {
    /// A verifier trusting `roots` (which already hold the `--cacert` certificates);
    /// `pinned` are `--cacert`'s certificates, `cacert` its path.
    pub(crate) fn new(
        roots: RootCertStore,
        pinned: Vec<CertificateDer<'static>>,
        cacert: Option<String>,
        provider: Arc<CryptoProvider>,
    ) -> Result<Verifier, Error> {
        let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| Error::General(e.to_string()))?;
        Ok(Verifier {
            inner,
            pinned,
            cacert,
            provider,
        })
    }

    /// The leaf is one of `--cacert`'s certificates: accept it if it is valid now and
    /// names the server.
    fn check_pinned(
        &self,
        leaf: &CertificateDer<'_>,
        name: &ServerName<'_>,
        now: UnixTime,
    ) -> Result<(), String> {
        let info = CertInfo::parse(leaf);
        if let Some(info) = &info {
            if let Some(why) = info.outside_validity(now) {
                return Err(why);
            }
        }
        let parsed = rustls::server::ParsedCertificate::try_from(leaf)
            .map_err(|e| format!("the server's certificate cannot be parsed: {e}"))?;
        rustls::client::verify_server_name(&parsed, name)
            .map_err(|_| wrong_name(info.as_ref(), name))
    }

    /// Words for a refusal by the web PKI.
    fn explain(&self, e: &Error, leaf: &CertificateDer<'_>, name: &ServerName<'_>) -> String {
        let info = CertInfo::parse(leaf);
        let Some(info) = info else {
            return e.to_string();
        };
        let Error::InvalidCertificate(ce) = e else {
            return e.to_string();
        };
        let cacert = self.cacert.as_deref();
        match ce {
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. } => info
                .outside_validity(UnixTime::now())
                .unwrap_or_else(|| e.to_string()),
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                wrong_name(Some(&info), name)
            }
            _ if info.self_signed => match cacert {
                Some(path) => format!(
                    "the server's certificate ({}) is self-signed, and it is not the \
                     certificate in --cacert {path}: pass the certificate this server \
                     presents (its PEM file), or -k to skip verification",
                    info.subject
                ),
                None => format!(
                    "the server's certificate ({}) is self-signed: pass that certificate \
                     with --cacert FILE to trust it, or -k to skip verification",
                    info.subject
                ),
            },
            _ if info.is_ca => format!(
                "the server presents a CA certificate ({}, CA:TRUE) as its own; that is \
                 accepted only when --cacert holds exactly this certificate{}",
                info.subject,
                cacert
                    .map(|p| format!(", and --cacert {p} holds another"))
                    .unwrap_or_default()
            ),
            CertificateError::UnknownIssuer => match cacert {
                Some(path) => format!(
                    "the server's certificate ({}) is issued by {}, which is neither among \
                     the built-in roots nor in --cacert {path}",
                    info.subject, info.issuer
                ),
                None => format!(
                    "the server's certificate ({}) is issued by {}, which is not trusted \
                     here: pass that CA's certificate with --cacert FILE, or -k to skip \
                     verification",
                    info.subject, info.issuer
                ),
            },
            _ => format!("the server's certificate ({}): {ce}", info.subject),
        }
    }
}

fn wrong_name(info: Option<&CertInfo>, name: &ServerName<'_>) -> String {
    let host = match name {
        ServerName::DnsName(d) => d.as_ref().to_string(),
        ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
        other => format!("{other:?}"),
    };
    let names = info
        .map(|i| {
            if i.names.is_empty() {
                "no names (no subjectAltName)".to_string()
            } else {
                i.names.join(", ")
            }
        })
        .unwrap_or_else(|| "other names".into());
    format!("the server's certificate is not valid for {host}: it covers {names}")
}

fn refused(msg: String) -> Error {
    Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(CertRefused(
        msg,
    )))))
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self
            .inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Ok(v) => Ok(v),
            Err(e) => {
                if self
                    .pinned
                    .iter()
                    .any(|p| p.as_ref() == end_entity.as_ref())
                {
                    return self
                        .check_pinned(end_entity, server_name, now)
                        .map(|()| ServerCertVerified::assertion())
                        .map_err(refused);
                }
                Err(refused(self.explain(&e, end_entity, server_name)))
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
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
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// What a message needs to know about a certificate.
#[derive(Debug, Clone, PartialEq)]
struct CertInfo {
    subject: String,
    issuer: String,
    self_signed: bool,
    is_ca: bool,
    not_before: i64,
    not_after: i64,
    not_before_text: String,
    not_after_text: String,
    /// subjectAltName DNS names and IP addresses.
    names: Vec<String>,
}

impl CertInfo {
    fn parse(der: &CertificateDer<'_>) -> Option<CertInfo> {
        use x509_parser::extensions::GeneralName;
        let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref()).ok()?;
        let names = cert
            .subject_alternative_name()
            .ok()
            .flatten()
            .map(|san| {
                san.value
                    .general_names
                    .iter()
                    .filter_map(|n| match n {
                        GeneralName::DNSName(d) => Some(d.to_string()),
                        GeneralName::IPAddress(b) => ip_text(b),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let validity = cert.validity();
        Some(CertInfo {
            subject: cert.subject().to_string(),
            issuer: cert.issuer().to_string(),
            self_signed: cert.subject().as_raw() == cert.issuer().as_raw(),
            is_ca: cert.is_ca(),
            not_before: validity.not_before.timestamp(),
            not_after: validity.not_after.timestamp(),
            not_before_text: validity.not_before.to_string(),
            not_after_text: validity.not_after.to_string(),
            names,
        })
    }

    /// Why the certificate is not valid at `now`, if it is not.
    fn outside_validity(&self, now: UnixTime) -> Option<String> {
        let now = now.as_secs() as i64;
        if now > self.not_after {
            Some(format!(
                "the server's certificate ({}) expired on {}",
                self.subject, self.not_after_text
            ))
        } else if now < self.not_before {
            Some(format!(
                "the server's certificate ({}) is not valid before {}",
                self.subject, self.not_before_text
            ))
        } else {
            None
        }
    }
}

fn ip_text(bytes: &[u8]) -> Option<String> {
    match bytes.len() {
        4 => Some(std::net::Ipv4Addr::from(<[u8; 4]>::try_from(bytes).ok()?).to_string()),
        16 => Some(std::net::Ipv6Addr::from(<[u8; 16]>::try_from(bytes).ok()?).to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn self_signed(names: &[&str], ca: bool) -> CertificateDer<'static> {
        let mut params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        if ca {
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        }
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().clone()
    }

    fn verifier(pinned: &[CertificateDer<'static>], path: Option<&str>) -> Verifier {
        let mut roots = RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for c in pinned {
            let _ = roots.add(c.clone());
        }
        Verifier::new(
            roots,
            pinned.to_vec(),
            path.map(String::from),
            super::super::tls::provider(),
        )
        .unwrap()
    }

    fn verify(v: &Verifier, leaf: &CertificateDer<'_>, host: &str) -> Result<(), String> {
        let name = ServerName::try_from(host.to_string()).unwrap();
        v.verify_server_cert(leaf, &[], &name, &[], UnixTime::now())
            .map(|_| ())
            .map_err(|e| match e {
                Error::InvalidCertificate(CertificateError::Other(o)) => o.0.to_string(),
                other => panic!("not a worded refusal: {other:?}"),
            })
    }

    /// A CA:TRUE self-signed certificate passed as --cacert is accepted as the leaf
    /// it is, for the names it covers only; another one is refused saying so.
    #[test]
    fn a_pinned_ca_leaf_is_accepted_for_its_names() {
        let leaf = self_signed(&["localhost", "127.0.0.1"], true);
        let v = verifier(std::slice::from_ref(&leaf), Some("c.pem"));
        verify(&v, &leaf, "localhost").unwrap();
        verify(&v, &leaf, "127.0.0.1").unwrap();
        let e = verify(&v, &leaf, "example.com").unwrap_err();
        assert!(
            e.contains("not valid for example.com") && e.contains("localhost"),
            "{e}"
        );
        let other = self_signed(&["localhost"], true);
        let e = verify(&v, &other, "localhost").unwrap_err();
        assert!(e.contains("not the certificate in --cacert c.pem"), "{e}");
    }

    /// A CA certificate (CA:TRUE) issued by a trusted CA but presented as the server's
    /// own is refused as what it is; a certificate from an unknown CA names its issuer.
    #[test]
    fn a_ca_as_leaf_and_an_unknown_issuer_are_named() {
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "Test Root");
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let ca_cert = ca_params.self_signed(&ca_key).unwrap().der().clone();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let sign = |ca: bool| {
            let mut p = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
            if ca {
                p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            }
            let key = rcgen::KeyPair::generate().unwrap();
            p.signed_by(&key, &issuer).unwrap().der().clone()
        };
        let v = verifier(std::slice::from_ref(&ca_cert), Some("ca.pem"));
        verify(&v, &sign(false), "localhost").unwrap();
        let e = verify(&v, &sign(true), "localhost").unwrap_err();
        assert!(e.contains("CA certificate") && e.contains("CA:TRUE"), "{e}");
        let e = verify(&verifier(&[], None), &sign(false), "localhost").unwrap_err();
        assert!(
            e.contains("issued by CN=Test Root") && e.contains("--cacert FILE"),
            "{e}"
        );
    }

    /// Without --cacert a self-signed certificate is refused as self-signed, with the
    /// advice to pass it; with --cacert the advice never repeats the flag.
    #[test]
    fn self_signed_without_cacert_says_so() {
        let leaf = self_signed(&["localhost"], false);
        let e = verify(&verifier(&[], None), &leaf, "localhost").unwrap_err();
        assert!(
            e.contains("self-signed") && e.contains("--cacert FILE"),
            "{e}"
        );
        let pinned = self_signed(&["localhost"], false);
        let e = verify(&verifier(&[pinned], Some("x.pem")), &leaf, "localhost").unwrap_err();
        assert!(!e.contains("--cacert FILE"), "{e}");
    }
}
