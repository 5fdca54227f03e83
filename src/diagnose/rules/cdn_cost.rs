//! `cdn-cost`: the same URL through a CDN or proxy and straight to the origin
//! (`--origin`), on fresh and on reused connections, both ways (the edge saves time,
//! or costs it), with the time behind the edge split into the hop to the origin —
//! counted in round trips of the edge's own RTT to the origin (`edge_hop`): one when
//! the proxy keeps its upstream connection alive, two when it opens a new one — and
//! the origin's own time. Keeping upstream connections is priced with that RTT, not
//! with ours to the origin.

use super::edge_hop::{self, split, Split, Upstream};
use super::evidence::{interval_text, judge, Judged};
use super::ms;
use crate::cache::status::{cache_status as status_of, edge, CacheState};
use crate::diagnose::facts::{ProbeFacts, SeriesFacts};
use crate::diagnose::finding::{basis, Category, Finding, Severity};
use crate::stats::interval::{shift, Interval, Method};

fn counted(s: &Option<SeriesFacts>) -> Option<&SeriesFacts> {
    s.as_ref().filter(|s| s.count > 0)
}

/// The saving's basis for a series.
fn on(series: &str) -> &'static str {
    if series == "fresh" {
        basis::FRESH
    } else {
        basis::REUSED
    }
}

/// "; behind the edge 203 ms to the origin: 2 round trips of the edge's own ≈101 ms
/// RTT to it (a new upstream connection for each request …; our RTT to the edge
/// 20.0 ms) + 5.00 ms of origin server time; our own RTT to the origin 120 ms".
fn behind_text(s: &Split) -> String {
    let hop = match s.estimate {
        Some(e) => {
            let fresh = match (e.upstream, s.fresh_hop) {
                (Upstream::NewPerClientConnection, Some(f)) => {
                    format!(" ({} on fresh client connections)", ms(f))
                }
                _ => String::new(),
            };
            format!(
                "{}{fresh} to the origin: {} round trip{} of the edge's own ≈{} RTT to it \
                 ({}; our RTT to the edge {})",
                ms(s.hop),
                e.trips,
                if e.trips == 1 { "" } else { "s" },
                ms(e.rtt_ms),
                e.upstream.meaning(),
                ms(s.edge_rtt)
            )
        }
        None => format!(
            "{} to the origin (its round trips cannot be told from our RTTs)",
            ms(s.hop)
        ),
    };
    format!(
        "; behind the edge {hop} + {} of origin server time; our own RTT to the origin {}",
        ms(s.origin_server),
        ms(s.origin_rtt)
    )
}

/// The smallest difference `cdn-cost` reports, ms…
const FLOOR_MS: f64 = 20.0;
/// …and as a share of the origin's TTFB.
const FLOOR_SHARE: f64 = 0.2;

/// One series of both sides, judged: the p50s, and the interval of the difference
/// (edge − origin) against the threshold both ways.
struct Pair {
    name: &'static str,
    via: f64,
    direct: f64,
    /// Edge slower by at least the threshold.
    adds: Judged,
    /// Edge faster by at least the threshold.
    saves: Judged,
}

fn pair(name: &'static str, a: Option<&SeriesFacts>, b: Option<&SeriesFacts>) -> Option<Pair> {
    let (a, b) = (a?, b?);
    let (via, direct) = (a.p50.ttfb, b.p50.ttfb);
    let threshold = FLOOR_MS.max(FLOOR_SHARE * direct);
    let iv = shift(&b.ttfb_ms, &a.ttfb_ms);
    let n = [a.n(), b.n()];
    let quantity = format!("edge − origin TTFB on {name} connections, ms");
    let adds = judge(
        &quantity,
        iv,
        via - direct,
        n,
        threshold,
        Method::HodgesLehmann,
    );
    let quantity = format!("origin − edge TTFB on {name} connections, ms");
    let saves = judge(
        &quantity,
        iv.map(Interval::negated),
        direct - via,
        n,
        threshold,
        Method::HodgesLehmann,
    );
    Some(Pair {
        name,
        via,
        direct,
        adds,
        saves,
    })
}

/// `cdn-cost`: fires when, on fresh or on reused connections, the edge's TTFB
/// differs from the origin's by ≥ 20 ms and ≥ 20 % of the origin's, with 95 %
/// confidence (the Hodges–Lehmann interval of the difference clears it): `warn`
/// when the edge is slower on either, `info` when it only saves time. When an
/// interval straddles the threshold and nothing fires: `info`, not enough samples
/// to tell.
pub fn cdn_cost(cdn: &ProbeFacts, origin: &ProbeFacts) -> Option<Finding> {
    let series = [
        pair("fresh", counted(&cdn.fresh), counted(&origin.fresh)),
        pair("reused", counted(&cdn.reused), counted(&origin.reused)),
    ];
    let pairs: Vec<&Pair> = series.iter().flatten().collect();
    // The edge costing time is the news (where it costs most); saving it only when
    // it costs nowhere.
    let chosen = pairs
        .iter()
        .filter(|p| p.adds.fires())
        .max_by(|a, b| (a.via - a.direct).total_cmp(&(b.via - b.direct)))
        .or_else(|| pairs.iter().find(|p| p.saves.fires()));
    let Some(chosen) = chosen else {
        let unsure = pairs
            .iter()
            .flat_map(|p| [&p.adds, &p.saves])
            .find(|j| j.undecided())?;
        let addr = origin.addresses.first().cloned().unwrap_or_default();
        let port = origin
            .url
            .split('/')
            .nth(2)
            .and_then(|a| a.rsplit_once(':'));
        let origin_arg = match port {
            Some((_, port)) if !addr.is_empty() => format!(" --origin {addr}:{port}"),
            _ if !addr.is_empty() => format!(" --origin {addr}"),
            _ => " --origin ADDR".to_string(),
        };
        return Some(super::evidence::not_enough(
            "cdn-cost",
            Category::Cache,
            "does the edge cost or save time against the origin",
            "ms",
            unsure.confidence.clone()?,
            &super::evidence::rerun_diagnose(&cdn.url, &origin_arg),
        ));
    };
    let (name, via, direct) = (chosen.name, chosen.via, chosen.direct);
    let judged = if chosen.adds.fires() {
        &chosen.adds
    } else {
        &chosen.saves
    };
    let cost = via - direct;
    let others: Vec<String> = pairs
        .iter()
        .filter(|p| p.name != name)
        .map(|p| format!("{}: {} vs {}", p.name, ms(p.via), ms(p.direct)))
        .collect();
    let others = if others.is_empty() {
        String::new()
    } else {
        format!("; {}", others.join("; "))
    };
    let edge_name = edge(&cdn.headers).unwrap_or_else(|| "unknown edge".to_string());
    let state = status_of(&cdn.headers).state;
    let split = split(cdn, origin);
    let upstream = split.as_ref().and_then(Split::upstream);
    let behind = split.as_ref().map(behind_text).unwrap_or_default();
    let new_connection = matches!(
        upstream,
        Some(Upstream::NewPerRequest | Upstream::NewPerClientConnection)
    );
    let (sev, title, advice) = if cost > 0.0 {
        (
            Severity::Warn,
            format!(
                "the edge adds {}{} to TTFB on {name} connections ({} vs {} straight to \
                 the origin{others}; {edge_name}, cache {}){behind}",
                ms(cost),
                interval_text(judged.confidence.as_ref(), "ms"),
                ms(via),
                ms(direct),
                state.as_str()
            ),
            if upstream == Some(Upstream::NewPerClientConnection) {
                "the proxy opens a new connection to the origin for each new client \
                 connection, so every new visitor pays the handshake to it: share idle \
                 upstream connections between clients (HAProxy: `http-reuse always`; nginx: \
                 `keepalive 16;` in an upstream block, with `proxy_http_version 1.1;` and \
                 `proxy_set_header Connection \"\";`), let the edge cache what it can, or \
                 bring the origin closer to the edge"
            } else if new_connection {
                "the proxy opens a new connection to the origin for each request, so every \
                 request pays the handshake to it: keep upstream connections alive (nginx: \
                 `keepalive 16;` in an upstream block, with `proxy_http_version 1.1;` and \
                 `proxy_set_header Connection \"\";`), let the edge cache what it can, or \
                 bring the origin closer to the edge"
            } else if state == CacheState::Hit {
                "even cached answers are slower through the edge: the edge is far from \
                 your users (check which PoP answers) or adds processing; compare from \
                 where users are"
            } else {
                "the edge does not serve this URL from cache, so every request pays user → \
                 edge → origin: make the response cacheable (s-maxage, no cookies) and let \
                 the CDN cache it, or bypass the proxy for it"
            },
        )
    } else {
        (
            Severity::Info,
            format!(
                "the edge saves {}{} of TTFB on {name} connections ({} vs {} straight to \
                 the origin{others}; {edge_name}, cache {}){behind}",
                ms(-cost),
                interval_text(judged.confidence.as_ref(), "ms"),
                ms(via),
                ms(direct),
                state.as_str()
            ),
            "the edge helps: keep it, and keep the response cacheable",
        )
    };
    let num = |f: Finding, key: &str, v: Option<f64>| f.opt_num(key, v);
    let mut f = Finding::new("cdn-cost", Category::Cache, sev, title)
        .num("cdn_ttfb_ms", via)
        .num("origin_ttfb_ms", direct)
        .num("cost_ms", cost)
        .text("series", name);
    f = num(f, "fresh_cdn_ttfb_ms", series[0].as_ref().map(|p| p.via));
    f = num(
        f,
        "fresh_origin_ttfb_ms",
        series[0].as_ref().map(|p| p.direct),
    );
    f = num(f, "reused_cdn_ttfb_ms", series[1].as_ref().map(|p| p.via));
    f = num(
        f,
        "reused_origin_ttfb_ms",
        series[1].as_ref().map(|p| p.direct),
    );
    if let Some(c) = judged.confidence.clone() {
        f = f.confidence(c);
    }
    if let Some(s) = &split {
        f = f
            .num("origin_rtt_ms", s.origin_rtt)
            .num("edge_rtt_ms", s.edge_rtt)
            .num("behind_edge_ms", s.behind)
            .num("hop_ms", s.hop)
            .opt_num("fresh_hop_ms", s.fresh_hop)
            .num("origin_server_ms", s.origin_server);
        if let Some(e) = s.estimate {
            f = f
                .num("edge_origin_rtt_ms", e.rtt_ms)
                .text("edge_origin_rtt_from", edge_hop::FROM)
                .num("hop_round_trips", f64::from(e.trips))
                .text("upstream", e.upstream.id());
        }
    }
    if cost > 0.0 {
        // Keeping upstream connections saves one edge → origin round trip (and the
        // connect's overhead) where a new one is opened, priced with the edge's own
        // RTT to the origin (issue 30 item 4); otherwise the edge's whole cost is
        // what caching or bypassing it would save.
        let (saving, of, on) = match split.as_ref().and_then(|s| s.estimate) {
            Some(e) if e.upstream == Upstream::NewPerClientConnection => (
                e.saving_ms,
                series[0].as_ref().map_or(via, |p| p.via),
                basis::FRESH,
            ),
            Some(e) if e.upstream == Upstream::NewPerRequest => (e.saving_ms, via, on(name)),
            _ => (cost, via, on(name)),
        };
        f = f.saving(saving, of, on);
    }
    Some(
        f.text("edge", edge_name)
            .text("cache", state.as_str())
            .advice(advice),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::rules::testutil::{healthy_probe, set_ttfb};

    /// A probe of `wait` ms on fresh and reused connections over `rtt` (fresh TTFB =
    /// a connect round trip more).
    fn probe(fresh_wait: f64, reused_wait: f64, rtt: f64) -> ProbeFacts {
        let mut p = healthy_probe();
        p.tcp.as_mut().unwrap().min_rtt_ms = rtt;
        let f = p.fresh.as_mut().unwrap();
        f.p50.connect = rtt;
        f.p50.wait = fresh_wait;
        set_ttfb(f, rtt + fresh_wait, 1.0);
        let r = p.reused.as_mut().unwrap();
        r.p50.wait = reused_wait;
        set_ttfb(r, reused_wait, 1.0);
        p
    }

    /// A series of 12 samples around `ms` ± `noise`.
    fn noisy(ms: f64, noise: f64) -> ProbeFacts {
        let mut p = healthy_probe();
        for s in [p.fresh.as_mut().unwrap(), p.reused.as_mut().unwrap()] {
            s.count = 12;
            s.ttfb_ms = vec![0.0; 12];
            set_ttfb(s, ms, noise);
        }
        p
    }

    /// Issue 29: a MISS-only proxy on the same host as a slow, noisy origin (the edge
    /// adds nothing) stays quiet when the samples say the difference is well under
    /// 20 ms; with few, noisy samples whose medians differ by 25 ms it does not warn
    /// but says it cannot tell, with the command that would; with a clear 60 ms it
    /// fires, its interval in `confidence`.
    #[test]
    fn decides_on_the_interval() {
        let origin = noisy(150.0, 3.0);
        assert!(cdn_cost(&noisy(151.0, 3.0), &origin).is_none());
        let f = cdn_cost(&noisy(175.0, 60.0), &noisy(150.0, 60.0)).expect("says so");
        assert_eq!(f.severity, Severity::Info, "{}", f.title);
        assert!(f.title.contains("not enough samples"), "{}", f.title);
        let cmd = f.evidence_str("command").unwrap();
        assert!(cmd.contains(" --origin 127.0.0.1"), "{cmd}");
        assert!(f.undecided());
        let f = cdn_cost(&noisy(210.0, 3.0), &origin).expect("fires");
        assert_eq!(f.severity, Severity::Warn);
        let c = f.confidence.as_ref().unwrap();
        assert_eq!(c.verdict, "above");
        assert!(c.low.unwrap() > 50.0 && c.high.unwrap() < 70.0, "{c:?}");
        assert_eq!(c.samples, vec![12, 12]);
        assert!(f.title.contains("95 % interval"), "{}", f.title);
    }

    /// Issue 12.5, measured with nginx in front of an origin 80 ms away: without
    /// upstream keep-alive the proxy is slower on reused connections (165 ms vs 85 ms
    /// straight) — two round trips to the origin, a new upstream connection each
    /// time; with keep-alive it saves the handshake on fresh connections (85 ms vs
    /// 165 ms) and the hop is one round trip.
    #[test]
    fn slower_edge_and_upstream_connections() {
        let origin = probe(85.0, 85.0, 80.0);
        let no_keepalive = probe(165.0, 165.0, 0.01);
        let f = cdn_cost(&no_keepalive, &origin).expect("fires");
        assert_eq!(f.severity, Severity::Warn);
        assert_eq!(f.evidence_str("series"), Some("reused"));
        assert_eq!(f.evidence_str("upstream"), Some("new-connection"));
        assert_eq!(f.evidence_f64("hop_round_trips"), Some(2.0));
        assert_eq!(f.evidence_f64("edge_origin_rtt_ms"), Some(79.995));
        assert_eq!(f.evidence_f64("origin_server_ms"), Some(5.0));
        assert!(f.advice.contains("keepalive"), "{}", f.advice);
        let keepalive = probe(85.0, 85.0, 0.01);
        let f = cdn_cost(&keepalive, &origin).expect("fires");
        assert_eq!(f.severity, Severity::Info);
        assert_eq!(f.evidence_str("series"), Some("fresh"));
        assert_eq!(f.evidence_str("upstream"), Some("kept-alive"));
    }

    /// Pricing `cdn-cost`: a proxy that opens a new upstream connection per request
    /// saves the hop's round trips beyond one with upstream keep-alive: hop 165 −
    /// 0.01 (our RTT to it) − 5 (origin server) = 159.99 ms, two round trips of the
    /// edge's 79.995 ms RTT to the origin, less one = 79.995 ms of the 165 ms reused
    /// TTFB. An edge that only saves time is not priced (nothing to fix).
    #[test]
    fn pricing_cdn_cost() {
        let origin = probe(85.0, 85.0, 80.0);
        let f = cdn_cost(&probe(165.0, 165.0, 0.01), &origin).unwrap();
        assert_eq!(f.saving_ms, Some(79.995));
        assert_eq!(f.saving_of_ms, Some(165.0));
        assert_eq!(f.saving_basis.as_deref(), Some("reused"));
        let f = cdn_cost(&probe(85.0, 85.0, 0.01), &origin).unwrap();
        assert_eq!(f.saving_ms, None);
    }

    /// Issue 30 item 4: an edge 20 ms from us, its origin 100 ms behind it (120 ms
    /// from us), 5 ms of origin server time, a new upstream connection per request:
    /// the edge waits 20 + 2 × 101.5 + 5 = 228 ms on reused connections. The hop
    /// (228 − 20 − 5 = 203 ms) is two round trips of the edge's ≈101.5 ms, and
    /// keep-alive upstream saves ≈101.5 ms — not 203 − 120 = 83 ms, priced in our own
    /// RTT to the origin. Kept alive (20 + 100.5 + 5): quiet on the upstream, unpriced.
    #[test]
    fn prices_with_the_edges_rtt_to_the_origin() {
        let origin = probe(125.0, 125.0, 120.0);
        let f = cdn_cost(&probe(228.0, 228.0, 20.0), &origin).expect("fires");
        assert_eq!(f.evidence_str("upstream"), Some("new-connection"));
        assert_eq!(f.evidence_f64("edge_origin_rtt_ms"), Some(101.5));
        assert_eq!(f.evidence_f64("edge_rtt_ms"), Some(20.0));
        assert_eq!(f.evidence_f64("origin_rtt_ms"), Some(120.0));
        assert_eq!(f.saving_ms, Some(101.5));
        assert!(
            f.title.contains("2 round trips of the edge's own ≈"),
            "{}",
            f.title
        );
        assert!(
            f.title.contains("our own RTT to the origin 120 ms"),
            "{}",
            f.title
        );
        let f = cdn_cost(&probe(125.5, 125.5, 20.0), &origin).expect("fires");
        assert_eq!(f.evidence_str("upstream"), Some("kept-alive"));
        assert_eq!(f.severity, Severity::Info, "{}", f.title);
        assert_eq!(f.saving_ms, None);
    }

    /// HAProxy's `http-reuse never`: an upstream connection per new client
    /// connection (fresh waits 20 + 2 × 20 + 1, reused 20 + 20 + 1), the origin
    /// 0.05 ms from us but 20 ms from the edge: priced for new visitors at the
    /// fresh − reused hop, ≈20 ms, with HAProxy's `http-reuse always` in the advice.
    #[test]
    fn upstream_per_client_connection() {
        let origin = probe(1.05, 1.05, 0.05);
        let f = cdn_cost(&probe(61.0, 41.0, 20.0), &origin).expect("fires");
        assert_eq!(
            f.evidence_str("upstream"),
            Some("new-connection-per-client-connection")
        );
        assert_eq!(f.evidence_f64("edge_origin_rtt_ms"), Some(20.0));
        assert_eq!(f.saving_ms, Some(20.0));
        assert_eq!(f.saving_basis.as_deref(), Some("fresh"));
        assert!(f.advice.contains("http-reuse always"), "{}", f.advice);
    }
}
