//! Constructed facts for the rule tests: a healthy loopback probe (everything fast,
//! ratios noisy) and helpers to build series.

use crate::diagnose::facts::{Headers, Phases, ProbeFacts, SeriesFacts, TcpFacts};

/// A series with the given p50s and per-request samples (the other phases' samples
/// are the p50s, within ±1 %).
pub fn series(p50: Phases, ttfb: &[f64], total: &[f64], connect: &[f64]) -> SeriesFacts {
    let n = ttfb.len().max(total.len()).max(1);
    let around = |v: f64| spread(v, 0.01 * v, n);
    SeriesFacts {
        count: n,
        p50,
        ttfb_ms: ttfb.to_vec(),
        total_ms: total.to_vec(),
        connect_ms: connect.to_vec(),
        wait_ms: around(p50.wait),
        receive_ms: around(p50.receive),
        dns_ms: around(p50.dns),
        handshake_ms: if connect.is_empty() {
            Vec::new()
        } else {
            spread(
                p50.connect + p50.tls,
                0.01 * (p50.connect + p50.tls),
                connect.len(),
            )
        },
        tls_ms: if connect.is_empty() {
            Vec::new()
        } else {
            spread(p50.tls, 0.01 * p50.tls, connect.len())
        },
    }
}

/// `n` values spread evenly over `value ± spread`, in a shuffled order (the same
/// every time); their median is `value`.
pub fn spread(value: f64, spread: f64, n: usize) -> Vec<f64> {
    if n <= 1 {
        return vec![value; n];
    }
    let mut v: Vec<f64> = (0..n)
        .map(|i| value - spread + 2.0 * spread * i as f64 / (n - 1) as f64)
        .collect();
    // A fixed shuffle: order matters to the rules that read the first samples.
    for i in (1..n).rev() {
        v.swap(i, (i * 7 + 3) % (i + 1));
    }
    v
}

/// Sets one phase of a series to `value` ms: its p50 and, where the series keeps
/// that phase per request, every sample (within ±1 %).
pub fn set(s: &mut SeriesFacts, phase: &str, value: f64) {
    let n = s.ttfb_ms.len().max(s.count).max(1);
    let v = spread(value, 0.01 * value, n);
    match phase {
        "dns" => (s.p50.dns, s.dns_ms) = (value, v),
        "connect" => s.p50.connect = value,
        "tls" => {
            s.p50.tls = value;
            s.tls_ms = spread(value, 0.01 * value, s.connect_ms.len());
        }
        "send" => s.p50.send = value,
        "wait" => (s.p50.wait, s.wait_ms) = (value, v),
        "receive" => (s.p50.receive, s.receive_ms) = (value, v),
        "ttfb" => (s.p50.ttfb, s.ttfb_ms) = (value, v),
        "total" => (s.p50.total, s.total_ms) = (value, v),
        other => panic!("no phase {other}"),
    }
}

/// Sets a series' TTFB and total to `value` ms: the p50s and every sample (within
/// ±`jitter` ms), keeping the number of samples.
pub fn set_ttfb(s: &mut SeriesFacts, value: f64, jitter: f64) {
    let n = s.ttfb_ms.len().max(s.count).max(1);
    s.p50.ttfb = value;
    s.p50.total = value + s.p50.receive;
    s.ttfb_ms = spread(value, jitter, n);
    s.total_ms = s.ttfb_ms.iter().map(|t| t + s.p50.receive).collect();
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
        addresses: vec!["127.0.0.1".into()],
        first_client_wait_ms: None,
        client: None,
        dns: None,
        server_time_ms: None,
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
