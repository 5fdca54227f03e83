//! Issue 30 item 4: the edge's own hop to the origin, priced with the edge's RTT.
//! HAProxy (Debian's `haproxy`) behind `latscope wire --rtt 20ms` as the edge; its
//! origin, nginx, on this host, which the edge reaches through the same wire
//! (198.18.N.1, 20 ms from the edge) and latscope straight on 127.0.0.1 (`--origin`,
//! well under a millisecond): latscope's own RTT to the origin says nothing of the
//! edge's. HAProxy 2.6's `http-reuse never` keeps a server connection for its client
//! connection only, so each new client connection opens one upstream (TCP's
//! handshake, RFC 9293 §3.5, then the request: two edge → origin round trips);
//! `http-reuse always` shares idle ones, so a new client reuses one (one round trip).
//! Root only (the wire), one at a time under `util_wire::lock()`.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::findings::{assert_in, finding, num, text};
use crate::util::{free_port, run_json_within, LIMIT};
use crate::util_nginx::{nginx_bin, start, start_wire, stop_wire, temp_dir, wait_for_port};
use crate::util_require::{require, require_tun};
use crate::util_wire::ChildGuard;

/// The wire's RTT, which is also the edge → origin RTT, ms.
const RTT: f64 = 20.0;

/// HAProxy's port inside the wire's namespace.
const EDGE_PORT: u16 = 8080;

/// Starts HAProxy with `http-reuse REUSE` behind a 20 ms wire, its server the
/// origin on the wire's host side (its address found inside the namespace from the
/// wire's device, 198.18.N.2 → 198.18.N.1) at `origin_port`. Returns the wire's
/// guard and the edge's address.
fn haproxy_edge(dir: &Path, reuse: &str, origin_port: u16) -> (ChildGuard, String) {
    let conf = dir.join(format!("haproxy-{reuse}.cfg"));
    std::fs::write(
        &conf,
        format!(
            "global\n  maxconn 200\ndefaults\n  mode http\n  timeout connect 5s\n  \
             timeout client 10s\n  timeout server 10s\nfrontend fe\n  bind :{EDGE_PORT}\n  \
             default_backend be\nbackend be\n  http-reuse {reuse}\n  \
             server origin \"${{ORIGIN}}\"\n"
        ),
    )
    .unwrap();
    let script = format!(
        "me=$(ip -o -4 addr show | awk '/lsw/ {{print $4}}' | cut -d/ -f1); \
         ORIGIN=\"${{me%.2}}.1:{origin_port}\" exec haproxy -db -f {}",
        conf.display()
    );
    let command = ["sh".to_string(), "-c".to_string(), script];
    let (wire, ip) = start_wire(&["--rtt", "20ms"], &command);
    wait_for_port(
        format!("{ip}:{EDGE_PORT}").parse().unwrap(),
        Duration::from_secs(10),
        dir,
    );
    (wire, ip)
}

/// nginx as the origin on 127.0.0.1 and on the wires' host sides `host_ips`, a 200
/// "hello" on every path.
fn nginx_origin(bin: &Path, dir: &Path, host_ips: &[String], port: u16) -> ChildGuard {
    let listens: String = host_ips
        .iter()
        .map(|ip| format!("listen {ip}:{port}; "))
        .collect();
    crate::util_nginx::write_conf(
        dir,
        &format!(
            "  server {{ listen 127.0.0.1:{port}; {listens}\
             location / {{ return 200 \"hello\\n\"; }} }}\n"
        ),
    );
    start(bin, dir, format!("127.0.0.1:{port}").parse().unwrap())
}

/// The wire's host side for its server side 198.18.N.2: 198.18.N.1.
fn host_side(edge: &str) -> String {
    let net = edge
        .strip_suffix(".2")
        .expect("the wire's server side ends in .2");
    format!("{net}.1")
}

fn diagnose(edge: &str, origin_port: u16) -> Value {
    let url = format!("http://{edge}:{EDGE_PORT}/");
    let origin = format!("127.0.0.1:{origin_port}");
    run_json_within(
        &[
            "diagnose",
            "--json",
            "--no-save",
            "--no-load",
            "-n",
            "6",
            &url,
            "--origin",
            &origin,
        ],
        LIMIT,
    )
}

/// `http-reuse never`: `cdn-cost` names a new upstream connection per new client
/// connection and prices keeping it with the edge's RTT to the origin, ≈20 ms (one
/// round trip of the wire, plus the connect's overhead) — though latscope's own RTT
/// to the origin is under a millisecond. `http-reuse always`: the hop is one round
/// trip, the upstream "kept-alive", and nothing is priced for keeping it (what is
/// left is the edge's own distance from us, the whole cost of going through it).
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn haproxy_upstream_priced_with_the_edges_rtt() {
    let _lock = crate::util_wire::lock();
    if !require_tun() || !require("haproxy") {
        return;
    }
    let Some(bin) = nginx_bin() else {
        return;
    };
    let dir = temp_dir("edge-hop");
    let origin_port = free_port();
    // Both edges up before the origin, which listens on both wires' host sides.
    let (mut never, edge) = haproxy_edge(&dir, "never", origin_port);
    let (mut always, edge2) = haproxy_edge(&dir, "always", origin_port);
    let _origin = nginx_origin(
        &bin,
        &dir,
        &[host_side(&edge), host_side(&edge2)],
        origin_port,
    );

    let v = diagnose(&edge, origin_port);
    let f = finding(&v, "cdn-cost");
    eprintln!("http-reuse never: {} — {:?}", f["title"], f["saving_ms"]);
    assert_eq!(f["severity"], "warn", "{f}");
    assert_eq!(
        text(f, "upstream"),
        "new-connection-per-client-connection",
        "{f}"
    );
    assert!(
        num(f, "origin_rtt_ms") < 5.0,
        "our own RTT to the origin: {f}"
    );
    assert_in(
        "edge → origin RTT",
        num(f, "edge_origin_rtt_ms"),
        0.6 * RTT,
        1.6 * RTT,
    );
    assert_in("edge RTT", num(f, "edge_rtt_ms"), 0.75 * RTT, 1.5 * RTT);
    let saving = f["saving_ms"].as_f64().expect("priced");
    // One edge → origin round trip and the connect's own overhead.
    assert_in("saving", saving, 0.75 * RTT, 1.75 * RTT);
    assert_eq!(f["saving_basis"], "fresh", "{f}");
    assert!(
        f["advice"].as_str().unwrap().contains("http-reuse always"),
        "{f}"
    );
    assert!(stop_wire(&mut never).is_some(), "the wire ends on SIGTERM");

    let v = diagnose(&edge2, origin_port);
    let f = finding(&v, "cdn-cost");
    eprintln!("http-reuse always: {} — {:?}", f["title"], f["saving_ms"]);
    assert_eq!(text(f, "upstream"), "kept-alive", "{f}");
    assert_in(
        "edge → origin RTT",
        num(f, "edge_origin_rtt_ms"),
        0.6 * RTT,
        1.6 * RTT,
    );
    assert_eq!(num(f, "hop_round_trips"), 1.0, "{f}");
    assert!(!f["advice"].as_str().unwrap().contains("http-reuse"), "{f}");
    // Not priced as upstream keep-alive: only the edge's whole cost, if anything.
    if let Some(s) = f["saving_ms"].as_f64() {
        assert!(
            (s - num(f, "cost_ms")).abs() < 0.01,
            "an edge that keeps its upstream is priced whole, not per round trip: {f}"
        );
    }
    assert!(stop_wire(&mut always).is_some(), "the wire ends on SIGTERM");
    let _ = std::fs::remove_dir_all(&dir);
}
