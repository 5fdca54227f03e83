//! HTTP/3 (`--http3`, issue 20) against a real peer: Caddy, which serves h3 over UDP
//! on its https port with `tls internal` (RFC 9114; QUIC: RFC 9000/9001), and the
//! error when nothing answers over UDP.

use std::time::{Duration, Instant};

use crate::util::{run_json, run_within};
use crate::util_caddy::{caddy_bin, start};

/// Over HTTP/3 to Caddy: ALPN h3 negotiated (RFC 9114, section 3.1), HTTP/3 200,
/// `connect` is the QUIC handshake (no separate tls phase: RFC 9001 runs TLS 1.3
/// inside QUIC's handshake), QUIC's own RTT estimate in place of TCP_INFO, and a
/// returning client resumes with 0-RTT (Caddy accepts early data for GET).
#[test]
fn probe_http3_on_caddy_negotiates_h3_and_times_the_quic_handshake() {
    let Some(bin) = caddy_bin("probe_http3_on_caddy") else {
        return;
    };
    let caddy = start(&bin, "probe", "respond \"hello from caddy\" 200");
    let [k, ca] = caddy.cacert();
    let url = caddy.url("/");
    let v = run_json(&[
        "probe",
        "--no-save",
        "--json",
        "--http3",
        "-n",
        "5",
        &k,
        &ca,
        &url,
    ]);
    assert_eq!(v["http_version"], "HTTP/3", "{v}");
    assert_eq!(v["status"], 200);
    assert_eq!(v["tls"]["alpn"], "h3");
    assert_eq!(v["tls"]["version"], "TLSv1.3");
    assert_eq!(v["headers"]["server"], "Caddy");
    let fresh = &v["fresh"]["phases_ms"];
    assert!(fresh["connect"]["p50"].as_f64().unwrap() > 0.0, "{fresh}");
    assert_eq!(fresh["tls"]["max"].as_f64(), Some(0.0), "{fresh}");
    // QUIC's estimate, labelled, instead of the kernel's TCP_INFO.
    assert!(v["tcp"].is_null(), "{}", v["tcp"]);
    let q = &v["quic"];
    assert_eq!(q["rtt_source"], "quic");
    assert!(q["rtt_ms"].as_f64().unwrap() > 0.0, "{q}");
    assert!(q["min_rtt_ms"].as_f64().unwrap() > 0.0, "{q}");
    assert!(q["handshake_ms"].as_f64().unwrap() > 0.0, "{q}");
    // Sessions kept between samples: resumed, with 0-RTT accepted by Caddy.
    assert_eq!(q["resumed"], true, "{q}");
    assert!(
        v["resumed"]["count"].as_u64().unwrap() >= 1,
        "{}",
        v["resumed"]
    );
    assert_eq!(q["zero_rtt"], true, "{q}");
    let samples = v["samples"].as_array().unwrap();
    assert!(samples.iter().all(|s| s["quic_rtt_ms"].as_f64().is_some()));
    let resumed: Vec<_> = samples
        .iter()
        .filter(|s| s["series"] == "resumed")
        .collect();
    assert!(resumed
        .iter()
        .all(|s| s["zero_rtt"] == true && s["tls_resumed"] == true));
    // 0-RTT: the connection is usable at once, so its connect phase is below a
    // full handshake's.
    let resumed_connect = v["resumed"]["phases_ms"]["connect"]["p50"]
        .as_f64()
        .unwrap();
    assert!(
        resumed_connect < fresh["connect"]["p50"].as_f64().unwrap(),
        "resumed connect {resumed_connect} vs fresh {fresh}"
    );
}

/// The same Caddy over HTTP/2 and HTTP/3: h2 pays TCP + TLS (two phases), h3 one
/// QUIC handshake; both answer from the same server.
#[test]
fn probe_h2_vs_h3_on_caddy() {
    let Some(bin) = caddy_bin("probe_h2_vs_h3_on_caddy") else {
        return;
    };
    let caddy = start(&bin, "h2h3", "respond \"hello from caddy\" 200");
    let [k, ca] = caddy.cacert();
    let url = caddy.url("/");
    let h2 = run_json(&["probe", "--no-save", "--json", "-n", "5", &k, &ca, &url]);
    let h3 = run_json(&[
        "probe",
        "--no-save",
        "--json",
        "--http3",
        "-n",
        "5",
        &k,
        &ca,
        &url,
    ]);
    assert_eq!(h2["http_version"], "HTTP/2");
    assert_eq!(h2["tls"]["alpn"], "h2");
    assert_eq!(h3["tls"]["alpn"], "h3");
    // Caddy advertises its h3 over TCP (RFC 7838).
    assert!(
        h2["headers"]["alt-svc"]
            .as_str()
            .unwrap()
            .contains("h3=\":"),
        "{}",
        h2["headers"]
    );
    assert!(h2["fresh"]["phases_ms"]["tls"]["p50"].as_f64().unwrap() > 0.0);
    assert!(h2["tcp"]["rtt_ms"].as_f64().is_some());
    assert_eq!(h3["fresh"]["phases_ms"]["tls"]["p50"].as_f64(), Some(0.0));
    assert!(h3["quic"]["min_rtt_ms"].as_f64().is_some());
    for v in [&h2, &h3] {
        assert_eq!(v["status"], 200);
        assert!(v["fresh"]["count"].as_u64().unwrap() >= 5);
        assert!(v["reused"]["count"].as_u64().unwrap() >= 5);
    }
}

/// Caddy's internal CA is not trusted without --cacert: over QUIC too the
/// certificate is verified, and the error says why and what to do; exit 1.
#[test]
fn probe_http3_verifies_the_certificate() {
    let Some(bin) = caddy_bin("probe_http3_verifies_the_certificate") else {
        return;
    };
    let caddy = start(&bin, "verify", "respond \"hello\" 200");
    let url = caddy.url("/");
    let out = run_within(
        &["probe", "--no-save", "--http3", "-n", "2", &url],
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Caddy Local Authority") && err.contains("--cacert"),
        "{err}"
    );
    // -k skips verification, as over TCP.
    let v = run_json(&[
        "probe",
        "--no-save",
        "--json",
        "--http3",
        "-n",
        "2",
        "-k",
        &url,
    ]);
    assert_eq!(v["tls"]["alpn"], "h3");
}

/// Nothing listens on the UDP port (UDP blocked looks the same): a clear error
/// naming the address within the timeout, exit 1 — not quinn's 30 s idle timeout.
#[test]
fn probe_http3_with_nothing_on_udp_fails_within_the_timeout() {
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("https://127.0.0.1:{port}/");
    let start = Instant::now();
    let out = run_within(
        &[
            "probe",
            "--no-save",
            "--http3",
            "-k",
            "-n",
            "3",
            "--timeout",
            "500ms",
            &url,
        ],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no answer over UDP"), "{err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    // Three tries of 500 ms at most, then it gives up.
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    // --http3 is https only.
    let out = run_within(
        &["probe", "--no-save", "--http3", "http://127.0.0.1:1/"],
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(2));
}
