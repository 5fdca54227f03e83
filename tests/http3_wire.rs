//! HTTP/3's numbers on the lab's wire (`lab --tls --http3 --rtt 40ms`), measured by
//! `probe --http3` and `diagnose` themselves: QUIC joins the transport and TLS 1.3
//! handshakes (RFC 9000, section 7; RFC 9001), so a fresh request takes 2 RTT + the
//! server's time where TCP + TLS 1.3 take 3. Root only; one wire at a time.

use crate::util::run_json;
use crate::util_require::require_tun;
use crate::util_wire::{assert_near, lock, start_lab};

/// Starts `lab --tls --http2 [--http3] --rtt 40ms` and returns it, its URL and the
/// certificate's path.
fn lab(http3: bool, name: &str) -> (crate::util_wire::ChildGuard, String, String) {
    let cert = crate::util::scratch().join(format!("http3-wire-{name}-{}.pem", std::process::id()));
    let cert = cert.to_str().unwrap().to_string();
    let mut args = vec![
        "--tls",
        "--http2",
        "--rtt",
        "40ms",
        "--listen",
        "127.0.0.1:0",
    ];
    if http3 {
        args.push("--http3");
    }
    args.extend(["--cert-out", &cert]);
    let (child, url) = start_lab(&args);
    (child, url, cert)
}

fn p50(v: &serde_json::Value, series: &str, phase: &str) -> f64 {
    v[series]["phases_ms"][phase]["p50"].as_f64().unwrap()
}

/// Over `--rtt 40ms`, `/delay/20ms`: fresh TTFB ≈ 2 RTT + 20 ms over h3 (100 ms) vs
/// ≈ 3 RTT + 20 ms over h2 with TLS 1.3 (140 ms), ± 10 ms; h3's connect phase (the
/// QUIC handshake) ≈ 1 RTT and counted as one round trip from QUIC's own RTT
/// estimate (≈ 40 ms); the resumed series sends its request as 0-RTT data
/// (accepted), so its TTFB ≈ 1 RTT + 20 ms. Diagnose shows them side by side.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn h3_saves_a_round_trip_over_the_wire() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let (_lab, url, cert) = lab(true, "h3");
    let target = format!("{url}delay/20ms");
    let common = [
        "probe",
        "--no-save",
        "--json",
        "-n",
        "10",
        "--cacert",
        &cert,
    ];
    let mut h3_args = common.to_vec();
    h3_args.extend(["--http3", &target]);
    let h3 = run_json(&h3_args);
    let mut h2_args = common.to_vec();
    h2_args.extend(["--http2", &target]);
    let h2 = run_json(&h2_args);
    let (h3_fresh, h2_fresh) = (p50(&h3, "fresh", "ttfb"), p50(&h2, "fresh", "ttfb"));
    let h3_connect = p50(&h3, "fresh", "connect");
    let q = &h3["quic"];
    eprintln!(
        "rtt 40ms, /delay/20ms: h3 fresh ttfb {h3_fresh:.1} ms (connect {h3_connect:.1} ms, \
         resumed {:.1} ms, reused {:.1} ms), h2 fresh ttfb {h2_fresh:.1} ms (connect {:.1}, \
         tls {:.1}); quic {q}",
        p50(&h3, "resumed", "ttfb"),
        p50(&h3, "reused", "ttfb"),
        p50(&h2, "fresh", "connect"),
        p50(&h2, "fresh", "tls"),
    );
    assert_eq!(h3["http_version"], "HTTP/3");
    assert_eq!(h2["tls"]["version"], "TLSv1.3");
    assert_near("h3 fresh TTFB p50", h3_fresh, 100.0, 10.0);
    assert_near("h2 fresh TTFB p50", h2_fresh, 140.0, 10.0);
    assert_near("h3 connect (QUIC handshake) p50", h3_connect, 40.0, 10.0);
    assert_near("QUIC min RTT", q["min_rtt_ms"].as_f64().unwrap(), 40.0, 5.0);
    let trips = q["handshake_round_trips"].as_f64().unwrap();
    assert!((0.8..1.4).contains(&trips), "handshake round trips {trips}");
    assert_eq!(q["zero_rtt"], true, "{q}");
    assert_near(
        "h3 resumed (0-RTT) TTFB p50",
        p50(&h3, "resumed", "ttfb"),
        60.0,
        10.0,
    );
    // QUIC's min RTT stands in for the kernel's: server time ≈ the 20 ms delay.
    assert_near(
        "h3 server time",
        h3["server_time_ms"]["p50"].as_f64().unwrap(),
        20.0,
        5.0,
    );

    let d = run_json(&[
        "diagnose",
        "--no-save",
        "--no-load",
        "--json",
        "-n",
        "5",
        "--cacert",
        &cert,
        &target,
    ]);
    let rows = d["protocols"].as_array().unwrap();
    let row = |v: &str| rows.iter().find(|r| r["http_version"] == v).unwrap();
    let (d2, d3) = (
        row("HTTP/2")["fresh_ttfb_ms"].as_f64().unwrap(),
        row("HTTP/3")["fresh_ttfb_ms"].as_f64().unwrap(),
    );
    eprintln!("diagnose side by side: {}", d["protocols"]);
    assert!(rows.iter().any(|r| r["http_version"] == "HTTP/1.1"));
    assert_near("diagnose: h2 − h3 fresh TTFB", d2 - d3, 40.0, 15.0);
    let ids = crate::findings::ids(&d);
    assert!(
        !ids.iter().any(|i| i == "no-http3" || i == "http3-slower"),
        "{ids:?}"
    );
}

/// The lab without `--http3` (TLS 1.3, no Alt-Svc): `no-http3` fires and prices the
/// first visit's saving at one round trip, ≈ 40 ms of the fresh TTFB.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn no_http3_prices_one_round_trip_over_the_wire() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let (_lab, url, cert) = lab(false, "noh3");
    let d = run_json(&[
        "diagnose",
        "--no-save",
        "--no-load",
        "--json",
        "-n",
        "5",
        "--cacert",
        &cert,
        &url,
    ]);
    let f = crate::findings::finding(&d, "no-http3");
    eprintln!("no-http3 over rtt 40ms: {f}");
    assert_eq!(f["evidence"]["round_trips_saved"].as_f64(), Some(1.0));
    assert_near(
        "no-http3 saving",
        f["saving_ms"].as_f64().unwrap(),
        40.0,
        5.0,
    );
    assert_eq!(f["saving_basis"], "fresh");
}
