//! `http3-slower` when HTTP/3 works but its path is slow or lossy: Caddy serves h3,
//! reached through a relay that holds (or drops) UDP datagrams
//! (tests/data/udp_delay_relay.py), while
//! nginx answers over TCP straight away with Caddy's own certificate and advertises
//! the relay in `Alt-Svc` (RFC 7838, section 3) — as when a network throttles or
//! detours UDP. Quiet on Caddy without the relay: tests/http3.rs.

use std::path::Path;

use crate::util::diagnose_json;
use crate::util_caddy::{caddy_bin, start};
use crate::util_real::python_data_server;
use crate::util_wire::ChildGuard;

/// Each way, per datagram.
const UDP_DELAY_MS: u64 = 25;

/// RFC 9114 over a UDP path 50 ms longer per round trip than TCP's: every QUIC visit
/// is slower than the TCP probe's median, so `http3-slower` fires (warn), with nginx's
/// HTTP/1.1 as the fallback, the relay's port, and h3's fresh TTFB at least a
/// round trip of the relay above TCP's.
#[test]
fn http3_slower_fires_when_udp_is_slow_and_tcp_is_not() {
    let Some(caddy_bin) = caddy_bin() else {
        return;
    };
    let Some(nginx_bin) = crate::util_nginx::nginx_bin() else {
        return;
    };
    let caddy = start(&caddy_bin, "slowudp", "respond \"hello from caddy\" 200");
    let (_relay, relay_port) = relay(caddy.port, UDP_DELAY_MS, "0/1");
    let (_nginx, url) = nginx_advertising(&nginx_bin, &caddy, relay_port, "slowudp");
    let [k, ca] = caddy.cacert();
    let v = diagnose_json(&["-n", "8", &k, &ca, &url]);
    let h3 = &v["http3"];
    assert_eq!(h3["port"].as_u64(), Some(u64::from(relay_port)), "{h3}");
    assert!(h3["error"].is_null(), "{h3}");
    assert_eq!(h3["probe"]["tls"]["alpn"], "h3", "{h3}");
    let f = crate::findings::finding(&v, "http3-slower");
    assert_eq!(f["severity"], "warn", "{f}");
    assert_eq!(f["evidence"]["fallback"], "HTTP/1.1", "{f}");
    assert_eq!(f["evidence"]["port"].as_u64(), Some(u64::from(relay_port)));
    let e = &f["evidence"];
    let (h3_best, tcp) = (
        e["h3_fresh_ttfb_min_ms"].as_f64().unwrap(),
        e["fallback_fresh_ttfb_ms"].as_f64().unwrap(),
    );
    // A fresh h3 visit is two round trips (handshake, request), each through the
    // relay twice; allow one.
    let relay_rtt = 2.0 * UDP_DELAY_MS as f64;
    assert!(h3_best - tcp >= relay_rtt * 0.9, "{f}");
    assert!(
        e["client_cpu_wait_per_visit_ms"].as_f64().unwrap() < h3_best - tcp,
        "{f}"
    );
    assert!(!crate::findings::ids(&v).contains(&"no-http3".to_string()));
}

/// RFC 9000, sections 17.2.2 and 6.2 (RFC 9002): a path that loses the first Initial
/// of two in three new connections, without delay. Those visits wait for the
/// client's probe timeout (~1 s) and the others are as fast as TCP, so the fastest
/// visit is not slower but the median is, with the losses counted: `http3-slower`
/// fires on the median with the packets lost per visit in its evidence and title.
#[test]
fn http3_slower_fires_when_udp_loses_handshakes() {
    let Some(caddy_bin) = caddy_bin() else {
        return;
    };
    let Some(nginx_bin) = crate::util_nginx::nginx_bin() else {
        return;
    };
    let caddy = start(&caddy_bin, "lossyudp", "respond \"hello from caddy\" 200");
    let (_relay, relay_port) = relay(caddy.port, 0, "2/3");
    let (_nginx, url) = nginx_advertising(&nginx_bin, &caddy, relay_port, "lossyudp");
    let [k, ca] = caddy.cacert();
    let v = diagnose_json(&["-n", "3", &k, &ca, &url]);
    let h3 = &v["http3"];
    assert!(h3["error"].is_null(), "{h3}");
    let fresh = &h3["probe"]["fresh"]["phases_ms"]["ttfb"];
    let lost = h3["probe"]["quic"]["fresh_lost_packets"].as_u64().unwrap();
    assert!(lost >= 2, "{}", h3["probe"]["quic"]);
    let f = crate::findings::finding(&v, "http3-slower");
    let e = &f["evidence"];
    // The median waited for a probe timeout (≥ 333 ms with no RTT sample yet).
    let tcp = e["fallback_fresh_ttfb_ms"].as_f64().unwrap();
    assert!(e["h3_fresh_ttfb_ms"].as_f64().unwrap() - tcp > 300.0, "{f}");
    // And the visits that lost nothing did not.
    let best = e["h3_fresh_ttfb_min_ms"].as_f64().unwrap();
    assert!((best - fresh["min"].as_f64().unwrap()).abs() < 0.01, "{f}");
    assert!(best < 300.0, "{f}");
    assert!(
        e["fresh_lost_packets_per_visit"].as_f64().unwrap() >= 0.5,
        "{f}"
    );
    assert!(
        f["title"].as_str().unwrap().contains("lost per visit"),
        "{f}"
    );
}

/// nginx over TLS on a free port with the certificate Caddy issued for localhost
/// (so one --cacert verifies both), advertising h3 on `relay_port`: the guard and the
/// URL.
fn nginx_advertising(
    bin: &Path,
    caddy: &crate::util_caddy::Caddy,
    relay_port: u16,
    tag: &str,
) -> (ChildGuard, String) {
    let crt = caddy
        .dir
        .join("data/certificates/local/localhost/localhost.crt");
    let dir = crate::util_nginx::temp_dir(tag);
    let port = crate::util::free_port();
    let listen = format!("127.0.0.1:{port}");
    let alt = format!("add_header Alt-Svc 'h3=\":{relay_port}\"; ma=60' always;");
    crate::util_nginx::write_conf(&dir, &crate::util_nginx::tls_server(&listen, &crt, &alt));
    let nginx = crate::util_nginx::start(bin, &dir, listen.parse().unwrap());
    (nginx, format!("https://localhost:{port}/"))
}

/// Starts the relay to Caddy's UDP `port`, holding each datagram `delay_ms` and
/// losing first Initials as `lose` says (`K/N`); the guard and the relay's own port.
fn relay(port: u16, delay_ms: u64, lose: &str) -> (ChildGuard, u16) {
    let (port, delay_ms) = (port.to_string(), delay_ms.to_string());
    python_data_server("udp_delay_relay.py", &[&port, &delay_ms, lose])
}
