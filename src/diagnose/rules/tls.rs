//! TLS version rules: `old-tls-version` — a server that negotiated TLS 1.2 with a
//! client offering 1.3. A full TLS 1.2 handshake takes two round trips (RFC 5246
//! §7.3), TLS 1.3's one (RFC 8446 §2): every new visitor pays one round trip more.
//! Priced at the kernel's min RTT (the network's round trip, not the handshake's
//! CPU), or half the measured TLS phase when there is no RTT; it also says whether
//! resumption works (a resumed 1.2 handshake takes one round trip, as 1.3's full one
//! does, so returning visitors lose less).

use super::ms;
use crate::diagnose::facts::ProbeFacts;
use crate::diagnose::finding::{basis, Category, Finding, Severity};

/// The saving at which the finding is a warning rather than a note, ms.
const WARN_MS: f64 = 5.0;

/// `old-tls-version`: a https probe whose connections negotiated TLS 1.2 (or older).
pub fn old_tls_version(p: &ProbeFacts) -> Option<Finding> {
    let version = p.tls.first().map(|t| t.version.as_str())?;
    if !p.https || version.is_empty() || version.contains("1.3") {
        return None;
    }
    let fresh = p.fresh.as_ref().filter(|s| s.count > 0)?;
    let tls_ms = fresh.p50.tls;
    // One round trip of the network; without the kernel's RTT, half the full
    // handshake (two round trips) as measured.
    let (rtt, from) = match p.tcp.map(|t| t.min_rtt_ms).filter(|r| *r > 0.0) {
        Some(r) => (r, "min RTT"),
        None => (tls_ms / 2.0, "half the TLS phase"),
    };
    let resumes =
        p.resumed.as_ref().is_some_and(|r| r.count > 0) || p.tls.iter().skip(1).any(|t| t.resumed);
    let sev = if rtt >= WARN_MS {
        Severity::Warn
    } else {
        Severity::Info
    };
    let resumption = if resumes {
        "sessions resume, so returning visitors pay one round trip, as every visitor \
         would with TLS 1.3"
    } else {
        "no session resumption either: returning visitors pay both round trips too"
    };
    Some(
        Finding::new(
            "old-tls-version",
            Category::Connection,
            sev,
            format!(
                "the server negotiates {version}, not TLS 1.3: every new visitor pays one \
                 round trip more ({} at the {from}; TLS {} p50); {resumption}",
                ms(rtt),
                ms(tls_ms)
            ),
        )
        .text("tls_version", version)
        .count("round_trips", 2)
        .count("round_trips_tls13", 1)
        .num("round_trip_ms", rtt)
        .num("tls_ms", tls_ms)
        .text("resumption", if resumes { "works" } else { "none" })
        .saving(rtt, fresh.p50.ttfb, basis::FRESH)
        .advice(
            "enable TLS 1.3 on the server or its proxy (nginx: ssl_protocols TLSv1.2 \
             TLSv1.3; HAProxy: ssl-min-ver TLSv1.2 without ssl-max-ver TLSv1.2), keeping \
             1.2 for old clients; and session tickets or a shared session cache",
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::facts::TlsFacts;
    use crate::diagnose::rules::testutil::{far_probe, healthy_probe};

    fn https(version: &str, resumed: bool) -> ProbeFacts {
        let mut p = far_probe();
        p.https = true;
        if let Some(f) = p.fresh.as_mut() {
            f.p50.tls = 221.0;
            f.p50.ttfb += 221.0;
        }
        p.tls = vec![
            TlsFacts {
                version: version.into(),
                alpn: Some("h2".into()),
                resumed: false,
            },
            TlsFacts {
                version: version.into(),
                alpn: Some("h2".into()),
                resumed,
            },
        ];
        p
    }

    /// RFC 8446 §2 vs RFC 5246 §7.3: TLS 1.2 fires priced at one 110 ms round trip
    /// and says whether sessions resume; TLS 1.3, plain http and a probe without TLS
    /// facts are quiet.
    #[test]
    fn fires_on_tls12_only() {
        let f = old_tls_version(&https("TLSv1.2", true)).expect("fires");
        assert_eq!(f.severity, Severity::Warn);
        assert_eq!(f.saving_ms, Some(110.0));
        assert_eq!(f.evidence_str("resumption"), Some("works"));
        assert!(f.title.contains("TLSv1.2, not TLS 1.3"), "{}", f.title);
        assert!(f.title.contains("110 ms at the min RTT"), "{}", f.title);
        let f = old_tls_version(&https("TLSv1.2", false)).unwrap();
        assert_eq!(f.evidence_str("resumption"), Some("none"));
        assert!(f.title.contains("both round trips"), "{}", f.title);
        assert!(old_tls_version(&https("TLSv1.3", false)).is_none());
        let mut plain = https("TLSv1.2", false);
        plain.https = false;
        assert!(old_tls_version(&plain).is_none());
        assert!(old_tls_version(&healthy_probe()).is_none());
        // Without the kernel's RTT: half the measured two-round-trip handshake.
        let mut p = https("TLSv1.2", false);
        p.tcp = None;
        assert_eq!(old_tls_version(&p).unwrap().saving_ms, Some(110.5));
    }
}
