//! `http3-slower` when HTTP/3 works but its path is slow: Caddy serves h3, reached
//! through a relay that holds every UDP datagram (tests/data/udp_delay_relay.py), while
//! nginx answers over TCP straight away with Caddy's own certificate and advertises
//! the relay in `Alt-Svc` (RFC 7838, section 3) — as when a network throttles or
//! detours UDP. Quiet on Caddy without the relay: tests/http3.rs.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::diagnose_json;
use crate::util_caddy::{caddy_bin, start};
use crate::util_wire::ChildGuard;

/// Each way, per datagram.
const UDP_DELAY_MS: u64 = 25;

/// RFC 9114 over a UDP path 50 ms longer per round trip than TCP's: every QUIC visit
/// is slower than the TCP probe's median, so `http3-slower` fires (warn), with nginx's
/// HTTP/1.1 as the fallback, the relay's port, and h3's fresh TTFB at least a
/// round trip of the relay above TCP's.
#[test]
fn http3_slower_fires_when_udp_is_slow_and_tcp_is_not() {
    let Some(caddy_bin) = caddy_bin("http3_slower_fires_when_udp_is_slow") else {
        return;
    };
    let Some(nginx_bin) = crate::util_nginx::nginx_bin("http3_slower_fires_when_udp_is_slow")
    else {
        return;
    };
    let caddy = start(&caddy_bin, "slowudp", "respond \"hello from caddy\" 200");
    let (_relay, relay_port) = relay(&caddy.dir, caddy.port);
    // nginx over TCP with the certificate Caddy issued for localhost (so one --cacert
    // verifies both), advertising h3 on the relay's port.
    let crt = caddy
        .dir
        .join("data/certificates/local/localhost/localhost.crt");
    let dir = crate::util_nginx::temp_dir("slowudp");
    let port = crate::util_nginx::free_port();
    let listen = format!("127.0.0.1:{port}");
    let alt = format!("add_header Alt-Svc 'h3=\":{relay_port}\"; ma=60' always;");
    crate::util_nginx::write_conf(&dir, &crate::util_nginx::tls_server(&listen, &crt, &alt));
    let _nginx = crate::util_nginx::start(&nginx_bin, &dir, listen.parse().unwrap());
    let [k, ca] = caddy.cacert();
    let url = format!("https://localhost:{port}/");
    let v = diagnose_json(&["-n", "3", &k, &ca, &url]);
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

/// Starts the relay to Caddy's UDP `port`; the guard and the relay's own port.
fn relay(dir: &Path, port: u16) -> (ChildGuard, u16) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/udp_delay_relay.py");
    let ready = dir.join("relay.port");
    let child = Command::new("python3")
        .arg(script)
        .arg(&ready)
        .arg(port.to_string())
        .arg(UDP_DELAY_MS.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 runs the relay");
    let mut guard = ChildGuard(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(&ready) {
            return (guard, text.trim().parse().expect("the relay's port"));
        }
        assert!(
            guard.wait_for_exit(Duration::from_millis(20)).is_none(),
            "the relay exited"
        );
        assert!(Instant::now() < deadline, "the relay did not start in 10 s");
    }
}
