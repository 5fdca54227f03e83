//! Batched wakes on the epoll engine (`src/load/worker/wake.rs`) against a real
//! nginx: with many requests in flight a worker thread sleeps a short window before
//! each `epoll_wait`, so one wake reads several responses. The window must be taken
//! where it pays (a saturated server, HTTP/2 with 1,000 streams, HTTP/1.1 with 200
//! connections), stay at most a fiftieth of what is measured and at most 200 µs,
//! lose or repeat no request, and never be taken with few requests in flight.

use std::net::SocketAddr;
use std::time::Duration;

use crate::util::{free_port, json_of, run_within};
use crate::util_nginx::{nginx_bin, start, temp_dir, wait_for_port, write_conf};

/// nginx with an h2c listener and an HTTP/1.1 one, a 1 KiB file on both, each
/// logging its requests; connections are never closed for their request count.
struct Nginx {
    _guard: crate::util_wire::ChildGuard,
    dir: std::path::PathBuf,
    h2: String,
    h1: String,
}

fn nginx(name: &str) -> Option<Nginx> {
    let bin = nginx_bin()?;
    let dir = temp_dir(name);
    std::fs::create_dir_all(dir.join("www")).unwrap();
    std::fs::write(dir.join("www/1k"), vec![b'a'; 1024]).unwrap();
    let (p2, p1) = (free_port(), free_port());
    let d = dir.display();
    let server = |port: u16, h2: &str, log: &str| {
        format!(
            "  server {{\n    listen 127.0.0.1:{port}{h2};\n    keepalive_requests 10000000;\n    \
             access_log {d}/{log};\n    root {d}/www;\n    location = /1k {{ }}\n  }}\n"
        )
    };
    write_conf(
        &dir,
        &(server(p2, " http2", "h2.log") + &server(p1, "", "h1.log")),
    );
    let a2: SocketAddr = format!("127.0.0.1:{p2}").parse().unwrap();
    let guard = start(&bin, &dir, a2);
    wait_for_port(
        format!("127.0.0.1:{p1}").parse().unwrap(),
        Duration::from_secs(10),
        &dir,
    );
    Some(Nginx {
        _guard: guard,
        dir,
        h2: format!("http://127.0.0.1:{p2}/1k"),
        h1: format!("http://127.0.0.1:{p1}/1k"),
    })
}

/// nginx's `log` holds every request run `j` counted complete, and none beyond
/// those it sent (the ones in flight at the end were sent, not counted).
fn logged_all(dir: &std::path::Path, log: &str, j: &serde_json::Value) {
    let logged = std::fs::read_to_string(dir.join(log))
        .unwrap_or_default()
        .lines()
        .count() as u64;
    let (ok, sent) = (j["ok"].as_u64().unwrap(), j["incomplete"].as_u64().unwrap());
    assert!(
        (ok..=ok + sent).contains(&logged),
        "nginx logged {logged}, latscope counted {ok} and {sent} in flight"
    );
}

/// `load URL ARGS --threads 1 --json --no-save` (≤ 60 s): its JSON, after
/// checking it ended on its own with every response a 200.
fn load(url: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["load", url, "--threads", "1", "--json", "--no-save"];
    all.extend_from_slice(args);
    let out = run_within(&all, Duration::from_secs(60));
    let j = json_of(&out);
    assert_eq!(out.status.code(), Some(0), "{j}");
    assert_eq!(j["requests"], j["ok"], "every request a 200: {j}");
    assert_eq!(j["requests"], j["statuses"]["200"], "{j}");
    j
}

/// The longest window a run slept, µs, checked against its bounds: at most
/// 200 µs, and at most a fiftieth of the slowest second's p99. The rule takes a
/// fiftieth of the p10 of each 100 ms, which can pass the run's p50 or p99 in a
/// tick slowed by a stall (a 31 µs window beside a p50 of 1.5 ms), but not the
/// p99 of the second it fell in; a window off by the unit or by a factor of
/// several would not fit under it. None when no thread slept a window.
fn window_us(j: &serde_json::Value) -> Option<f64> {
    let w = j["wake_window_us"].as_f64()?;
    let p99_us = j["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["p99_ms"].as_f64())
        .fold(0.0, f64::max)
        * 1e3;
    assert!(w > 0.0 && w <= 200.0, "{w} µs: {j}");
    assert!(
        w <= p99_us / 50.0,
        "{w} µs against a p99 of {p99_us} µs: {j}"
    );
    Some(w)
}

/// Against a saturated nginx, HTTP/2 with 10 connections × 100 streams and
/// HTTP/1.1 on the epoll engine with 200 connections both batch their wakes
/// within the bounds, and nginx logged every request latscope counted complete
/// and none beyond those it sent (the ones in flight at the end were sent, not
/// counted). The same nginx with 20 requests in flight never batches: at most
/// the rule's 1/50 of a response's latency passes between two responses only
/// when 50 or more are in flight.
#[test]
fn batched_wakes_on_a_saturated_nginx_lose_nothing() {
    let Some(n) = nginx("batched_wakes_on_a_saturated_nginx_lose_nothing") else {
        return;
    };
    let j = load(
        &n.h2,
        &["--http2", "-c", "10", "--streams", "100", "-d", "2s"],
    );
    assert!(window_us(&j).is_some(), "1,000 streams batch: {j}");
    logged_all(&n.dir, "h2.log", &j);

    let j = load(&n.h1, &["--engine", "epoll", "-c", "200", "-d", "2s"]);
    assert_eq!(j["engine"], "epoll", "{j}");
    assert!(window_us(&j).is_some(), "200 connections batch: {j}");
    logged_all(&n.dir, "h1.log", &j);

    let j = load(
        &n.h2,
        &["--http2", "-c", "2", "--streams", "10", "-d", "1s"],
    );
    assert!(j["requests"].as_u64().unwrap() > 100, "{j}");
    assert_eq!(window_us(&j), None, "20 in flight never batch: {j}");

    // The text report says when a run batched, and only then.
    for (conns, streams, batched) in [("10", "100", true), ("2", "10", false)] {
        let out = run_within(
            &[
                "load",
                &n.h2,
                "--http2",
                "-c",
                conns,
                "--streams",
                streams,
                "-d",
                "1s",
                "--threads",
                "1",
                "--no-save",
            ],
            Duration::from_secs(60),
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert_eq!(text.contains("Wakes batched, up to:"), batched, "{text}");
    }
}
