//! Proxy verdicts on real nginx (issue 12.5): nginx with its own config in a temp
//! dir on a free 127.0.0.1 port, in front of an origin 80 ms away (`latscope lab
//! --rtt 80ms` behind the wire, root only), with and without upstream keep-alive.

use std::net::SocketAddr;
use std::path::Path;

use crate::findings::{assert_quiet, finding, num, text};
use crate::util::free_port;
use crate::util_nginx::{nginx_bin, start, temp_dir, write_conf};
use crate::util_require::require_tun;
use crate::util_wire::{lock, start_lab, ChildGuard};

/// nginx on 127.0.0.1:`port` proxying to `origin` (host:port), keeping upstream
/// connections alive when `keepalive`. It sends no Via: nothing in its answers says
/// it is a proxy.
fn nginx_proxy(bin: &Path, dir: &Path, port: u16, origin: &str, keepalive: bool) -> ChildGuard {
    let block = if keepalive {
        format!(
            "upstream origin {{ server {origin}; keepalive 16; }}\n\
             server {{ listen 127.0.0.1:{port}; location / {{ proxy_pass http://origin; \
             proxy_http_version 1.1; proxy_set_header Connection \"\"; }} }}"
        )
    } else {
        format!(
            "server {{ listen 127.0.0.1:{port}; location / {{ proxy_pass http://{origin}; }} }}"
        )
    };
    write_conf(dir, &block);
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    start(bin, dir, addr)
}

/// Removes a test's temp dir when dropped (declared before the nginx guard, so
/// after nginx has stopped).
struct Cleanup(std::path::PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Issue 12.5, on real nginx in front of an origin 80 ms away (`latscope lab --rtt
/// 80ms` behind the wire).
/// - Without `keepalive` upstream, and without `--origin`: the 165 ms after the
///   round trip is the hop behind the proxy, so `server-dominates` says "server (or
///   whatever is behind it)" and suggests `--origin`. With `--origin`, `cdn-cost`
///   warns that the proxy is slower on reused connections (165 ms vs 85 ms straight
///   to the origin) and splits it: two round trips to the origin — a new upstream
///   connection per request. Upstream keep-alive would save the round trip beyond
///   one (`saving_ms` ≈ 80 ms of the reused 165 ms). The first request is no slower
///   than the rest: no `cold-start`.
/// - With `keepalive`: the proxy is not slower (the hop is one round trip), and its
///   first request, which opens the upstream connection, gets `cold-start` (info,
///   ≈1 round trip to the origin more than the later ones), priced at first − later
///   requests, once.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn nginx_proxy_in_front_of_a_far_origin() {
    let _lock = lock();
    if !require_tun() {
        return;
    }
    let Some(bin) = nginx_bin() else {
        return;
    };
    let (_lab, url) = start_lab(&["--listen", "127.0.0.1:0", "--rtt", "80ms"]);
    let origin = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let dir = temp_dir("proxy-plain");
    let _clean = Cleanup(dir.clone());
    let port = free_port();
    let _plain = nginx_proxy(&bin, &dir, port, &origin, false);
    let target = format!("http://127.0.0.1:{port}/delay/3ms");

    let v = crate::findings::diagnose(&[&target, "--no-load"]);
    let f = finding(&v, "server-dominates");
    eprintln!("no --origin: {} — {}", f["title"], f["advice"]);
    assert!(
        f["title"]
            .as_str()
            .unwrap()
            .contains("or whatever is behind it"),
        "{f}"
    );
    assert!(f["advice"].as_str().unwrap().contains("--origin"), "{f}");
    let summary = v["summary"].as_str().unwrap();
    assert!(summary.contains("whatever is behind it"), "{summary}");

    let v = crate::findings::diagnose(&[&target, "--no-load", "--origin", &origin]);
    let f = finding(&v, "cdn-cost");
    eprintln!("no keepalive: {} — {}", f["title"], f["advice"]);
    assert_eq!(f["severity"], "warn", "{f}");
    assert_eq!(text(f, "series"), "reused", "{f}");
    assert_eq!(text(f, "upstream"), "new-connection", "{f}");
    let trips = num(f, "hop_round_trips");
    assert!((1.6..=2.6).contains(&trips), "{trips}: {f}");
    assert!(num(f, "cost_ms") >= 50.0, "{f}");
    let saving = f["saving_ms"].as_f64().expect("cdn-cost is priced");
    assert!(
        (saving - (num(f, "hop_ms") - num(f, "edge_origin_rtt_ms"))).abs() < 0.01,
        "{f}"
    );
    assert!(
        (55.0..=110.0).contains(&saving),
        "one round trip of 80 ms: {f}"
    );
    assert_eq!(f["saving_basis"], "reused", "{f}");
    assert_quiet(
        &v,
        "cold-start",
        "a proxy that opens a new upstream connection every time",
    );

    let dir2 = temp_dir("proxy-keepalive");
    let _clean2 = Cleanup(dir2.clone());
    let port2 = free_port();
    let _kept = nginx_proxy(&bin, &dir2, port2, &origin, true);
    let target2 = format!("http://127.0.0.1:{port2}/delay/3ms");
    let v = crate::findings::diagnose(&[&target2, "--no-load", "--origin", &origin]);
    let f = finding(&v, "cold-start");
    eprintln!("keepalive, first request: {}", f["title"]);
    assert_eq!(f["severity"], "info", "{f}");
    assert_eq!(text(f, "kind"), "first-only", "{f}");
    let trips = num(f, "origin_round_trips");
    assert!((0.6..=2.5).contains(&trips), "{trips}: {f}");
    let saving = f["saving_ms"].as_f64().expect("cold-start is priced");
    assert!(
        (saving - (num(f, "first_ms") - num(f, "steady_p50_ms"))).abs() < 0.01,
        "{f}"
    );
    assert_eq!(f["saving_basis"], "first request", "{f}");
    if let Some(c) = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "cdn-cost")
    {
        eprintln!("keepalive: {}", c["title"]);
        assert_eq!(c["severity"], "info", "{c}");
        assert_eq!(c["evidence"]["upstream"], "kept-alive", "{c}");
    }
}
