//! Constructed facts for the rule tests: a healthy loopback probe (everything fast,
//! ratios noisy) and helpers to build series.

use crate::diagnose::facts::{Headers, Phases, ProbeFacts, SeriesFacts, TcpFacts};

/// A series with the given p50s and per-request samples.
pub fn series(p50: Phases, ttfb: &[f64], total: &[f64], connect: &[f64]) -> SeriesFacts {
    SeriesFacts {
        count: ttfb.len().max(total.len()).max(1),
        p50,
        ttfb_ms: ttfb.to_vec(),
        total_ms: total.to_vec(),
        connect_ms: connect.to_vec(),
    }
}

/// Noisy sub-millisecond samples: a 0.3 ms median with a few 3 ms outliers.
pub fn noisy_fast(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            if i % 10 == 3 {
                3.0
            } else {
                0.25 + (i % 7) as f64 * 0.02
            }
        })
        .collect()
}

/// A healthy plain-HTTP probe on loopback: sub-millisecond everything, keep-alive,
/// small body, no redirects.
pub fn healthy_probe() -> ProbeFacts {
    let fresh_p50 = Phases {
        dns: 0.05,
        connect: 0.1,
        tls: 0.0,
        send: 0.02,
        wait: 0.3,
        receive: 0.05,
        ttfb: 0.47,
        total: 0.52,
    };
    let reused_p50 = Phases {
        wait: 0.28,
        send: 0.02,
        ttfb: 0.3,
        total: 0.35,
        ..Phases::default()
    };
    let noisy = noisy_fast(20);
    ProbeFacts {
        url: "http://127.0.0.1:8080/".into(),
        https: false,
        http_version: "HTTP/1.1".into(),
        status: 200,
        statuses: Default::default(),
        fresh: Some(series(fresh_p50, &noisy, &noisy, &noisy_fast(20))),
        reused: Some(series(reused_p50, &noisy, &noisy, &[])),
        resumed: None,
        first_total_ms: Some(3.0),
        tcp: Some(TcpFacts {
            rtt_ms: 0.05,
            min_rtt_ms: 0.02,
            total_retrans: 0,
        }),
        tls: vec![],
        offered_h2: true,
        headers: Headers::from_pairs(&[("content-type", "text/plain"), ("content-length", "300")]),
        body_bytes: 300,
        accept_encoding: true,
        download: None,
        redirects: vec![],
        closed_by_server: vec![false; 20],
    }
}

/// Story 2: 110 ms away, a fresh connection pays the TCP handshake (TTFB 230 ms), a
/// reused one 118 ms (110 ms round trip + 8 ms server).
pub fn far_probe() -> ProbeFacts {
    let fresh_p50 = Phases {
        dns: 2.0,
        connect: 110.0,
        tls: 0.0,
        send: 0.0,
        wait: 118.0,
        receive: 1.0,
        ttfb: 230.0,
        total: 231.0,
    };
    let reused_p50 = Phases {
        wait: 118.0,
        ttfb: 118.0,
        total: 119.0,
        ..Phases::default()
    };
    let fresh: Vec<f64> = (0..10).map(|i| 229.0 + i as f64 * 0.3).collect();
    let reused: Vec<f64> = (0..10).map(|i| 117.5 + i as f64 * 0.2).collect();
    ProbeFacts {
        url: "http://far.example/".into(),
        fresh: Some(series(fresh_p50, &fresh, &fresh, &[110.0; 10])),
        reused: Some(series(reused_p50, &reused, &reused, &[])),
        resumed: None,
        first_total_ms: Some(231.0),
        tcp: Some(TcpFacts {
            rtt_ms: 111.0,
            min_rtt_ms: 110.0,
            total_retrans: 0,
        }),
        ..healthy_probe()
    }
}
