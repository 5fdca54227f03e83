//! Content rules: `no-compression` (a text body sent uncompressed to a client that
//! accepts gzip, graded by the time it costs: warn when compressing saves ≥ 10 ms and
//! ≥ 10 % of a fresh request on the measured path, info otherwise — with what it
//! would save on a typical mobile path stated beside — and nothing when it saves
//! under 1.4 KiB, Lighthouse's floor), `redirect-chain` (each redirect costs a new
//! visitor a round trip, and a new connection when it changes origin) and
//! `redirect-not-followed` (the answer measured was a 3xx, not the page: RFC 9110
//! §15.4).

use super::ms;
use crate::diagnose::facts::{LoadFacts, ProbeFacts};
use crate::diagnose::finding::{basis, Category, Finding, Severity};
use crate::units::fmt_bytes;

/// Savings below this are not worth a finding (Lighthouse's text-compression audit
/// ignores savings under 1.4 KiB).
const MIN_SAVING: u64 = 1400;
/// What a fresh connection can receive in its first round trip: the initial
/// congestion window of 10 segments (RFC 6928) of 1460 bytes, about 14 KiB.
const INITIAL_CWND: u64 = 10 * 1460;
/// A typical mobile path, stated as such: Lighthouse's "Slow 4G" throttling (150 ms
/// RTT, 1.6 Mbit/s down).
const MOBILE_RTT_MS: f64 = 150.0;
const MOBILE_BITS_PER_S: f64 = 1.6e6;
/// A saving on the measured path is worth a warning from this many ms …
const WARN_MS: f64 = 10.0;
/// … and this share of the fresh request.
const WARN_SHARE: f64 = 0.10;
/// Text compresses about 3× or better with gzip (HTML, CSS, JS, JSON): the estimate
/// keeps a third of the body.
const RATIO: u64 = 3;

/// Round trips a fresh connection needs to receive `bytes` in slow start (the window
/// doubling from [`INITIAL_CWND`]).
fn slow_start_rounds(bytes: u64) -> u32 {
    let (mut sent, mut cwnd, mut rounds) = (0u64, INITIAL_CWND, 0u32);
    while sent < bytes && rounds < 64 {
        sent += cwnd;
        cwnd *= 2;
        rounds += 1;
    }
    rounds.max(1)
}

/// Whether a Content-Type is text that compresses well.
pub fn is_textual(content_type: &str) -> bool {
    let ct = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    ct.starts_with("text/")
        || ct.ends_with("+json")
        || ct.ends_with("+xml")
        || matches!(
            ct.as_str(),
            "application/json"
                | "application/javascript"
                | "application/x-javascript"
                | "application/xml"
                | "application/x-ndjson"
                | "application/graphql-response+json"
                | "image/svg+xml"
        )
}

/// `no-compression`.
pub fn no_compression(p: &ProbeFacts) -> Option<Finding> {
    let ct = p.headers.get("content-type")?;
    let encoding = p
        .headers
        .get("content-encoding")
        .map(|e| e.to_ascii_lowercase())
        .filter(|e| e != "identity");
    let compressed = p.body_bytes / RATIO;
    let saving = p.body_bytes - compressed;
    if !p.accept_encoding
        || encoding.is_some()
        || !is_textual(&ct)
        || saving < MIN_SAVING
        || !(200..300).contains(&p.status)
    {
        return None;
    }
    let (now, then) = (
        slow_start_rounds(p.body_bytes),
        slow_start_rounds(compressed),
    );
    // Each round trip of slow start saved is one min RTT on a fresh connection.
    let measured = match p.tcp {
        Some(t) if then < now => f64::from(now - then) * t.min_rtt_ms,
        _ => f64::NAN,
    };
    let fresh_total = p
        .fresh
        .as_ref()
        .filter(|s| s.count > 0)
        .map_or(f64::NAN, |s| s.p50.total);
    // On the mobile path the bytes cost time too, besides the round trips.
    let mobile =
        f64::from(now - then) * MOBILE_RTT_MS + saving as f64 * 8.0 / MOBILE_BITS_PER_S * 1000.0;
    let share = measured / fresh_total;
    let worth = measured >= WARN_MS && (!share.is_finite() || share >= WARN_SHARE);
    let severity = if worth {
        Severity::Warn
    } else {
        Severity::Info
    };
    let here = if measured.is_finite() {
        format!(
            "on this path it saves ≈{}{} per new visitor",
            ms(measured),
            if share.is_finite() {
                format!(" ({:.0} %)", share * 100.0)
            } else {
                String::new()
            }
        )
    } else {
        "on this path it saves bytes, not round trips".to_string()
    };
    Some(
        Finding::new(
            "no-compression",
            Category::Content,
            severity,
            format!(
                "a {} {ct} body is sent uncompressed although the client accepts gzip \
                 (about {} saved; {now} round trip{} of slow start on a fresh connection, \
                 about {then} compressed): {here}; on a typical mobile path (150 ms RTT, \
                 1.6 Mbit/s) ≈{}",
                fmt_bytes(p.body_bytes),
                fmt_bytes(saving),
                if now == 1 { "" } else { "s" },
                ms(mobile)
            ),
        )
        .count("body_bytes", p.body_bytes)
        .count("estimated_saving_bytes", saving)
        .count("fresh_round_trips", u64::from(now))
        .count("compressed_round_trips", u64::from(then))
        .text("content_type", ct)
        .num("mobile_saving_ms", mobile)
        .text(
            "mobile_path",
            "150 ms RTT, 1.6 Mbit/s (Lighthouse's slow 4G)",
        )
        .saving(measured, fresh_total, basis::FRESH)
        .advice(
            "enable gzip or brotli for text types on the server or proxy (and send \
             `Vary: Accept-Encoding`): text usually shrinks 3–10×, which saves round \
             trips on a fresh connection",
        ),
    )
}

/// Round trips a new visitor pays for one redirect from `from` to `location`: the
/// request itself, and when the hop changes origin (scheme, host or port) a new
/// connection — TCP's handshake, and on https at least TLS 1.3's one more. An
/// unknown `from` counts the request only.
pub fn hop_round_trips(from: &str, location: &str) -> u32 {
    let Ok(base) = url::Url::parse(from) else {
        return 1;
    };
    let Ok(next) = base.join(location) else {
        return 1;
    };
    if base.origin() == next.origin() {
        1
    } else if next.scheme() == "https" {
        3
    } else {
        2
    }
}

/// `redirect-chain`: two or more redirects, or one that costs ≥ 20 ms.
pub fn redirect_chain(p: &ProbeFacts) -> Option<Finding> {
    let hops = p.redirects.len();
    let total: f64 = p.redirects.iter().map(|r| r.time_ms).sum();
    if hops == 0 || (hops == 1 && total < 20.0) {
        return None;
    }
    let sev = if total >= 50.0 {
        Severity::Warn
    } else {
        Severity::Info
    };
    let trips: u32 = p
        .redirects
        .iter()
        .map(|r| hop_round_trips(&r.from, &r.location))
        .sum();
    // What the final URL takes once reached (a fresh request, as the hops were).
    let final_ms = p
        .fresh
        .as_ref()
        .filter(|s| s.count > 0)
        .or(super::steady(p))
        .map_or(0.0, |s| s.p50.total);
    let chain: Vec<String> = p
        .redirects
        .iter()
        .map(|r| format!("{} → {} ({})", r.status, r.location, ms(r.time_ms)))
        .collect();
    Some(
        Finding::new(
            "redirect-chain",
            Category::Content,
            sev,
            format!(
                "{hops} redirect{} before the answer, costing {} (≥ {trips} round trip{} \
                 for a new visitor)",
                if hops == 1 { "" } else { "s" },
                ms(total),
                if trips == 1 { "" } else { "s" },
            ),
        )
        .count("hops", hops as u64)
        .num("total_ms", total)
        .count("round_trips", u64::from(trips))
        .text("chain", chain.join("; "))
        // Linking straight to the final URL skips every hop.
        .saving(total, total + final_ms, basis::PER_REQUEST)
        .advice(
            "link straight to the final URL (scheme, host and trailing slash included) \
             and collapse chains into one redirect; use HSTS so browsers skip the \
             http → https hop",
        ),
    )
}

/// `redirect-not-followed`: the probe's answer was a redirect (a 3xx other than
/// 304), so its timings are the redirect's, not the page's (RFC 9110 §15.4: the
/// target is elsewhere). Measuring it as the page would say "nothing to win" about a
/// page never fetched.
pub fn redirect_not_followed(p: &ProbeFacts) -> Option<Finding> {
    if !(300..400).contains(&p.status) || p.status == 304 {
        return None;
    }
    let location = p.headers.get("location");
    let title = match &location {
        Some(l) => format!(
            "the answer is a {} redirect to {l}, not the page: these timings are the \
             redirect's",
            p.status
        ),
        None => format!(
            "the answer is a {} (a redirect status, without a Location), not a page",
            p.status
        ),
    };
    Some(
        Finding::new(
            "redirect-not-followed",
            Category::Content,
            Severity::Warn,
            title,
        )
        .count("status", u64::from(p.status))
        .opt_text("location", location)
        .advice(
            "measure the page itself: -L follows the redirect (as curl -L does) and \
             prices the chain, or give the final URL; link to the final URL so visitors \
             skip the hop",
        ),
    )
}

/// `redirect-not-followed` of a load run: responses that were redirects counted as
/// successes (as k6's `http_req_failed` and wrk do: a 3xx is not an error) — but the
/// load measured the redirect, not the page. Fires when ≥ 1 % of the responses were.
pub fn load_redirects(l: &LoadFacts) -> Option<Finding> {
    if l.redirects == 0 || l.requests == 0 || l.redirects * 100 < l.requests {
        return None;
    }
    let share = 100.0 * l.redirects as f64 / l.requests as f64;
    Some(
        Finding::new(
            "redirect-not-followed",
            Category::Content,
            Severity::Warn,
            format!(
                "{} of {} responses ({share:.0} %) were redirects ({}): counted as \
                 successful — not errors, but not the page either",
                l.redirects, l.requests, l.redirect_status
            ),
        )
        .count("redirects", l.redirects)
        .count("requests", l.requests)
        .count("status", u64::from(l.redirect_status))
        .num("share_pct", share)
        .advice(
            "load the URL the redirect points to (-L resolves it once before the run and \
             loads the final URL), so the latencies and availability are the page's",
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::facts::{Headers, RedirectHop};
    use crate::diagnose::rules::testutil::{far_probe, healthy_probe};

    fn text_probe(bytes: u64, extra: &[(&str, &str)]) -> ProbeFacts {
        let mut h = vec![("content-type", "text/html; charset=utf-8")];
        h.extend_from_slice(extra);
        ProbeFacts {
            headers: Headers::from_pairs(&h),
            body_bytes: bytes,
            ..healthy_probe()
        }
    }

    /// 20 KB of HTML without Content-Encoding: 2 round trips of slow start, 1
    /// compressed; on a 110 ms path that is a warning (110 ms of 231), on loopback
    /// (0.02 ms) only info — with the mobile path's ≈217 ms stated beside (one 150 ms
    /// round trip and 13,334 bytes at 1.6 Mbit/s); 4 KiB is info (saves bytes, not a
    /// round trip); 1.6 KiB (saving < 1.4 KiB, Lighthouse's floor) is quiet; gzip,
    /// binary, or a client that did not ask are quiet.
    #[test]
    fn compression_both_ways() {
        let f = no_compression(&text_probe(20_000, &[])).expect("fires");
        assert_eq!(f.severity, Severity::Info, "{}", f.title);
        assert!(f.title.contains("on a typical mobile path"), "{}", f.title);
        assert_eq!(f.evidence_f64("mobile_saving_ms"), Some(216.67));
        let mut far = text_probe(20_000, &[]);
        far.tcp = far_probe().tcp;
        far.fresh = far_probe().fresh;
        assert_eq!(no_compression(&far).unwrap().severity, Severity::Warn);
        assert_eq!(f.evidence_f64("fresh_round_trips"), Some(2.0));
        assert_eq!(f.evidence_f64("compressed_round_trips"), Some(1.0));
        let f = no_compression(&text_probe(4096, &[])).expect("fires");
        assert_eq!(f.severity, Severity::Info);
        assert!(no_compression(&text_probe(1638, &[])).is_none());
        let f = no_compression(&text_probe(20_000, &[])).expect("fires");
        assert_eq!(f.evidence_f64("body_bytes"), Some(20000.0));
        assert_eq!(
            f.evidence_str("content_type"),
            Some("text/html; charset=utf-8")
        );
        assert!(no_compression(&text_probe(20_000, &[("content-encoding", "gzip")])).is_none());
        assert!(no_compression(&text_probe(500, &[])).is_none());
        let mut p = text_probe(20_000, &[]);
        p.accept_encoding = false;
        assert!(no_compression(&p).is_none());
        let mut p = text_probe(20_000, &[]);
        p.headers = Headers::from_pairs(&[("content-type", "image/png")]);
        assert!(no_compression(&p).is_none());
        assert!(no_compression(&healthy_probe()).is_none());
        assert!(is_textual("application/problem+json"));
    }

    /// Three redirects fire with their total; one fast redirect does not.
    #[test]
    fn redirects_both_ways() {
        let hop = |loc: &str, t| RedirectHop {
            status: 301,
            location: loc.into(),
            time_ms: t,
            from: "https://example.com/".into(),
        };
        let mut p = healthy_probe();
        p.redirects = vec![hop("/a", 110.0), hop("/b", 111.0), hop("/c", 112.0)];
        let f = redirect_chain(&p).expect("fires");
        assert_eq!(f.severity, Severity::Warn);
        assert_eq!(f.evidence_f64("hops"), Some(3.0));
        assert_eq!(f.evidence_f64("total_ms"), Some(333.0));
        assert!(f
            .evidence_str("chain")
            .unwrap()
            .starts_with("301 → /a (110 ms)"));
        assert_eq!(f.evidence_f64("round_trips"), Some(3.0));
        assert!(f.title.contains("≥ 3 round trips"), "{}", f.title);
        p.redirects = vec![hop("/a", 0.4)];
        assert!(redirect_chain(&p).is_none());
        assert!(redirect_chain(&healthy_probe()).is_none());
    }

    /// A same-origin hop costs its request; another origin a new connection too
    /// (TCP, and TLS on https).
    #[test]
    fn round_trips_per_hop() {
        let from = "http://example.com/blog";
        assert_eq!(hop_round_trips(from, "/blog/"), 1);
        assert_eq!(hop_round_trips(from, "http://example.com:80/x"), 1);
        assert_eq!(hop_round_trips(from, "http://www.example.com/blog"), 2);
        assert_eq!(hop_round_trips(from, "https://example.com/blog"), 3);
        assert_eq!(hop_round_trips("", "/x"), 1);
    }

    /// A load whose answers were 301s fires (counted, not hidden in availability);
    /// one with none, or a stray 0.5 %, is quiet; 304s are not redirects.
    #[test]
    fn load_redirects_both_ways() {
        let mut l = LoadFacts {
            requests: 1000,
            redirects: 1000,
            redirect_status: 301,
            ..LoadFacts::default()
        };
        let f = load_redirects(&l).expect("fires");
        assert!(f
            .title
            .contains("1000 of 1000 responses (100 %) were redirects (301)"));
        assert!(f.title.contains("not errors, but not the page either"));
        l.redirects = 5;
        assert!(load_redirects(&l).is_none());
        l.redirects = 0;
        assert!(load_redirects(&l).is_none());
    }

    /// RFC 9110 §15.4: a 301/302/303/307/308 answer fires (its Location named); a
    /// 200, and a 304 (§15.4.5, a cache's answer, not a redirect), are quiet.
    #[test]
    fn not_followed_both_ways() {
        let mut p = healthy_probe();
        assert!(redirect_not_followed(&p).is_none());
        for status in [301, 302, 303, 307, 308] {
            p.status = status;
            p.headers = Headers::from_pairs(&[("location", "/blog/")]);
            let f = redirect_not_followed(&p).expect("fires");
            assert!(f.title.contains(&format!("{status} redirect to /blog/")));
            assert_eq!(f.evidence_str("location"), Some("/blog/"));
            assert!(f.advice.contains("-L"));
        }
        p.status = 304;
        assert!(redirect_not_followed(&p).is_none());
        p.status = 300;
        p.headers = Headers::default();
        assert!(redirect_not_followed(&p)
            .unwrap()
            .title
            .contains("without a Location"));
    }

    /// Pricing `no-compression` and `redirect-chain`:
    /// - 20,000 bytes take 2 round trips of slow start on a fresh connection and
    ///   about 1 compressed: one min RTT saved, 110 ms of the fresh 231 ms total
    ///   (far probe); on loopback the same round trip is 0.02 ms; an info finding
    ///   (same round trips either way) saves bytes, not time, and stays unpriced;
    /// - three redirects of 110 + 111 + 112 ms: linking to the final URL saves all
    ///   333 ms of 333 + 231 = 564 ms, per request to the old URL.
    #[test]
    fn pricing_content_rules() {
        let mut p = text_probe(20_000, &[]);
        p.tcp = far_probe().tcp;
        p.fresh = far_probe().fresh;
        let f = no_compression(&p).unwrap();
        assert_eq!(f.saving_ms, Some(110.0));
        assert_eq!(f.saving_of_ms, Some(231.0));
        assert_eq!(f.saving_basis.as_deref(), Some("fresh"));
        let f = no_compression(&text_probe(20_000, &[])).unwrap();
        assert_eq!(f.saving_ms, Some(0.02));
        assert_eq!(
            no_compression(&text_probe(4096, &[])).unwrap().saving_ms,
            None
        );

        let hop = |loc: &str, t| RedirectHop {
            status: 301,
            location: loc.into(),
            time_ms: t,
            from: "https://example.com/".into(),
        };
        let mut p = far_probe();
        p.redirects = vec![hop("/a", 110.0), hop("/b", 111.0), hop("/c", 112.0)];
        let f = redirect_chain(&p).unwrap();
        assert_eq!(f.saving_ms, Some(333.0));
        assert_eq!(f.saving_of_ms, Some(564.0));
        assert_eq!(f.saving_basis.as_deref(), Some("per request"));
    }
}
