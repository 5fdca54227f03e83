//! HTTP/3 rules: `no-http3` (an https server that offers no h3, and what a first
//! visit would save over QUIC) and `http3-slower` (h3 offered but slower than the
//! TCP protocol, or failing — UDP blocked — with the fallback diagnose saw).
//!
//! QUIC joins the transport and TLS 1.3 handshakes: one round trip before the
//! request, where TCP + TLS 1.3 take two and TCP + TLS 1.2 three (RFC 9000 section
//! 7, RFC 9001; RFC 8446 vs RFC 5246).

use super::evidence::judge;
use super::ms;
use crate::diagnose::facts::{Http3Facts, ProbeFacts};
use crate::diagnose::finding::{basis, Category, Finding, Severity};
use crate::stats::interval::{shift, Method};

/// Round trips a first visit over QUIC saves against this TLS version over TCP.
fn round_trips_saved(tls_version: &str) -> f64 {
    if tls_version.contains("1.2") {
        2.0
    } else {
        1.0
    }
}

/// `no-http3` (info): diagnose of an https URL saw no HTTP/3 offer (`Alt-Svc` without
/// `h3`), and h3 was not asked for; priced at one round trip (TLS 1.3) or two (TLS
/// 1.2) per first visit, at the measured min RTT.
pub fn no_http3(p: &ProbeFacts, h3: &Http3Facts) -> Option<Finding> {
    if !p.https || h3.port.is_some() || p.http_version == "HTTP/3" {
        return None;
    }
    let fresh = p.fresh.as_ref().filter(|f| f.count > 0)?;
    let version = p
        .tls
        .first()
        .map(|t| t.version.clone())
        .unwrap_or_else(|| "TLSv1.3".into());
    let trips = round_trips_saved(&version);
    let rtt = p.tcp.map(|t| t.min_rtt_ms).filter(|r| *r > 0.0);
    let priced = rtt
        .map(|r| format!(" (≈{} at the measured {} RTT)", ms(trips * r), ms(r)))
        .unwrap_or_default();
    let s = if trips == 1.0 { "" } else { "s" };
    let rr = if h3.https_rr_checked {
        " nor in its HTTPS DNS record"
    } else {
        ""
    };
    let f = Finding::new(
        "no-http3",
        Category::Connection,
        Severity::Info,
        format!(
            "no HTTP/3 offered (no h3 in Alt-Svc{rr}): a first visit over QUIC would \
             save {trips:.0} round trip{s}{priced} of the {} TCP + {} handshakes",
            ms(fresh.p50.connect + fresh.p50.tls),
            version.replace("TLSv", "TLS ")
        ),
    )
    .text("alt_svc", h3.alt_svc.clone().unwrap_or_default())
    .text("tls_version", version)
    .num("round_trips_saved", trips)
    .opt_num("min_rtt_ms", rtt)
    .num("handshake_ms", fresh.p50.connect + fresh.p50.tls);
    let f = match rtt {
        Some(r) => f.saving(trips * r, fresh.p50.ttfb, basis::FRESH),
        None => f,
    };
    Some(f.advice(
        "serve HTTP/3 (QUIC over UDP on the https port) and advertise it with \
         `Alt-Svc: h3=\":443\"` (and an HTTPS DNS record with alpn=h3, which browsers \
         read before their first connection): Caddy does by default, nginx ≥ 1.25 with `listen 443 \
         quic` and `add_header Alt-Svc 'h3=\":443\"; ma=86400'`; open UDP 443 in the \
         firewall",
    ))
}

/// `http3-slower` (warn): h3 was offered (or asked for with `--http3`) but failed —
/// nothing answered over UDP, as when a firewall drops it — and diagnose fell back to
/// TCP; or it answered but even its fastest fresh TTFB (less the time latscope's
/// threads waited for a CPU, per request) was above the TCP protocol's p50 by ≥ 5 ms
/// and ≥ 20 % — or its median was, with packets lost (≥ one per two fresh visits) —
/// where it should be a round trip below. With each fresh visit's wait for a CPU
/// measured, the visits (each less its wait) must also be slower than TCP's by ≥ 5 ms
/// and ≥ 20 % with 95 % confidence (the Hodges–Lehmann interval).
pub fn http3_slower(p: &ProbeFacts, h3: &Http3Facts) -> Option<Finding> {
    let port = h3.port?;
    let fallback = if p.http_version.is_empty() {
        "TCP".to_string()
    } else {
        p.http_version.clone()
    };
    let tcp_fresh = p.fresh.as_ref().filter(|f| f.count > 0).map(|f| f.p50.ttfb);
    let offer = match (&h3.https_rr, &h3.alt_svc) {
        (Some(r), _) => format!("HTTPS record: {r}"),
        (None, Some(a)) => format!("Alt-Svc: {a}"),
        (None, None) => "--http3".to_string(),
    };
    if let Some(error) = &h3.error {
        let f = Finding::new(
            "http3-slower",
            Category::Connection,
            Severity::Warn,
            format!(
                "HTTP/3 offered on UDP port {port} ({offer}) but it failed: {error}; fell \
                 back to {fallback}{}",
                tcp_fresh
                    .map(|t| format!(" (fresh TTFB {})", ms(t)))
                    .unwrap_or_default()
            ),
        )
        .text("alt_svc", h3.alt_svc.clone().unwrap_or_default())
        .opt_text("https_rr", h3.https_rr.clone())
        .count("port", u64::from(port))
        .text("error", error.clone())
        .text("fallback", fallback)
        .opt_num("fallback_fresh_ttfb_ms", tcp_fresh);
        return Some(f.advice(
            "let UDP through to the https port (firewalls and some networks drop it), or \
             stop advertising h3 (Alt-Svc, HTTPS record) where it cannot be reached: \
             browsers try it, wait, and fall back",
        ));
    }
    let (h3_fresh, tcp_fresh) = (h3.fresh_ttfb_ms?, tcp_fresh?);
    let h3_best = h3.fresh_ttfb_min_ms.unwrap_or(h3_fresh).min(h3_fresh);
    let waited = h3.client_cpu_wait_per_visit_ms.unwrap_or(0.0);
    let slower = |t: f64| t - tcp_fresh >= 5.0 && t >= 1.2 * tcp_fresh;
    // With each visit's own wait for a CPU known, the whole comparison: h3's fresh
    // visits (each less that wait) against TCP's, ≥ 5 ms and ≥ 20 % slower with
    // 95 % confidence.
    let tcp_samples = p.fresh.as_ref().map_or(&[][..], |f| &f.ttfb_ms[..]);
    let judged = (!h3.fresh_ttfb_samples_ms.is_empty()).then(|| {
        judge(
            "h3 − TCP fresh TTFB (h3 less latscope's wait for a CPU), ms",
            shift(tcp_samples, &h3.fresh_ttfb_samples_ms),
            h3_fresh - waited - tcp_fresh,
            [h3.fresh_ttfb_samples_ms.len(), tcp_samples.len()],
            5.0_f64.max(0.2 * tcp_fresh),
            Method::HodgesLehmann,
        )
    });
    // Even QUIC's fastest visit, less the time latscope itself waited for a CPU:
    // QUIC runs in user space and TCP in the kernel, so a busy client slows the
    // h3 side alone; a burst of noise slows some visits, a slow path or server all.
    // Or its median, when the fresh visits lost packets (at least one per two
    // visits): each loss waits for a retransmission, so some visits are slow and
    // some not, and the loss says it is the path.
    let lost = h3.fresh_lost_per_visit.unwrap_or(0.0);
    let lossy = lost >= 0.5 && slower(h3_fresh - waited);
    let fires = match &judged {
        // Decided on the interval; the fastest visit must agree (a burst of noise
        // slows some visits, a slow path or server all).
        Some(j) => (j.fires() && slower(h3_best - waited)) || lossy,
        None => slower(h3_best - waited) || lossy,
    };
    // The fastest visit says slower but the visits are too few (or too spread) for
    // the interval to tell: a note saying how many visits would, never silence.
    if let Some(j) = judged.as_ref().filter(|j| j.undecided()) {
        if !fires && slower(h3_best - waited) {
            return Some(super::evidence::not_enough(
                "http3-slower",
                Category::Connection,
                "is HTTP/3 slower than TCP here",
                "ms",
                j.confidence.clone()?,
                &super::evidence::rerun_diagnose(&p.url, ""),
            ));
        }
    }
    if !fires {
        return None;
    }
    let extra = h3_fresh - tcp_fresh;
    let losses = if lost > 0.0 {
        format!(", {lost:.1} packets lost per visit")
    } else {
        String::new()
    };
    let f = Finding::new(
        "http3-slower",
        Category::Connection,
        Severity::Warn,
        format!(
            "HTTP/3 is slower than {fallback} here: fresh TTFB p50 {} over QUIC vs {} \
                 (+{}; its fastest {}{losses}), where it should save a round trip",
            ms(h3_fresh),
            ms(tcp_fresh),
            ms(extra),
            ms(h3_best)
        ),
    )
    .text("alt_svc", h3.alt_svc.clone().unwrap_or_default())
    .opt_text("https_rr", h3.https_rr.clone())
    .count("port", u64::from(port))
    .num("h3_fresh_ttfb_ms", h3_fresh)
    .num("h3_fresh_ttfb_min_ms", h3_best)
    .opt_num(
        "client_cpu_wait_per_visit_ms",
        h3.client_cpu_wait_per_visit_ms,
    )
    .opt_num("fresh_lost_packets_per_visit", h3.fresh_lost_per_visit)
    .num("fallback_fresh_ttfb_ms", tcp_fresh)
    .opt_num("h3_reused_ttfb_ms", h3.reused_ttfb_ms)
    .text("fallback", fallback);
    let f = match judged.and_then(|j| j.confidence) {
        Some(c) => f.confidence(c),
        None => f,
    };
    Some(f.advice(
        "check the path for UDP throttling or loss (QUIC's lost packets in `probe \
             --http3`) and the server's QUIC settings; until then browsers are better \
             off on TCP",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::facts::TlsFacts;
    use crate::diagnose::rules::testutil::{far_probe, healthy_probe};

    fn https(mut p: ProbeFacts, version: &str) -> ProbeFacts {
        p.https = true;
        p.http_version = "HTTP/2".into();
        p.tls = vec![TlsFacts {
            version: version.into(),
            alpn: Some("h2".into()),
            resumed: false,
        }];
        p
    }

    /// No offer: one round trip saved against TLS 1.3, two against TLS 1.2, priced
    /// at the min RTT; quiet on plain http and when h3 is offered.
    #[test]
    fn no_http3_prices_the_round_trips() {
        let p = https(far_probe(), "TLSv1.3");
        let rtt = p.tcp.unwrap().min_rtt_ms;
        let f = no_http3(&p, &Http3Facts::default()).unwrap();
        assert_eq!(f.evidence_f64("round_trips_saved"), Some(1.0));
        assert_eq!(f.saving_ms, Some((rtt * 1000.0).round() / 1000.0));
        assert_eq!(f.saving_basis.as_deref(), Some("fresh"));
        let f = no_http3(&https(far_probe(), "TLSv1.2"), &Http3Facts::default()).unwrap();
        assert_eq!(f.evidence_f64("round_trips_saved"), Some(2.0));
        assert!(f.title.contains("2 round trips"), "{}", f.title);
        let offered = Http3Facts {
            alt_svc: Some("h3=\":443\"".into()),
            port: Some(443),
            fresh_ttfb_ms: Some(1.0),
            ..Http3Facts::default()
        };
        assert!(no_http3(&p, &offered).is_none());
        assert!(no_http3(&healthy_probe(), &Http3Facts::default()).is_none());
    }

    /// Issue 29: h3 visits that, less the time latscope waited for a CPU during each,
    /// spread around TCP's (one slow, most not) stay quiet although the fastest is
    /// over; three visits, too few for any interval, are a note that more visits would
    /// tell, never a warning; visits all 40 % slower fire with their interval.
    #[test]
    fn http3_slower_decides_on_the_visits() {
        use crate::diagnose::rules::testutil::spread;
        let p = https(far_probe(), "TLSv1.3");
        let tcp = p.fresh.as_ref().unwrap().p50.ttfb;
        let noisy = Http3Facts {
            port: Some(443),
            fresh_ttfb_ms: Some(tcp + 20.0),
            fresh_ttfb_min_ms: Some(tcp * 1.3),
            fresh_ttfb_samples_ms: spread(tcp + 10.0, 60.0, 10),
            ..Http3Facts::default()
        };
        let undecided = |h: &Http3Facts| {
            let f = http3_slower(&p, h).expect("a note");
            assert_eq!(f.severity, Severity::Info, "{f:?}");
            assert!(f.title.contains("not enough samples"), "{}", f.title);
            assert_eq!(f.confidence.as_ref().unwrap().verdict, "undecided");
        };
        assert!(http3_slower(&p, &noisy).is_none());
        undecided(&Http3Facts {
            fresh_ttfb_ms: Some(tcp * 1.4),
            fresh_ttfb_samples_ms: spread(tcp * 1.4, 2.0, 3),
            ..noisy.clone()
        });
        let slow = Http3Facts {
            fresh_ttfb_ms: Some(tcp * 1.4),
            fresh_ttfb_samples_ms: spread(tcp * 1.4, 2.0, 10),
            ..noisy
        };
        let f = http3_slower(&p, &slow).expect("fires");
        assert_eq!(f.confidence.as_ref().unwrap().verdict, "above");
    }

    /// Offered but failing: fires with the fallback; offered and slower by ≥ 5 ms
    /// and ≥ 20 % even at its fastest: fires; slower only at the median, or only by
    /// the time the client waited for a CPU, as fast or a little slower: quiet.
    #[test]
    fn http3_slower_on_failure_or_a_real_loss() {
        let p = https(far_probe(), "TLSv1.3");
        let tcp = p.fresh.as_ref().unwrap().p50.ttfb;
        let failed = Http3Facts {
            alt_svc: Some("h3=\":8443\"; ma=60".into()),
            port: Some(8443),
            error: Some("no answer over UDP within 2 s".into()),
            ..Http3Facts::default()
        };
        let f = http3_slower(&p, &failed).unwrap();
        assert_eq!(f.evidence_str("fallback"), Some("HTTP/2"));
        assert!(f.title.contains("fell back to HTTP/2"), "{}", f.title);
        let slow = Http3Facts {
            port: Some(443),
            fresh_ttfb_ms: Some(tcp * 1.5 + 5.0),
            ..failed.clone()
        };
        let slow = Http3Facts {
            error: None,
            ..slow
        };
        let f = http3_slower(&p, &slow).unwrap();
        assert_eq!(f.evidence_f64("h3_fresh_ttfb_min_ms"), slow.fresh_ttfb_ms);
        // Slower at the median, but its fastest visit was not: noise on this side
        // (a busy client), not the path or the server.
        let mixed = Http3Facts {
            fresh_ttfb_min_ms: Some(tcp),
            ..slow.clone()
        };
        assert!(http3_slower(&p, &mixed).is_none());
        let all_slow = Http3Facts {
            fresh_ttfb_min_ms: Some(tcp * 1.3 + 5.0),
            ..slow.clone()
        };
        let f = http3_slower(&p, &all_slow).unwrap();
        assert!(f.title.contains("its fastest"), "{}", f.title);
        // The same, but latscope's threads waited for a CPU about as long as h3 lost:
        // this machine was busy, which slows QUIC (user space) and not TCP (kernel).
        let busy = Http3Facts {
            client_cpu_wait_per_visit_ms: Some(tcp * 0.3 + 5.0),
            ..all_slow.clone()
        };
        assert!(http3_slower(&p, &busy).is_none());
        let idle = Http3Facts {
            client_cpu_wait_per_visit_ms: Some(0.01),
            ..all_slow.clone()
        };
        let f = http3_slower(&p, &idle).unwrap();
        assert_eq!(f.evidence_f64("client_cpu_wait_per_visit_ms"), Some(0.01));
        // Slower at the median, not at its fastest, but losing packets: the path.
        let lossy = Http3Facts {
            fresh_lost_per_visit: Some(1.5),
            ..mixed.clone()
        };
        let f = http3_slower(&p, &lossy).unwrap();
        assert!(
            f.title.contains("1.5 packets lost per visit"),
            "{}",
            f.title
        );
        let rare = Http3Facts {
            fresh_lost_per_visit: Some(0.2),
            ..mixed.clone()
        };
        assert!(http3_slower(&p, &rare).is_none());
        let fine = Http3Facts {
            fresh_ttfb_ms: Some(tcp - 40.0),
            ..slow.clone()
        };
        assert!(http3_slower(&p, &fine).is_none());
        let close = Http3Facts {
            fresh_ttfb_ms: Some(tcp + 3.0),
            ..slow
        };
        assert!(http3_slower(&p, &close).is_none());
        assert!(http3_slower(&p, &Http3Facts::default()).is_none());
    }
}
