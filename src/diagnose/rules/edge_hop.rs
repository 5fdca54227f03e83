//! The edge's own hop to the origin (issue 30 item 4), for `cdn-cost`: how many
//! round trips it takes per request and how long one of them is, estimated from what
//! latscope measures — the edge's wait less our RTT to the edge (the time behind
//! the edge), less the origin's server time measured straight with `--origin`.
//! latscope's own RTT to the origin is not the edge's: an edge 20 ms from us in
//! front of an origin 100 ms behind it is 120 ms from us by way of the edge, and
//! pricing the edge's upstream handshake in our 120 ms is wrong by the 20.
//!
//! A proxy that keeps its upstream connection alive spends one round trip to the
//! origin per request; one that opens a new upstream connection spends two (TCP's
//! handshake, then the request; a TLS upstream more, not modelled). When fresh client
//! connections pay more behind the edge than reused ones, the proxy keeps an upstream
//! connection per client connection only (HAProxy's `http-reuse never`, or `safe`
//! for a connection's first request): the difference is the upstream connect, and a
//! reused connection's hop is one round trip. Otherwise the count comes from the
//! triangle the three RTTs make: the edge → origin RTT lies between |ours to the
//! origin − ours to the edge| and their sum (generously widened), and of one or two
//! round trips only one fits in most setups; where both or neither fit, nothing is
//! estimated.

use crate::diagnose::facts::{ProbeFacts, SeriesFacts};

/// How the edge reaches the origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upstream {
    /// One round trip per request: the upstream connection is kept alive.
    KeptAlive,
    /// Two per request: a new upstream connection each time.
    NewPerRequest,
    /// A new upstream connection for each new client connection, kept for that
    /// connection's later requests.
    NewPerClientConnection,
}

impl Upstream {
    /// The evidence value (`upstream`).
    pub fn id(self) -> &'static str {
        match self {
            Upstream::KeptAlive => "kept-alive",
            Upstream::NewPerRequest => "new-connection",
            Upstream::NewPerClientConnection => "new-connection-per-client-connection",
        }
    }

    /// What it means, in a few words.
    pub fn meaning(self) -> &'static str {
        match self {
            Upstream::KeptAlive => "one round trip: the upstream connection is kept alive",
            Upstream::NewPerRequest => {
                "a new upstream connection for each request (connect, then the request)"
            }
            Upstream::NewPerClientConnection => {
                "a new upstream connection for each new client connection (connect, then \
                 the request), kept only for that client's later requests"
            }
        }
    }
}

/// The edge → origin hop, estimated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EdgeOrigin {
    /// The edge → origin RTT, ms.
    pub rtt_ms: f64,
    /// Round trips of it in the hop of the reused series.
    pub trips: u32,
    pub upstream: Upstream,
    /// What keeping the upstream connection alive would save per request where it
    /// is opened, ms: one edge → origin round trip and the connect's own overhead.
    pub saving_ms: f64,
}

/// How `edge_origin_rtt_ms` is found, as the evidence says it.
pub const FROM: &str = "edge reused TTFB − our min RTT to the edge − origin server time \
                        (--origin), over the hop's round trips";

/// Estimates the hop: `hop_reused` (ms) is the edge's reused wait − our min RTT to
/// the edge − the origin's server time; `hop_fresh` the same on fresh client
/// connections (their wait starts after our handshakes); `edge_rtt` and
/// `origin_rtt` our min RTTs to the edge and to the origin. None when the hop is
/// under a millisecond or its round trips cannot be told.
pub fn estimate(
    hop_reused: f64,
    hop_fresh: Option<f64>,
    edge_rtt: f64,
    origin_rtt: f64,
) -> Option<EdgeOrigin> {
    if hop_reused < 1.0 {
        return None;
    }
    // Fresh client connections pay an upstream connect that reused ones do not.
    if let Some(fresh) = hop_fresh {
        let extra = fresh - hop_reused;
        if extra >= 5.0_f64.max(0.5 * hop_reused) && extra <= 2.0 * hop_reused + 5.0 {
            return Some(EdgeOrigin {
                rtt_ms: hop_reused,
                trips: 1,
                upstream: Upstream::NewPerClientConnection,
                saving_ms: extra,
            });
        }
    }
    // The triangle of RTTs, widened for queueing and the proxies' own time.
    let low = 0.75 * (origin_rtt - edge_rtt).abs() - 2.0;
    let high = 1.3 * (origin_rtt + edge_rtt) + 2.0;
    let fits = |r: f64| (low..=high).contains(&r);
    let candidates: Vec<u32> = [1, 2]
        .into_iter()
        .filter(|n| fits(hop_reused / f64::from(*n)))
        .collect();
    let [trips] = candidates[..] else {
        return None;
    };
    let rtt_ms = hop_reused / f64::from(trips);
    let (upstream, saving_ms) = if trips == 1 {
        (Upstream::KeptAlive, 0.0)
    } else {
        // Keep-alive saves the hop beyond its one round trip.
        (Upstream::NewPerRequest, hop_reused - rtt_ms)
    };
    Some(EdgeOrigin {
        rtt_ms,
        trips,
        upstream,
        saving_ms,
    })
}

/// What the edge → origin hop costs, from the reused (else fresh) series of both.
pub struct Split {
    /// Our min RTT to the edge, ms.
    pub edge_rtt: f64,
    /// Our min RTT to the origin (not the edge's: `edge_hop`), ms.
    pub origin_rtt: f64,
    /// The edge's wait less our RTT to the edge, ms.
    pub behind: f64,
    /// The origin's wait less our RTT to it, ms.
    pub origin_server: f64,
    /// `behind` less `origin_server`: the hop, ms.
    pub hop: f64,
    /// The hop on fresh client connections (their wait starts after our own
    /// handshakes), when both sides have a fresh series, ms.
    pub fresh_hop: Option<f64>,
    /// The edge → origin RTT and the hop's round trips of it, when they can be told.
    pub estimate: Option<EdgeOrigin>,
}

impl Split {
    /// How the proxy reaches the origin.
    pub fn upstream(&self) -> Option<Upstream> {
        self.estimate.map(|e| e.upstream)
    }
}

fn counted(s: &Option<SeriesFacts>) -> Option<&SeriesFacts> {
    s.as_ref().filter(|s| s.count > 0)
}

/// The hop between `cdn` (the edge) and `origin` (`--origin`), from the reused
/// series of both, else the fresh ones; None without both RTTs, or when nothing can
/// be said (no estimate and our RTT to the origin under a millisecond).
pub fn split(cdn: &ProbeFacts, origin: &ProbeFacts) -> Option<Split> {
    let (a, b) = counted(&cdn.reused)
        .zip(counted(&origin.reused))
        .or_else(|| counted(&cdn.fresh).zip(counted(&origin.fresh)))?;
    let edge_rtt = cdn.tcp?.min_rtt_ms;
    let origin_rtt = origin.tcp?.min_rtt_ms;
    let behind = (a.p50.wait - edge_rtt).max(0.0);
    let origin_server = (b.p50.wait - origin_rtt).max(0.0);
    let hop = (behind - origin_server).max(0.0);
    let fresh_hop = counted(&cdn.fresh)
        .zip(counted(&origin.fresh))
        .map(|(f, o)| (f.p50.wait - edge_rtt).max(0.0) - (o.p50.wait - origin_rtt).max(0.0));
    let estimate = estimate(hop, fresh_hop, edge_rtt, origin_rtt);
    (estimate.is_some() || origin_rtt >= 1.0).then_some(Split {
        edge_rtt,
        origin_rtt,
        behind,
        origin_server,
        hop,
        fresh_hop,
        estimate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn near(what: &str, got: f64, want: f64, tol: f64) {
        assert!(
            (got - want).abs() <= tol,
            "{what}: {got:.1}, wanted {want} ± {tol}"
        );
    }

    /// Issue 30 item 4: an edge 20 ms away, its origin 100 ms behind it (120 ms from
    /// us through the edge), origin server time subtracted already. A new upstream
    /// connection per request makes a 203 ms hop: two round trips of ≈101.5 ms, and
    /// keep-alive would save ≈101.5 ms (one of them and the connect's overhead) —
    /// not the 83 ms that 203 − our own 120 ms RTT made of it. With the upstream
    /// kept alive the hop is one round trip of 100 ms and nothing to save.
    #[test]
    fn the_issues_edge_priced_with_its_own_rtt() {
        let e = estimate(203.0, Some(203.5), 20.0, 120.0).unwrap();
        assert_eq!(e.upstream, Upstream::NewPerRequest);
        assert_eq!(e.trips, 2);
        near("edge → origin RTT", e.rtt_ms, 101.5, 0.01);
        near("saving", e.saving_ms, 101.5, 0.01);
        assert!((e.saving_ms - (203.0 - 120.0)).abs() > 15.0);
        let e = estimate(100.5, Some(101.0), 20.0, 120.0).unwrap();
        assert_eq!(e.upstream, Upstream::KeptAlive);
        near("edge → origin RTT", e.rtt_ms, 100.5, 0.01);
        assert_eq!(e.saving_ms, 0.0);
    }

    /// HAProxy's `http-reuse never` behind a 20 ms wire, its origin on the wire's
    /// host side (20 ms from the edge, 0.05 ms from us): fresh client connections
    /// pay 40.5 ms behind the edge, reused ones 20.2 ms. The edge → origin RTT is the
    /// reused hop (one round trip, 20.2 ms) — our 0.05 ms to the origin says nothing
    /// of it — and a kept upstream connection would save new visitors the 20.3 ms
    /// upstream connect.
    #[test]
    fn upstream_kept_per_client_connection() {
        let e = estimate(20.2, Some(40.5), 20.3, 0.05).unwrap();
        assert_eq!(e.upstream, Upstream::NewPerClientConnection);
        assert_eq!(e.trips, 1);
        near("edge → origin RTT", e.rtt_ms, 20.2, 0.01);
        near("saving", e.saving_ms, 20.3, 0.01);
        // The same fresh and reused hops: two round trips of 20 ms each.
        let e = estimate(40.4, Some(40.6), 20.3, 0.05).unwrap();
        assert_eq!(e.upstream, Upstream::NewPerRequest);
        near("edge → origin RTT", e.rtt_ms, 20.2, 0.01);
        let e = estimate(20.3, Some(20.5), 20.3, 0.05).unwrap();
        assert_eq!(e.upstream, Upstream::KeptAlive);
    }

    /// Nothing is estimated from a hop under a millisecond, or where one and two
    /// round trips both fit the triangle (an edge as far from us as the origin is)
    /// or neither does (an origin reached by the edge over some other, far path).
    #[test]
    fn no_estimate_when_it_cannot_be_told() {
        assert_eq!(estimate(0.4, None, 0.03, 0.05), None);
        assert_eq!(estimate(60.0, None, 40.0, 40.0), None);
        assert_eq!(estimate(300.0, None, 0.05, 0.05), None);
    }
}
