//! The one-paragraph "where the time goes": a fresh request's TTFB split into DNS,
//! TCP handshake, TLS, one network round trip (the kernel's min RTT) and server time
//! (`wait` − min RTT) — "edge → origin + server" behind a CDN or proxy, because the
//! kernel RTT then ends at the edge, or just "edge (cache hit)" when the edge answered
//! from its cache — with the handshakes also counted in round trips,
//! and one piece of advice for the biggest part.

use super::facts::{ProbeFacts, SeriesFacts};
use super::rules::{ms, time_label, EDGE_HIT};
use crate::probe::HandshakeTrips;

/// A named part of the TTFB, ms.
struct Part {
    name: String,
    ms: f64,
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Dns,
    Handshake,
    RoundTrip,
    Server,
}

fn advice(kind: Kind, proxied: bool, label: &str) -> &'static str {
    match kind {
        Kind::Dns => "DNS is the biggest part: use a closer or caching resolver and longer TTLs",
        Kind::Handshake => "reuse connections or put a keep-alive proxy near users",
        Kind::RoundTrip => {
            "the distance is the biggest part: serve from closer to users (a caching edge) \
             and cut round trips"
        }
        Kind::Server if label == EDGE_HIT => {
            "the edge answers from its cache, and its own time is the biggest part: the \
             edge is busy or slow (compare another PoP or CDN)"
        }
        Kind::Server if proxied => {
            "the time behind the edge is the biggest part: make the edge cache the response, \
             or bring the origin closer to the edge and faster"
        }
        Kind::Server => {
            "the server, or whatever is behind it, is the biggest part: profile it or cache \
             its responses (if it is a proxy, --origin ADDR splits the hop to its upstream)"
        }
    }
}

/// "TTFB 230 ms (fresh connection) = 2.00 ms DNS + 110 ms TCP handshake + 110 ms network
/// round trip + 8.00 ms server; …". `None` when the probe has no series.
pub fn where_the_time_goes(p: &ProbeFacts, proxied: bool) -> Option<String> {
    let (series, fresh): (&SeriesFacts, bool) = match (&p.fresh, &p.reused) {
        (Some(f), _) if f.count > 0 => (f, true),
        (_, Some(r)) if r.count > 0 => (r, false),
        _ => return None,
    };
    let ph = series.p50;
    let ttfb = ph
        .ttfb
        .max(ph.dns + ph.connect + ph.tls + ph.send + ph.wait);
    let label = time_label(p, proxied);
    let rtt = p.tcp.map(|t| t.min_rtt_ms).filter(|r| *r > 0.0);
    let mut parts = vec![
        Part {
            name: "DNS".into(),
            ms: ph.dns,
            kind: Kind::Dns,
        },
        Part {
            // Over HTTP/3 the connect phase is QUIC's handshake (transport and TLS).
            name: if p.http_version == "HTTP/3" {
                "QUIC handshake (transport + TLS)".into()
            } else {
                "TCP handshake".into()
            },
            ms: ph.connect,
            kind: Kind::Handshake,
        },
        Part {
            name: "TLS handshake".into(),
            ms: ph.tls,
            kind: Kind::Handshake,
        },
    ];
    let before_wait = ph.dns + ph.connect + ph.tls;
    let after = (ttfb - before_wait).max(0.0);
    match rtt {
        Some(r) => {
            let trip = r.min(after);
            parts.push(Part {
                name: "network round trip".into(),
                ms: trip,
                kind: Kind::RoundTrip,
            });
            // The server's time is the probe's one number (reused wait − min RTT);
            // what a fresh request spends beyond it is said apart, so the parts still
            // add up to its TTFB (issue 37 item 4: one truth per number).
            let rest = after - trip;
            let server = p
                .server_time_ms
                .filter(|_| fresh)
                .map_or(rest, |s| s.min(rest));
            parts.push(Part {
                name: label.into(),
                ms: server,
                kind: Kind::Server,
            });
            if rest - server >= 0.005 {
                parts.push(Part {
                    name: "more on a new connection".into(),
                    ms: rest - server,
                    kind: Kind::Server,
                });
            }
        }
        None => parts.push(Part {
            name: format!("request round trip + {label}"),
            ms: after,
            kind: Kind::Server,
        }),
    }
    let shown: Vec<String> = parts
        .iter()
        .filter(|x| x.ms >= 0.005 || x.kind == Kind::Server)
        .map(|x| format!("{} {}", ms(x.ms), x.name))
        .collect();
    let mut text = format!(
        "TTFB {} ({}) = {}",
        ms(ttfb),
        match (fresh, p.https) {
            (true, true) if p.http_version == "HTTP/3" => "fresh QUIC connection, full handshake",
            (true, true) => "fresh connection, full TLS handshake",
            (true, false) => "fresh connection",
            (false, _) => "reused connection",
        },
        shown.join(" + ")
    );
    // Counted from the phase rows over the min RTT, as everywhere (issue 30 item 3).
    if let Some(t) = HandshakeTrips::count(ph.connect, ph.tls, rtt).filter(|_| fresh) {
        let name = HandshakeTrips::connect_name(&p.http_version);
        text.push_str(&format!("; the handshakes take {}", t.text(name)));
    }
    if let Some(r) = p.resumed.as_ref().filter(|r| fresh && r.count > 0) {
        text.push_str(&format!(
            "; a new connection resuming its TLS session (a returning visitor): TTFB {}",
            ms(r.p50.ttfb)
        ));
    }
    if let Some(r) = p.reused.as_ref().filter(|r| fresh && r.count > 0) {
        text.push_str(&format!("; a reused connection: TTFB {}", ms(r.p50.ttfb)));
    }
    // Handshakes count together: their sum is what reuse saves.
    let mut buckets: Vec<(Kind, f64)> = Vec::new();
    for x in &parts {
        match buckets.iter_mut().find(|b| b.0 == x.kind) {
            Some(b) => b.1 += x.ms,
            None => buckets.push((x.kind, x.ms)),
        }
    }
    // On a tie the earlier part wins: a handshake can be avoided, distance cannot.
    let (top, _) = buckets
        .iter()
        .copied()
        .fold((Kind::Server, f64::NEG_INFINITY), |best, b| {
            if b.1 > best.1 {
                b
            } else {
                best
            }
        });
    // The whole request counts, not only its first byte: a body that arrives
    // long after it (Nagle + delayed ACK, a slow stream) is said and advised on.
    let body = super::rules::timing::receive_share(p).filter(|r| r.receive_ms >= 1.0);
    if let Some(r) = body {
        text.push_str(&format!(
            "; then the body takes {} more (receive: first → last byte), {:.0}% of a {} \
             request's {} total",
            ms(r.receive_ms),
            100.0 * r.receive_ms / r.total_ms,
            if r.reused { "reused" } else { "fresh" },
            ms(r.total_ms)
        ));
        if r.delayed_ack {
            text.push_str(" — the ≈40 ms of Nagle's algorithm meeting a delayed ACK");
        }
        text.push_str(&format!("; {}.", super::rules::timing::receive_advice(&r)));
    } else if ttfb < 1.0 {
        text.push_str("; all of it is under a millisecond: nothing to win here.");
    } else {
        text.push_str(&format!("; {}.", advice(top, proxied, label)));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::rules::testutil::{far_probe, healthy_probe};

    /// Story 2: 230 ms = 2 ms DNS + 110 ms handshake + 110 ms round trip + 8 ms server,
    /// one round trip of handshake, advice to reuse connections.
    #[test]
    fn story_two() {
        let s = where_the_time_goes(&far_probe(), false).unwrap();
        assert_eq!(
            s,
            "TTFB 230 ms (fresh connection) = 2.00 ms DNS + 110 ms TCP handshake + 110 ms \
             network round trip + 8.00 ms server; the handshakes take 1.0 round trips (TCP); a \
             reused connection: TTFB 118 ms; reuse connections or put a keep-alive proxy \
             near users."
        );
    }

    /// Behind a CDN the server part is "edge → origin + server", never "server".
    #[test]
    fn behind_a_cdn() {
        let mut p = far_probe();
        let f = p.fresh.as_mut().unwrap();
        f.p50.wait = 400.0;
        f.p50.ttfb = 512.0;
        let s = where_the_time_goes(&p, true).unwrap();
        assert!(s.contains("+ 290 ms edge → origin + server;"), "{s}");
        assert!(
            !s.contains(" server;") || s.contains("origin + server"),
            "{s}"
        );
        assert!(
            s.ends_with("bring the origin closer to the edge and faster."),
            "{s}"
        );
    }

    /// A CDN hit: the edge answered from its cache, so the time after the round trip
    /// is the edge's alone — "edge (cache hit)", no origin in it.
    #[test]
    fn behind_a_cdn_on_a_hit() {
        let mut p = far_probe();
        p.headers = crate::diagnose::Headers::from_pairs(&[
            ("cf-cache-status", "HIT"),
            ("via", "1.1 varnish"),
        ]);
        let f = p.fresh.as_mut().unwrap();
        f.p50.wait = 400.0;
        f.p50.ttfb = 512.0;
        let s = where_the_time_goes(&p, true).unwrap();
        assert!(s.contains("+ 290 ms edge (cache hit);"), "{s}");
        assert!(!s.contains("origin"), "{s}");
        assert!(s.ends_with("(compare another PoP or CDN)."), "{s}");
        // A miss still goes to the origin.
        p.headers = crate::diagnose::Headers::from_pairs(&[("cf-cache-status", "MISS")]);
        let s = where_the_time_goes(&p, true).unwrap();
        assert!(s.contains("edge → origin + server"), "{s}");
    }

    /// Without a kernel RTT the wait is not split; a reused-only probe says so.
    #[test]
    fn without_rtt_and_reused_only() {
        let mut p = far_probe();
        p.tcp = None;
        p.fresh = None;
        let s = where_the_time_goes(&p, false).unwrap();
        assert!(
            s.starts_with("TTFB 118 ms (reused connection) = 118 ms request round trip + server"),
            "{s}"
        );
    }

    /// Loopback: everything under a millisecond, and it says there is nothing to win.
    #[test]
    fn loopback() {
        let s = where_the_time_goes(&healthy_probe(), false).unwrap();
        assert!(
            s.starts_with("TTFB 0.47 ms (fresh connection) = 0.05 ms DNS"),
            "{s}"
        );
        assert!(s.ends_with("nothing to win here."), "{s}");
        let mut p = healthy_probe();
        p.fresh = None;
        p.reused = None;
        assert!(where_the_time_goes(&p, false).is_none());
    }

    /// Issue 12.4: TTFB under a millisecond, but the body takes 46.9 ms on a reused
    /// connection: not "nothing to win here" — the body is said, with its advice.
    #[test]
    fn the_body_counts() {
        let mut p = healthy_probe();
        p.body_bytes = 26;
        let r = p.reused.as_mut().unwrap();
        r.p50.receive = 46.9;
        r.p50.ttfb = 0.40;
        r.p50.total = 47.6;
        let s = where_the_time_goes(&p, false).unwrap();
        assert!(!s.contains("nothing to win"), "{s}");
        assert!(s.contains("then the body takes 46.9 ms more"), "{s}");
        assert!(s.contains("delayed ACK"), "{s}");
        assert!(s.ends_with("which the client delays by ≈40 ms."), "{s}");
    }
}
