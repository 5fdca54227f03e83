//! Where a request's time goes: `network-dominates` / `server-dominates`,
//! `above-physical-floor`, `server-timing-gap`, `slow-dns`, `slow-receive` (the body
//! after the first byte: the whole request counts, not only TTFB).
//!
//! Server time ≈ `wait` − `tcpi_min_rtt` on a warm connection (DESIGN.md, Derived).

use super::evidence::{both, judge, not_enough, rerun_diagnose, Judged};
use super::{ms, steady, time_label, times};
use crate::diagnose::facts::{ProbeFacts, SeriesFacts};
use crate::diagnose::finding::{basis, Category, Finding, Severity};
use crate::diagnose::server_timing::server_timing;
use crate::stats::interval::{median, Method};

/// Each steady request's server time (wait − min RTT, ms) and the share of its TTFB
/// that was server time, and the share that was the round trip.
fn per_request(s: &SeriesFacts, rtt: f64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut server = Vec::new();
    let (mut server_share, mut rtt_share) = (Vec::new(), Vec::new());
    for (w, t) in s.wait_ms.iter().zip(&s.ttfb_ms) {
        let srv = (w - rtt).max(0.0);
        let ttfb = t.max(*w);
        server.push(srv);
        if ttfb > 0.0 {
            server_share.push(srv / ttfb);
            rtt_share.push(rtt / ttfb);
        }
    }
    (server, server_share, rtt_share)
}

/// The median of per-request values judged against `threshold`.
fn median_at_least(quantity: &str, v: &[f64], point: f64, threshold: f64) -> Judged {
    judge(
        quantity,
        median(v),
        point,
        [v.len(), 0],
        threshold,
        Method::OrderStatistic,
    )
}

/// (TTFB, min RTT, server time) of a steady request, ms, when the RTT is known.
pub(crate) fn split(p: &ProbeFacts) -> Option<(f64, f64, f64)> {
    let s = steady(p)?;
    let rtt = p.tcp?.min_rtt_ms;
    let server = (s.p50.wait - rtt).max(0.0);
    Some((s.p50.ttfb.max(s.p50.wait), rtt, server))
}

/// `network-dominates` or `server-dominates`: the round trip or the server time is at
/// least half of a warm request's TTFB (floors: 20 ms of RTT, 100 ms of server time),
/// judged on the medians of the steady requests with 95 % confidence; a
/// `server-dominates` the interval cannot decide says so (info).
pub fn time_split(p: &ProbeFacts, proxied: bool) -> Option<Finding> {
    let (ttfb, rtt, server) = split(p)?;
    if ttfb <= 0.0 {
        return None;
    }
    let s = steady(p)?;
    let (servers, server_share, rtt_share) = per_request(s, rtt);
    let server_judged = both(
        median_at_least("server time of a warm request, ms", &servers, server, 100.0),
        median_at_least(
            "server time's share of a warm request's TTFB",
            &server_share,
            server / ttfb,
            0.5,
        ),
    );
    let label = time_label(p, proxied);
    let base = |id, cat, sev, title| {
        Finding::new(id, cat, sev, title)
            .num("ttfb_ms", ttfb)
            .num("min_rtt_ms", rtt)
            .num("server_ms", server)
            .text("server_label", label)
    };
    if server_judged.undecided() {
        return Some(not_enough(
            "server-dominates",
            Category::Server,
            "does the server's time dominate a warm request",
            if server_judged
                .confidence
                .as_ref()
                .is_some_and(|c| c.quantity.contains("share"))
            {
                ""
            } else {
                "ms"
            },
            server_judged.confidence?,
            &rerun_diagnose(&p.url, ""),
        ));
    }
    if server_judged.fires() {
        let confidence = server_judged.confidence?;
        return Some(
            base(
                "server-dominates",
                Category::Server,
                Severity::Warn,
                format!(
                    "{label}{} time {} is {:.0}% of a warm request's TTFB ({}); the network \
                     round trip is {}",
                    if proxied {
                        ""
                    } else {
                        " (or whatever is behind it)"
                    },
                    ms(server),
                    100.0 * server / ttfb,
                    ms(ttfb),
                    ms(rtt)
                ),
            )
            .num("share", server / ttfb)
            .confidence(confidence)
            .advice(if label == super::EDGE_HIT {
                "the edge answers from its cache, yet slowly: the edge is busy or far from \
                 its own network (compare another PoP or CDN)"
            } else if proxied {
                "the time is spent behind the edge: check the edge → origin hop (is the \
                 edge caching? is the origin far from the edge?) and the origin's own time \
                 (Server-Timing, profiling)"
            } else {
                "the time after the round trip is the server's — or, when it is a proxy or \
                 load balancer (no header says so), whatever is behind it: run with \
                 --origin ADDR to split the hop to the upstream from the upstream's own \
                 time. For the server's own time: profile the handler (Server-Timing \
                 helps), cache rendered responses, check the database and worker pools"
            }),
        );
    }
    let network = median_at_least(
        "round trip's share of a warm request's TTFB",
        &rtt_share,
        rtt / ttfb,
        0.5,
    );
    // An info: shown on its point estimate while the interval cannot tell yet (its
    // confidence then says "undecided", and the sampler takes more rounds).
    if rtt >= 20.0 && !network.decision_is_below() {
        return Some(
            base(
                "network-dominates",
                Category::Network,
                Severity::Info,
                format!(
                    "the network round trip ({}) is {:.0}% of a warm request's TTFB ({}); \
                     {label} {}",
                    ms(rtt),
                    100.0 * rtt / ttfb,
                    ms(ttfb),
                    ms(server)
                ),
            )
            .num("share", rtt / ttfb)
            .confidence(network.confidence?)
            .advice(
                "distance dominates: serve from closer to users (a CDN edge that caches, \
                 a region near them), cut round trips (keep-alive, HTTP/2, fewer \
                 redirects); a faster server will not help much",
            ),
        );
    }
    None
}

/// `above-physical-floor`: the RTT is far above 2 × distance / 200,000 km/s.
pub fn above_physical_floor(p: &ProbeFacts, distance_km: f64) -> Option<Finding> {
    let rtt = p.tcp?.min_rtt_ms;
    if distance_km.is_nan() || distance_km <= 0.0 {
        return None;
    }
    let floor = distance_km / 100.0;
    if !(rtt >= 2.0 * floor && rtt - floor >= 10.0) {
        return None;
    }
    Some(
        Finding::new(
            "above-physical-floor",
            Category::Network,
            if rtt >= 3.0 * floor {
                Severity::Warn
            } else {
                Severity::Info
            },
            format!(
                "RTT {}, {} the physical floor ({} for {distance_km:.0} km in fibre)",
                ms(rtt),
                times(rtt / floor),
                ms(floor)
            ),
        )
        .num("min_rtt_ms", rtt)
        .num("floor_ms", floor)
        .num("distance_km", distance_km)
        .num("ratio", rtt / floor)
        // Every request crosses the path at least once: a kept-alive request on a
        // route at the floor would take rtt − floor less.
        .saving(
            rtt - floor,
            steady(p).map_or(f64::NAN, |s| s.p50.ttfb),
            basis::REUSED,
        )
        .advice(
            "the path is much longer than the distance: routing detours, a far-away edge \
             or VPN exit, or queueing on the way; check the route (traceroute/mtr) and \
             the edge location, or serve from closer",
        ),
    )
}

/// `server-timing-gap`: Server-Timing explains only part of the measured server time;
/// the rest is queueing before the app, a proxy hop or network.
pub fn server_timing_gap(p: &ProbeFacts, proxied: bool) -> Option<Finding> {
    let metrics = server_timing(&p.headers.get("server-timing")?);
    let durs: Vec<(&str, f64)> = metrics
        .iter()
        .filter_map(|m| Some((m.name.as_str(), m.dur_ms?)))
        .collect();
    if durs.is_empty() {
        return None;
    }
    // A metric naming the whole wins, `total` first: `app` is often one part of it
    // (the lab sends `db, app, total`).
    let whole = |name: &str| {
        durs.iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, d)| *d)
    };
    let explained = whole("total")
        .or_else(|| whole("server"))
        .or_else(|| whole("app"))
        .unwrap_or_else(|| durs.iter().map(|(_, d)| d).sum());
    let (_, rtt, server) = split(p)?;
    let gap = server - explained;
    // The server time with 95 % confidence at least `explained` + 20 ms and twice
    // `explained`.
    let (servers, _, _) = per_request(steady(p)?, rtt);
    let judged = median_at_least(
        "server time of a warm request, ms",
        &servers,
        server,
        (explained + 20.0).max(2.0 * explained),
    );
    if judged.decision_is_below() {
        return None;
    }
    let label = time_label(p, proxied);
    Some(
        Finding::new(
            "server-timing-gap",
            Category::Server,
            Severity::Info,
            format!(
                "Server-Timing explains {} of {} {label} time; {} is unaccounted for",
                ms(explained),
                ms(server),
                ms(gap)
            ),
        )
        .num("server_ms", server)
        .num("explained_ms", explained)
        .num("gap_ms", gap)
        .confidence(judged.confidence?)
        .text(
            "server_timing",
            p.headers.get("server-timing").unwrap_or_default(),
        )
        .advice(
            "the unexplained time is spent before or around the instrumented code: \
             request queueing (worker pool, accept queue), a proxy or load balancer hop, \
             middleware; add Server-Timing metrics around them or check the queue",
        ),
    )
}

/// `slow-dns`: name resolution alone takes ≥ 50 ms on a fresh request.
pub fn slow_dns(p: &ProbeFacts) -> Option<Finding> {
    let f = p.fresh.as_ref()?;
    let dns = f.p50.dns;
    let judged = median_at_least(
        "DNS resolution of a fresh request, ms",
        &f.dns_ms,
        dns,
        50.0,
    );
    if judged.decision_is_below() {
        return None;
    }
    Some(
        Finding::new(
            "slow-dns",
            Category::Network,
            Severity::Info,
            format!(
                "DNS resolution takes {} (p50) of a {} fresh TTFB",
                ms(dns),
                ms(f.p50.ttfb)
            ),
        )
        .num("dns_ms", dns)
        .num("fresh_ttfb_ms", f.p50.ttfb)
        .confidence(judged.confidence?)
        // A caching resolver near the client answers in about a millisecond.
        .saving(dns, f.p50.ttfb, basis::FRESH)
        .advice(
            "use a closer or caching resolver, raise the record's TTL, or keep \
             connections open so lookups are rare",
        ),
    )
}

/// Bodies up to this size should arrive in one go, bytes.
const SMALL_BODY: u64 = 64 * 1024;

/// The body phase of a steady request: first → last byte.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Receive {
    /// p50 receive, ms.
    pub receive_ms: f64,
    /// p50 total of the same series, ms.
    pub total_ms: f64,
    /// p50 TTFB of the same series, ms.
    pub ttfb_ms: f64,
    /// The series is the reused one.
    pub reused: bool,
    /// p50 receive of fresh connections, when measured.
    pub fresh_receive_ms: Option<f64>,
    /// The ≈40 ms signature of Nagle's algorithm meeting a delayed ACK: a small
    /// body, receive 30–60 ms over the RTT on a reused connection, not on fresh
    /// ones (a new connection ACKs at once: TCP's quick-ACK mode).
    pub delayed_ack: bool,
}

/// A body phase this long is worth a finding however long the request is, ms
/// (issue 37 item 5: a 46 ms stall behind a 150 ms handler is a quarter of it).
const RECEIVE_MS: f64 = 20.0;

/// The receive phase of the steady series when it is at least half of its total, or
/// at least [`RECEIVE_MS`].
pub(crate) fn receive_share(p: &ProbeFacts) -> Option<Receive> {
    let s = steady(p)?;
    let reused = p.reused.as_ref().is_some_and(|r| r.count > 0);
    let rx = s.p50.receive;
    let total = s.p50.total.max(s.p50.ttfb + rx);
    if !(rx > 0.0 && (rx >= 0.5 * total || rx >= RECEIVE_MS)) {
        return None;
    }
    let fresh_rx = p
        .fresh
        .as_ref()
        .filter(|f| f.count > 0)
        .map(|f| f.p50.receive);
    let rtt = p.tcp.map_or(0.0, |t| t.min_rtt_ms);
    let delayed_ack = reused
        && p.body_bytes <= SMALL_BODY
        && (30.0..=60.0).contains(&(rx - rtt))
        && fresh_rx.is_none_or(|f| f < 0.5 * rx);
    Some(Receive {
        receive_ms: rx,
        total_ms: total,
        ttfb_ms: s.p50.ttfb,
        reused,
        fresh_receive_ms: fresh_rx,
        delayed_ack,
    })
}

/// What to do about a receive phase that dominates.
pub(crate) fn receive_advice(r: &Receive) -> &'static str {
    if r.delayed_ack {
        "write each response in one piece — headers and body in one send (a buffered \
         writer; Python's BaseHTTPRequestHandler: `wbufsize = -1`) — or set TCP_NODELAY \
         on the server's sockets: a second small write waits for the ACK of the first, \
         which the client delays by ≈40 ms"
    } else {
        "the server sends the body slowly after the first byte: a slow template or query \
         after the headers were flushed, small unbuffered writes, or a slow upstream \
         behind a streaming proxy; buffer the response or find what it waits for"
    }
}

/// `slow-receive`: on a steady request, the body (first → last byte) takes ≥ 20 ms,
/// for a body ≤ 64 KiB that should arrive in one go; names the ≈40 ms Nagle +
/// delayed-ACK signature when it is there. A warning when the body is also at least
/// half of the request, or is that signature (a fix that saves the stall whatever
/// the handler costs); else an info.
pub fn slow_receive(p: &ProbeFacts) -> Option<Finding> {
    let r = receive_share(p)?;
    if p.body_bytes > SMALL_BODY {
        return None;
    }
    let s = steady(p)?;
    let shares: Vec<f64> = s
        .receive_ms
        .iter()
        .zip(&s.total_ms)
        .filter(|(_, t)| **t > 0.0)
        .map(|(rx, t)| rx / t)
        .collect();
    let judged = median_at_least(
        "body time (first → last byte) of a steady request, ms",
        &s.receive_ms,
        r.receive_ms,
        RECEIVE_MS,
    );
    let most = median_at_least(
        "body time's share of a steady request",
        &shares,
        r.receive_ms / r.total_ms,
        0.5,
    );
    let severity = if r.delayed_ack || most.fires() {
        Severity::Warn
    } else {
        Severity::Info
    };
    if judged.undecided() {
        return Some(not_enough(
            "slow-receive",
            Category::Server,
            "does the body take long after the first byte",
            "ms",
            judged.confidence?,
            &rerun_diagnose(&p.url, ""),
        ));
    }
    if !judged.fires() {
        return None;
    }
    let series = if r.reused { "reused" } else { "fresh" };
    let mut title = format!(
        "the body takes {} after the first byte on a {series} connection: {:.0}% of the \
         request's {} (TTFB {}) for a {}-byte body",
        ms(r.receive_ms),
        100.0 * r.receive_ms / r.total_ms,
        ms(r.total_ms),
        ms(r.ttfb_ms),
        p.body_bytes
    );
    if r.delayed_ack {
        title.push_str(&format!(
            "; fresh connections receive it in {} — the ≈40 ms stall of Nagle's \
             algorithm meeting a delayed ACK (the server writes the response in pieces)",
            ms(r.fresh_receive_ms.unwrap_or(0.0))
        ));
    }
    // The ≈40 ms stall is gone when the response goes out in one piece: the body then
    // arrives as on a fresh connection (which ACKs at once).
    let saving = if r.delayed_ack {
        r.receive_ms - r.fresh_receive_ms.unwrap_or(0.0)
    } else {
        f64::NAN
    };
    Some(
        Finding::new("slow-receive", Category::Server, severity, title)
            .saving(
                saving,
                r.total_ms,
                if r.reused {
                    basis::REUSED
                } else {
                    basis::FRESH
                },
            )
            .num("receive_ms", r.receive_ms)
            .num("total_ms", r.total_ms)
            .num("ttfb_ms", r.ttfb_ms)
            .num("share", r.receive_ms / r.total_ms)
            .opt_num("fresh_receive_ms", r.fresh_receive_ms)
            .count("body_bytes", p.body_bytes)
            .text("series", series)
            .confidence(judged.confidence?)
            .text(
                "cause",
                if r.delayed_ack {
                    "delayed-ack"
                } else {
                    "slow-body"
                },
            )
            .advice(receive_advice(&r)),
    )
}

#[cfg(test)]
#[path = "timing_tests.rs"]
mod tests;
