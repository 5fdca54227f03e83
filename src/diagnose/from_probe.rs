//! Adapters: a probe's result and a cache audit's observations as the facts the
//! rules read.

use crate::probe::audit::{CacheObservation, Seen};
use crate::probe::{ProbeResult, Sample, Series, SeriesSummary};

use super::facts::{
    CacheFacts, ClientNoise, ConditionalFacts, DnsFacts, DownloadFacts, Headers, Phases,
    ProbeFacts, RedirectHop, RepeatFacts, SeriesFacts, TcpFacts, TlsFacts,
};

/// The facts of one probe. `offered_h2`: the client put h2 in ALPN.
pub fn probe_facts(p: &ProbeResult, offered_h2: bool) -> ProbeFacts {
    let series = |s: Series, summary: &SeriesSummary| {
        let ok: Vec<&Sample> = p.ok_samples(s).collect();
        let m = &summary.phases_ms;
        SeriesFacts {
            count: summary.count,
            p50: Phases {
                dns: m.dns.p50,
                connect: m.connect.p50,
                tls: m.tls.p50,
                send: m.send.p50,
                wait: m.wait.p50,
                receive: m.receive.p50,
                ttfb: m.ttfb.p50,
                total: m.total.p50,
            },
            ttfb_ms: ok.iter().map(|s| s.phases_ms.ttfb).collect(),
            total_ms: ok.iter().map(|s| s.phases_ms.total).collect(),
            connect_ms: ok
                .iter()
                .filter(|s| s.new_connection)
                .map(|s| s.phases_ms.connect)
                .collect(),
            wait_ms: ok.iter().map(|s| s.phases_ms.wait).collect(),
            receive_ms: ok.iter().map(|s| s.phases_ms.receive).collect(),
            dns_ms: ok.iter().map(|s| s.phases_ms.dns).collect(),
            handshake_ms: ok
                .iter()
                .filter(|s| s.new_connection)
                .map(|s| s.phases_ms.connect + s.phases_ms.tls)
                .collect(),
            tls_ms: ok
                .iter()
                .filter(|s| s.new_connection)
                .map(|s| s.phases_ms.tls)
                .collect(),
        }
    };
    let fresh = (p.fresh.count > 0).then(|| series(Series::Fresh, &p.fresh));
    let reused = p
        .reused
        .as_ref()
        .filter(|r| r.count > 0)
        .map(|r| series(Series::Reused, r));
    let resumed = p
        .resumed
        .as_ref()
        .filter(|r| r.count > 0)
        .map(|r| series(Series::Resumed, r));
    // The new connections of the client that keeps sessions (the fresh series
    // switches resumption off on purpose: its full handshakes say nothing about it).
    let tls = p
        .samples
        .iter()
        .filter(|s| {
            p.scheme == "https"
                && s.error.is_none()
                && s.new_connection
                && s.tls_client_resumes != Some(false)
        })
        .filter_map(|s| {
            s.tls_resumed.map(|resumed| TlsFacts {
                version: p
                    .tls
                    .as_ref()
                    .map(|t| t.version.clone())
                    .unwrap_or_default(),
                alpn: p.tls.as_ref().and_then(|t| t.alpn.clone()),
                resumed,
            })
        })
        .collect();
    let headers: Vec<(&str, &str)> = p
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    ProbeFacts {
        url: p.target.clone(),
        https: p.scheme == "https",
        http_version: p.http_version.clone().unwrap_or_default(),
        status: p.status.unwrap_or(0),
        statuses: p.samples.iter().filter_map(|s| s.status).fold(
            std::collections::BTreeMap::new(),
            |mut m, status| {
                *m.entry(status).or_insert(0) += 1;
                m
            },
        ),
        fresh,
        reused,
        resumed,
        first_total_ms: p.first_request.map(|f| f.total_ms),
        // Over HTTP/3 QUIC's RTT estimate stands in for the kernel's (no TCP_INFO),
        // and its lost packets for retransmissions.
        tcp: p
            .tcp
            .map(|t| TcpFacts {
                rtt_ms: t.rtt_ms,
                min_rtt_ms: t.min_rtt_ms,
                total_retrans: u64::from(t.total_retrans),
            })
            .or(p
                .quic
                .as_ref()
                .filter(|q| q.min_rtt_ms > 0.0)
                .map(|q| TcpFacts {
                    rtt_ms: q.rtt_ms,
                    min_rtt_ms: q.min_rtt_ms,
                    total_retrans: q.lost_packets,
                })),
        tls,
        offered_h2,
        headers: Headers::from_pairs(&headers),
        body_bytes: p.body_bytes,
        accept_encoding: true,
        download: p.download.map(|d| {
            let big = |fresh: bool| {
                p.samples
                    .iter()
                    .filter(|s| s.error.is_none() && !s.disturbed && s.body_bytes >= 1 << 20)
                    .filter(|s| s.new_connection == fresh)
                    .map(|s| s.phases_ms.receive)
                    .collect()
            };
            DownloadFacts {
                body_bytes: d.body_bytes,
                fresh_ms: d.fresh_receive_ms,
                warm_ms: d.warm_receive_ms,
                fresh_samples_ms: big(true),
                warm_samples_ms: big(false),
            }
        }),
        redirects: p.redirects.iter().map(hop_fact).collect(),
        closed_by_server: p
            .samples
            .iter()
            .filter(|s| s.error.is_none())
            .map(|s| s.closed_by_server)
            .collect(),
        addresses: p.addresses.clone(),
        first_client_wait_ms: p
            .samples
            .iter()
            .find(|s| s.error.is_none())
            .and_then(|s| s.client_wait_ms),
        server_time_ms: p.server_time_ms.map(|s| s.p50),
        dns: p.dns.map(|d| DnsFacts {
            first_ms: d.first_ms,
            repeat_p50_ms: d.repeat_p50_ms,
            repeats: d.repeats,
            ttl_s: d.ttl_s,
        }),
        client: p.client.map(|c| ClientNoise {
            samples: c.samples,
            disturbed: c.disturbed,
            wait_ms: c.cpu_wait_ms,
            wait_share: c.cpu_wait_pct / 100.0,
        }),
    }
}

/// The facts of a cache audit; `load_hit_ratio` from the load ramp when the
/// responses said.
pub fn cache_facts(c: &CacheObservation, load_hit_ratio: Option<f64>) -> CacheFacts {
    let cond = |s: &Option<Seen>| {
        s.as_ref().map(|s| ConditionalFacts {
            status: s.status,
            body_bytes: s.body_bytes,
            time_ms: s.time_ms,
            excess_body: s.excess_body,
        })
    };
    let mut repeats = vec![RepeatFacts {
        headers: Headers::from_pairs(&c.full.headers),
        ttfb_ms: c.full.ttfb_ms,
    }];
    repeats.extend(c.repeats.iter().map(|r| RepeatFacts {
        headers: Headers::from_pairs(&r.headers),
        ttfb_ms: r.ttfb_ms,
    }));
    CacheFacts {
        get: c.method == "GET" || c.method == "HEAD",
        anonymous: c.anonymous,
        cookie: c.cookie,
        authorization: c.authorization,
        request_cookies: c.cookie_names.clone(),
        query: c.url.contains('?'),
        status: c.full.status,
        headers: Headers::from_pairs(&c.full.headers),
        full_time_ms: Some(if c.repeats.is_empty() {
            c.full.time_ms
        } else {
            crate::diagnose::rules::median(&c.repeats.iter().map(|r| r.time_ms).collect::<Vec<_>>())
        }),
        if_none_match: cond(&c.if_none_match),
        if_modified_since: cond(&c.if_modified_since),
        repeats,
        load_hit_ratio,
        origin_ttfb_ms: None,
        probe_first: None,
    }
}

/// The redirects an audit followed, as the probe facts carry them.
pub fn redirect_facts(c: &CacheObservation) -> Vec<RedirectHop> {
    c.redirects.iter().map(hop_fact).collect()
}

fn hop_fact(h: &crate::probe::redirect::Hop) -> RedirectHop {
    RedirectHop {
        status: h.status,
        location: h.location.clone(),
        time_ms: h.time_ms,
        from: h.url.clone(),
    }
}
