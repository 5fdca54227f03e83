//! The probe as terminal text: per-phase min/p50/p90/max for the fresh, resumed (TLS)
//! and reused series (httpstat over many requests), what the kernel says, derived server time and
//! handshake cost, the response and its caching headers; several URLs side by side.

use crate::diagnose::Finding;
use crate::probe::{PhysicalFloor, ProbeResult, Series, SeriesSummary, PHASES};
use crate::units::{fmt_bytes, fmt_ms};

use super::findings;
use super::table::Table;

/// Headers shown because they matter for latency and caching.
pub const SHOWN_HEADERS: [&str; 15] = [
    "cache-control",
    "etag",
    "last-modified",
    "expires",
    "age",
    "vary",
    "content-encoding",
    "server-timing",
    "via",
    "x-cache",
    "cf-cache-status",
    "cache-status",
    "x-varnish",
    "connection",
    "server",
];

/// One probe, in full: measurements, findings, where the time goes.
pub fn render(p: &ProbeResult, found: &[Finding], summary: Option<&str>) -> String {
    let mut out = measurements(p);
    out.push('\n');
    out.push_str(&findings::render(found));
    if let Some(s) = summary {
        out.push_str(&format!("\n  where the time goes: {s}\n"));
    }
    out
}

/// The probe's measurements: response, phase table, kernel view, headers.
pub fn measurements(p: &ProbeResult) -> String {
    let mut out = heading(p);
    out.push('\n');
    out.push_str(&details_block(p));
    out
}

/// The URL and its response line (address, HTTP version and status, body, TLS).
pub fn heading(p: &ProbeResult) -> String {
    let mut out = format!("{}\n", p.target);
    out.push_str(&response_line(p));
    if p.interrupted {
        out.push_str("  (interrupted: showing what was measured)\n");
    }
    out
}

/// The phase table, the connection details, errors and headers.
pub fn details_block(p: &ProbeResult) -> String {
    let mut out = phase_table(p);
    out.push('\n');
    for (name, value) in details(p) {
        out.push_str(&format!("  {name:<18}{value}\n"));
    }
    let errors: Vec<_> = p.samples.iter().filter(|s| s.error.is_some()).collect();
    if !errors.is_empty() {
        out.push_str(&format!(
            "  {:<18}{} of {} requests: {}\n",
            "errors",
            errors.len(),
            p.samples.len(),
            errors[0].error.as_deref().unwrap_or("")
        ));
    }
    let shown = headers(p);
    if !shown.is_empty() {
        out.push_str("  headers\n");
        for (k, v) in shown {
            out.push_str(&format!("    {k}: {v}\n"));
        }
    }
    out
}

fn response_line(p: &ProbeResult) -> String {
    let mut parts = vec![p.addresses.join(", ")];
    if p.scheme == "tcp" {
        parts.push("TCP connect only".into());
    } else {
        if let (Some(v), Some(s)) = (&p.http_version, p.status) {
            if (300..400).contains(&s) && s != 304 {
                parts.push(format!("{v} {s} (a redirect, not the page: -L follows it)"));
            } else {
                parts.push(format!("{v} {s}"));
            }
        }
        parts.push(fmt_bytes(p.body_bytes));
    }
    if let Some(t) = &p.tls {
        let alpn = t.alpn.as_deref().unwrap_or("no ALPN");
        let resumed = if t.resumed {
            "sessions resumed"
        } else {
            "no session resumption"
        };
        parts.push(format!("{} · ALPN {alpn} · {resumed}", t.version));
    }
    format!("  {}\n", parts.join(" · "))
}

fn phase_table(p: &ProbeResult) -> String {
    let reused = p.reused.as_ref().filter(|r| r.count > 0);
    let resumed = p.resumed.as_ref().filter(|r| r.count > 0);
    let mut header = vec!["phase", "fresh min", "p50", "p90", "max"];
    let mut shown: Vec<&SeriesSummary> = vec![&p.fresh];
    if let Some(r) = resumed {
        header.extend(["resumed min", "p50", "p90", "max"]);
        shown.push(r);
    }
    if let Some(r) = reused {
        header.extend(["reused min", "p50", "p90", "max"]);
        shown.push(r);
    }
    let mut table = Table::new(header);
    let phases: Vec<&str> = if p.scheme == "tcp" {
        vec!["dns", "connect"]
    } else {
        PHASES.to_vec()
    };
    for phase in phases {
        // No tls row without TLS, nor over QUIC (its handshake is the connect phase).
        if phase == "tls" && (p.tls.is_none() || p.quic.is_some()) {
            continue;
        }
        let mut row = vec![phase.to_string()];
        for series in &shown {
            let s = series.phases_ms.get(phase);
            // A p90 needs 10 samples; with fewer it would be the max, shown as such.
            let p90 = if crate::stats::histogram::supports(series.count as u64, 0.9) {
                fmt_ms(s.p90)
            } else {
                "—".to_string()
            };
            row.extend([fmt_ms(s.min), fmt_ms(s.p50), p90, fmt_ms(s.max)]);
        }
        table.row(row);
    }
    let mut caption = if p.quic.is_some() {
        format!(
            "  fresh: a new QUIC connection per request, full handshake: transport + TLS 1.3 \
             in one (×{})",
            p.fresh.count
        )
    } else if p.tls.is_some() {
        format!(
            "  fresh: a new connection per request, full TLS handshake (×{})",
            p.fresh.count
        )
    } else {
        format!("  fresh: a new connection per request (×{})", p.fresh.count)
    };
    match resumed {
        Some(r) => {
            caption.push_str(&format!(
                " · resumed: a new connection resuming its TLS session (×{})",
                r.count
            ));
            if let Some(q) = p.quic.as_ref().filter(|q| q.zero_rtt_tries > 0) {
                caption.push_str(&format!(
                    ", the request sent as 0-RTT data (accepted {} of {})",
                    q.zero_rtt_accepted, q.zero_rtt_tries
                ));
            }
        }
        None => {
            // New connections of the client that keeps sessions, after its first.
            let tries = p
                .samples
                .iter()
                .filter(|s| s.new_connection && s.tls_client_resumes == Some(true))
                .count()
                .saturating_sub(1);
            if tries > 0 {
                caption.push_str(&format!(
                    " · resumed: none (the server resumed none of {tries} tries)"
                ));
            }
        }
    }
    if let Some(r) = reused {
        let reconnects = p
            .samples
            .iter()
            .filter(|s| s.series == Series::Reused && s.new_connection)
            .count();
        caption.push_str(&format!(
            " · reused: {} (×{})",
            if p.quic.is_some() {
                "one kept-alive connection"
            } else {
                "the next request over each fresh connection"
            },
            r.count
        ));
        if reconnects > 0 {
            caption.push_str(&format!(
                ", reconnected {reconnects}× after the server closed it"
            ));
        }
    }
    format!("{caption}\n{}", table.render(2))
}

fn details(p: &ProbeResult) -> Vec<(&'static str, String)> {
    let mut d = Vec::new();
    if !p.redirects.is_empty() {
        let total: f64 = p.redirects.iter().map(|h| h.time_ms).sum();
        let hops: Vec<String> = p
            .redirects
            .iter()
            .map(|h| {
                format!(
                    "{} {} → {} ({})",
                    h.status,
                    crate::visible::one_line(&h.url),
                    crate::visible::one_line(&h.location),
                    fmt_ms(h.time_ms)
                )
            })
            .collect();
        d.push((
            "redirects (-L)",
            format!("{} in {}: {}", hops.len(), fmt_ms(total), hops.join("; ")),
        ));
    }
    if !p.dropped_headers.is_empty() {
        d.push((
            "not sent on",
            format!(
                "{} (the chain left the first origin)",
                p.dropped_headers.join(", ")
            ),
        ));
    }
    if let Some(f) = p.first_request {
        let steady = p.fresh.phases_ms.total.p50;
        let ratio = if steady > 0.0 {
            format!(" ({:.1}× the fresh p50)", f.total_ms / steady)
        } else {
            String::new()
        };
        d.push((
            "first request",
            format!(
                "total {} · ttfb {}{ratio}",
                fmt_ms(f.total_ms),
                fmt_ms(f.ttfb_ms)
            ),
        ));
    }
    if let Some(dns) = p.dns {
        let ttl = dns
            .ttl_s
            .map(|t| format!(" · TTL {t} s"))
            .unwrap_or_default();
        d.push((
            "dns lookups",
            format!(
                "first {} · repeated {} (p50 of {}){ttl}",
                fmt_ms(dns.first_ms),
                fmt_ms(dns.repeat_p50_ms),
                dns.repeats
            ),
        ));
    }
    if let Some(t) = p.tcp {
        d.push((
            "kernel TCP_INFO",
            format!(
                "rtt {} · min_rtt {} · retransmits {} (total {}) · cwnd {}",
                fmt_ms(t.rtt_ms),
                fmt_ms(t.min_rtt_ms),
                t.retransmits,
                t.total_retrans,
                t.snd_cwnd
            ),
        ));
    }
    if let Some(q) = &p.quic {
        d.push(("QUIC", quic_text(q)));
    }
    if let Some(f) = p.physical_floor {
        d.push(("physical floor", floor_text(&f)));
    }
    if let Some(s) = p.server_time_ms {
        let rtt = if p.quic.is_some() {
            "QUIC min RTT"
        } else {
            "kernel min RTT"
        };
        d.push((
            "server time",
            format!(
                "≈ {} ({}: reused wait − {rtt})",
                fmt_ms(s.p50),
                p.server_time_label
            ),
        ));
    }
    // Round trips come from the phase rows (connect + TLS over the min RTT), never
    // from the TTFB differences beside them (issue 30 item 3).
    let connect = if p.quic.is_some() { "QUIC" } else { "TCP" };
    let trips = |t: Option<crate::probe::HandshakeTrips>| {
        t.map(|t| format!("; its handshakes {}", t.text(connect)))
            .unwrap_or_default()
    };
    if let Some(c) = p.handshake_cost_ms {
        let what = if p.quic.is_some() {
            "fresh − DNS − reused TTFB p50: a new QUIC connection with a full handshake"
        } else if p.tls.is_some() {
            "fresh − DNS − reused TTFB p50: a new connection with a full TLS handshake"
        } else {
            "fresh − DNS − reused TTFB p50: a new connection"
        };
        let text = match p.reused_slower_ms {
            Some(slower) => format!(
                "{} ({what}; the reused connection was {} slower than fresh ones, so no \
                 handshake cost shows: the server answers kept-alive connections more \
                 slowly, or the samples are noisy)",
                fmt_ms(c),
                fmt_ms(slower)
            ),
            None => format!("{} ({what}){}", fmt_ms(c), trips(p.handshake_trips)),
        };
        d.push(("handshake cost", text));
    }
    if let Some(s) = &p.sampling {
        d.push(("sampling", sampling_text(s)));
    }
    if let Some(c) = &p.client {
        d.push(("this machine", client_text(c)));
    }
    if let Some(c) = p.resumed_handshake_cost_ms {
        d.push((
            "resumed handshake",
            format!(
                "{} (resumed − DNS − reused TTFB p50: a returning visitor's new connection){}",
                fmt_ms(c),
                trips(p.resumed_handshake_trips)
            ),
        ));
    }
    if let Some(dl) = p.download {
        d.push((
            "download",
            format!(
                "{}: fresh {:.1} MiB/s ({}), warm {:.1} MiB/s ({})",
                fmt_bytes(dl.body_bytes),
                dl.fresh_mib_s,
                fmt_ms(dl.fresh_receive_ms),
                dl.warm_mib_s,
                fmt_ms(dl.warm_receive_ms)
            ),
        ));
    }
    d
}

/// "14 rounds (at least 10, at most 50 or 20 s): every verdict decided · alternating
/// with http://origin/".
pub fn sampling_text(s: &crate::probe::SamplingReport) -> String {
    let bounds = match s.max_time_s {
        Some(t) => format!(
            "at least {}, at most {} or {t:.0} s",
            s.min_rounds, s.max_rounds
        ),
        None => format!("{}, re-taking up to {}", s.min_rounds, s.max_rounds),
    };
    let why = match s.stopped.as_str() {
        "decided" => "every verdict decided".to_string(),
        "fixed" => "as asked".to_string(),
        "max-rounds" => "the round limit: some verdict may still be undecided".to_string(),
        "max-time" => "the time limit: some verdict may still be undecided".to_string(),
        other => other.to_string(),
    };
    let mut t = format!("{} rounds ({bounds}): {why}", s.rounds);
    if s.retaken > 0 {
        t.push_str(&format!(
            " · {} re-taken (latscope waited for a CPU during them)",
            s.retaken
        ));
    }
    if !s.interleaved_with.is_empty() {
        t.push_str(&format!(
            " · alternating with {}",
            s.interleaved_with.join(", ")
        ));
    }
    t
}

/// How busy this machine was: "latscope waited 26.5 ms for a CPU during 28 samples
/// (12 % of their time), used 24 % of a core; 4 samples left out".
pub fn client_text(c: &crate::probe::noise::ClientSummary) -> String {
    let mut t = format!(
        "latscope waited {} for a CPU during {} samples ({:.0} % of their time, over all \
         its threads), used {:.0} % of a core",
        fmt_ms(c.cpu_wait_ms),
        c.samples,
        c.cpu_wait_pct,
        c.cpu_pct
    );
    if c.too_busy {
        t.push_str(
            "; too busy to take clean samples: every one is kept, the numbers include \
             this machine's own delays",
        );
    } else if c.disturbed > 0 {
        t.push_str(&format!(
            "; {} samples left out (it waited ≥ {} ms and ≥ {:.0} % of the request)",
            c.disturbed,
            crate::probe::noise::DISTURBED_MS,
            crate::probe::noise::DISTURBED_SHARE * 100.0
        ));
    }
    t
}

/// "rtt 41.2 ms · min_rtt 40.1 ms (QUIC's estimate, not the kernel's TCP_INFO) ·
/// handshake 40.6 ms ≈ 1.0 round trips · 0-RTT accepted 5 of 5 · lost 0 of 40 packets".
pub fn quic_text(q: &crate::probe::QuicSummary) -> String {
    let mut parts = vec![format!(
        "rtt {} · min_rtt {} (QUIC's estimate, not the kernel's TCP_INFO)",
        fmt_ms(q.rtt_ms),
        fmt_ms(q.min_rtt_ms)
    )];
    if let Some(h) = q.handshake_ms {
        let trips = q
            .handshake_round_trips
            .map(|t| format!(" ≈ {t:.1} round trips"))
            .unwrap_or_default();
        parts.push(format!("handshake {}{trips}", fmt_ms(h)));
    }
    parts.push(match q.zero_rtt {
        Some(_) => format!(
            "0-RTT accepted {} of {}",
            q.zero_rtt_accepted, q.zero_rtt_tries
        ),
        None if q.resumed => "resumed, no 0-RTT".to_string(),
        None => "no 0-RTT".to_string(),
    });
    parts.push(format!(
        "lost {} of {} packets",
        q.lost_packets, q.sent_packets
    ));
    parts.join(" · ")
}

/// "80.3 ms RTT over 7,500 km: 1.07× the floor (75.0 ms in fibre), nothing to win by
/// routing" — always the floor and the ratio, with what the ratio means.
pub fn floor_text(f: &PhysicalFloor) -> String {
    let km = thousands(f.distance_km);
    let (Some(rtt), Some(ratio)) = (f.rtt_ms, f.ratio) else {
        return format!(
            "{} round trip at least over {km} km in fibre (no kernel RTT to set against it)",
            fmt_ms(f.floor_ms)
        );
    };
    let meaning = if ratio < 0.95 {
        "below the floor: the server (or an edge answering for it) is closer than that"
    } else if ratio < 1.5 {
        "nothing to win by routing"
    } else if ratio < 2.0 {
        "a little above the floor: some detour or queueing on the way"
    } else {
        "the path is much longer than the distance: routing detours, a far edge or queueing"
    };
    format!(
        "{} RTT over {km} km: {ratio:.2}× the floor ({} in fibre), {meaning}",
        fmt_ms(rtt),
        fmt_ms(f.floor_ms)
    )
}

/// 7500.0 → "7,500".
fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The latency- and cache-relevant headers of the response; Set-Cookie only as a count.
fn headers(p: &ProbeResult) -> Vec<(String, String)> {
    let mut shown: Vec<(String, String)> = SHOWN_HEADERS
        .iter()
        .filter_map(|h| p.headers.get(*h).map(|v| (display_name(h), v.clone())))
        .collect();
    if let Some(v) = p.headers.get("set-cookie") {
        let n = v.matches(", ").count() + 1;
        shown.push(("Set-Cookie".into(), format!("present ({n}, values hidden)")));
    }
    shown
}

fn display_name(h: &str) -> String {
    h.split('-')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// How one cell of the side-by-side table is computed.
type Cell = Box<dyn Fn(&ProbeResult) -> String>;

/// A probe and the findings diagnosis returned beside it.
pub type Explained<'a> = (&'a ProbeResult, &'a [Finding]);

/// Several probes side by side: the headline numbers in one table.
pub fn side_by_side(explained: &[Explained]) -> String {
    let results: Vec<&ProbeResult> = explained.iter().map(|(r, _)| *r).collect();
    let mut header = vec!["".to_string()];
    header.extend(results.iter().map(|r| short(&r.target)));
    let mut table = Table::new(header);
    let opt = |v: Option<f64>| v.map(fmt_ms).unwrap_or_else(|| "-".into());
    let rows: Vec<(&str, Cell)> = vec![
        (
            "status",
            Box::new(|r| r.status.map(|s| s.to_string()).unwrap_or("-".into())),
        ),
        (
            "version",
            Box::new(|r| r.http_version.clone().unwrap_or("-".into())),
        ),
        (
            "fresh ttfb p50",
            Box::new(|r| fmt_ms(r.fresh.phases_ms.ttfb.p50)),
        ),
        (
            "resumed ttfb p50",
            Box::new(move |r| opt(r.resumed.as_ref().map(|x| x.phases_ms.ttfb.p50))),
        ),
        (
            "reused ttfb p50",
            Box::new(move |r| opt(r.reused.as_ref().map(|x| x.phases_ms.ttfb.p50))),
        ),
        (
            "connect p50",
            Box::new(|r| fmt_ms(r.fresh.phases_ms.connect.p50)),
        ),
        ("tls p50", Box::new(|r| fmt_ms(r.fresh.phases_ms.tls.p50))),
        // The path's RTT is the kernel's minimum: its smoothed RTT also holds delayed
        // ACKs and a slow handler's pauses, which are not distance.
        (
            "path rtt (min)",
            Box::new(move |r| {
                opt(r
                    .tcp
                    .map(|t| t.min_rtt_ms)
                    .or(r.quic.as_ref().map(|q| q.min_rtt_ms)))
            }),
        ),
        (
            "server time",
            Box::new(move |r| opt(r.server_time_ms.map(|s| s.p50))),
        ),
        (
            "first request",
            Box::new(move |r| opt(r.first_request.map(|f| f.total_ms))),
        ),
    ];
    let any_resumed = results.iter().any(|r| r.resumed.is_some());
    for (name, f) in rows {
        if name == "resumed ttfb p50" && !any_resumed {
            continue;
        }
        let mut row = vec![name.to_string()];
        row.extend(results.iter().map(|r| f(r)));
        table.row(row);
    }
    let mut row = vec!["findings".to_string()];
    row.extend(explained.iter().map(|(_, found)| found.len().to_string()));
    table.row(row);
    table.render(2)
}

fn short(url: &str) -> String {
    let s = url
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .trim_start_matches("tcp://");
    let n = s.chars().count();
    if n > 32 {
        let tail: String = s.chars().skip(n - 31).collect();
        format!("…{tail}")
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Near the floor it says so; far above it says the path is long; without a
    /// kernel RTT it still gives the floor.
    #[test]
    fn the_floor_is_always_given_with_its_ratio() {
        let tcp = |rtt: f64| crate::probe::TcpSummary {
            min_rtt_ms: rtt,
            ..Default::default()
        };
        let near = floor_text(&PhysicalFloor::new(7500.0, Some(&tcp(80.0))));
        assert_eq!(
            near,
            "80.0 ms RTT over 7,500 km: 1.07× the floor (75.0 ms in fibre), nothing to win by routing"
        );
        let far = floor_text(&PhysicalFloor::new(1000.0, Some(&tcp(80.0))));
        assert!(
            far.contains("8.00× the floor") && far.contains("much longer"),
            "{far}"
        );
        let none = floor_text(&PhysicalFloor::new(250.0, None));
        assert!(
            none.starts_with("2.50 ms round trip at least over 250 km"),
            "{none}"
        );
        assert_eq!(thousands(40000.0), "40,000");
        assert_eq!(thousands(999.0), "999");
    }
}
