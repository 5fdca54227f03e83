//! The load engine's two I/O engines (`--engine epoll|io_uring`, issue 21) give the
//! same measurements: exact counts, the same error classes (reset, refused, garbage,
//! truncated, timeouts, 4xx/5xx), latencies around an injected delay, thresholds,
//! and `auto`'s choice recorded in the JSON. Each case runs on both engines against
//! the in-process lab or a hostile server on 127.0.0.1; no timed assertions beyond
//! lower bounds and wide tolerances around the injected delay.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use latscope::cli::LoadEngine;
use latscope::load::{self, LoadPlan, LoadResult};

use crate::util;
use crate::util_hostile::{Hostile, Reply};
use crate::util_lab::healthy;

/// Both engines, when io_uring works here (else only epoll, saying so).
fn engines() -> Vec<LoadEngine> {
    let probe = LoadPlan::closed("http://127.0.0.1:1/", 1, Duration::from_secs(1)).unwrap();
    let mut p = probe;
    p.engine = LoadEngine::IoUring;
    p.duration = None;
    p.count = Some(1);
    p.client.timeout = Duration::from_millis(200);
    match load::run(&p, &Arc::new(AtomicBool::new(false))) {
        Ok(_) => vec![LoadEngine::Epoll, LoadEngine::IoUring],
        Err(e) => {
            eprintln!("io_uring not available here ({e}): testing epoll only");
            vec![LoadEngine::Epoll]
        }
    }
}

fn name(e: LoadEngine) -> &'static str {
    match e {
        LoadEngine::IoUring => "io_uring",
        _ => "epoll",
    }
}

/// A count-mode plan (`-n n`, `-c c`, 2 threads) on `engine`, adjusted by `f`.
fn count(
    url: &str,
    engine: LoadEngine,
    c: u32,
    n: u64,
    f: impl FnOnce(&mut LoadPlan),
) -> LoadResult {
    let mut p = LoadPlan::closed(url, c, Duration::from_secs(30)).expect("plan");
    p.duration = None;
    p.count = Some(n);
    p.threads = 2.min(c as usize);
    p.client.timeout = Duration::from_secs(5);
    p.engine = engine;
    f(&mut p);
    let r = load::run(&p, &Arc::new(AtomicBool::new(false))).expect("the run works");
    assert_eq!(r.engine, name(engine));
    r
}

/// Count mode is exact on both engines, keep-alive (one connection per VU) and not
/// (one per request), and the server saw exactly what was recorded.
#[test]
fn count_mode_is_exact_on_both_engines() {
    let lab = healthy();
    for e in engines() {
        let before = lab.stats();
        let r = count(&lab.url("/bytes/1000"), e, 7, 1234, |_| {});
        assert_eq!((r.requests, r.ok, r.incomplete), (1234, 1234, 0), "{e:?}");
        assert_eq!(lab.stats().total - before.total, 1234, "{e:?}");
        assert_eq!(r.timeline.iter().map(|s| s.requests).sum::<u64>(), 1234);
        assert_eq!(r.connections_opened, 7, "{e:?}: keep-alive");
        assert_eq!(r.statuses.get(&200), Some(&1234), "{e:?}");
        assert!(r.bytes > 1234 * 1000, "{e:?}: {}", r.bytes);
        assert_eq!(r.endpoints[0].requests, 1234, "{e:?}");
        let r = count(&lab.url("/"), e, 2, 20, |p| p.keepalive = false);
        assert_eq!(
            (r.ok, r.connections_opened, r.connect.len()),
            (20, 20, 20),
            "{e:?}"
        );
        assert!(r.latency.min() >= r.connect.min(), "{e:?}");
    }
}

/// Each failure lands in the same kind on both engines: a reset, a refused port, a
/// 500 and a 404, a timeout, garbage instead of a response, a body cut short, and
/// a server that closes kept-alive connections (retried once, so no error).
#[test]
fn errors_are_classified_alike_on_both_engines() {
    let lab = healthy();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let refused = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let garbage = Hostile::start(|_| Reply::Bytes(b"garbage\r\n\r\n".to_vec()));
    let short = Hostile::start(|_| {
        Reply::Bytes(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort".to_vec())
    });
    // Answers one request per connection, then closes without saying so.
    let once = Hostile::start(|_| {
        Reply::Bytes(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec())
    });
    for e in engines() {
        let errs = |r: &LoadResult| r.errors.clone();
        let r = count(&lab.url("/reset"), e, 2, 6, |_| {});
        assert_eq!(r.errors.get("reset"), Some(&6), "{e:?} {:?}", errs(&r));
        let r = count(&refused, e, 2, 4, |_| {});
        assert_eq!(
            (r.errors.get("connect"), r.ok),
            (Some(&4), 0),
            "{e:?} {:?}",
            errs(&r)
        );
        let r = count(&lab.url("/status/500"), e, 2, 6, |_| {});
        assert_eq!(r.errors.get("http_5xx"), Some(&6), "{e:?} {:?}", errs(&r));
        assert_eq!(r.statuses.get(&500), Some(&6), "{e:?}");
        let r = count(&lab.url("/status/404"), e, 2, 4, |_| {});
        assert_eq!(r.errors.get("http_4xx"), Some(&4), "{e:?} {:?}", errs(&r));
        let r = count(&lab.url("/delay/5s"), e, 2, 2, |p| {
            p.client.timeout = Duration::from_millis(300)
        });
        assert_eq!(r.errors.get("timeout"), Some(&2), "{e:?} {:?}", errs(&r));
        assert!(r.latency.min() >= 300_000_000, "{e:?}: {}", r.latency.min());
        let r = count(&garbage.url("/"), e, 1, 3, |_| {});
        assert_eq!(r.errors.get("protocol"), Some(&3), "{e:?} {:?}", errs(&r));
        let r = count(&short.url("/"), e, 1, 3, |_| {});
        assert_eq!(r.errors.get("reset"), Some(&3), "{e:?} {:?}", errs(&r));
        let before = once.accepted.load(Ordering::SeqCst);
        let r = count(&once.url("/"), e, 1, 10, |_| {});
        assert_eq!((r.ok, r.requests), (10, 10), "{e:?} {:?}", errs(&r));
        assert_eq!(once.accepted.load(Ordering::SeqCst) - before, 10, "{e:?}");
    }
}

/// Latencies agree around an injected 20 ms delay: every request takes at least the
/// delay on both engines, and the medians are within a few ms of each other (wide
/// bounds: other builds share the machine).
#[test]
fn latencies_agree_around_a_delay() {
    at_the_delay(20, 4, 100, |_| {});
}

/// `n` requests of `/delay/<ms>ms` over `c` connections on each engine: all ok, none
/// below the delay, the median within [delay, 3 × delay), and the engines' medians
/// within one delay of each other.
fn at_the_delay(ms: u64, c: u32, n: u64, f: impl Fn(&mut LoadPlan)) {
    let lab = healthy();
    let delay = ms as f64;
    let mut p50s = Vec::new();
    for e in engines() {
        let r = count(&lab.url(&format!("/delay/{ms}ms")), e, c, n, &f);
        assert_eq!(r.ok, n, "{e:?}");
        assert!(
            r.latency.min() >= ms * 1_000_000,
            "{e:?}: min {}",
            r.latency.min()
        );
        let p50 = r.latency_quantile_ms(0.5);
        assert!((delay..3.0 * delay).contains(&p50), "{e:?}: p50 {p50}");
        p50s.push(p50);
    }
    if let [a, b] = p50s[..] {
        assert!((a - b).abs() < delay, "p50 epoll {a} vs io_uring {b}");
    }
}

/// The binary: `--engine` is recorded in the JSON, `auto` takes io_uring for plain
/// HTTP/1.1 (closed and open model) and epoll for what io_uring does not run yet
/// (`--think-time`), an explicit `--engine io_uring` there is refused saying why, and
/// thresholds judge the same way on both engines.
#[test]
fn engine_flag_choice_and_thresholds() {
    let lab = healthy();
    let url = lab.url("/delay/30ms");
    let uring = engines().len() == 2;
    for e in ["epoll", "io_uring"] {
        if e == "io_uring" && !uring {
            continue;
        }
        let j = util::run_json(&[
            "load",
            &url,
            "-n",
            "20",
            "-c",
            "4",
            "--engine",
            e,
            "--json",
            "--no-save",
        ]);
        assert_eq!(
            (j["engine"].as_str(), j["ok"].as_u64()),
            (Some(e), Some(20))
        );
        let run = |t: &str| {
            util::run(&[
                "load",
                &url,
                "-n",
                "20",
                "-c",
                "4",
                "--engine",
                e,
                "--no-save",
                "--threshold",
                t,
            ])
        };
        assert_eq!(run("p99<5s").status.code(), Some(0), "{e}");
        assert_eq!(run("p50<10ms").status.code(), Some(99), "{e}");
    }
    let j = util::run_json(&["load", &url, "-n", "5", "-c", "2", "--json", "--no-save"]);
    let auto = if uring { "io_uring" } else { "epoll" };
    assert_eq!(j["engine"].as_str(), Some(auto));
    let j = util::run_json(&[
        "load",
        &url,
        "--rate",
        "20",
        "-d",
        "1s",
        "--json",
        "--no-save",
    ]);
    assert_eq!(j["engine"].as_str(), Some(auto));
    let j = util::run_json(&[
        "load",
        &url,
        "-n",
        "4",
        "-c",
        "2",
        "--think-time",
        "1ms",
        "--json",
        "--no-save",
    ]);
    assert_eq!(j["engine"].as_str(), Some("epoll"));
    let out = util::run(&[
        "load",
        &url,
        "-n",
        "4",
        "--think-time",
        "1ms",
        "--engine",
        "io_uring",
        "--no-save",
    ]);
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--engine io_uring") && err.contains("--think-time"),
        "{err}"
    );
}

/// The open model on both engines, above what the server sustains (one worker, 50 ms
/// per request: 20/s) at 200/s: every arrival is one of completed, dropped (past the
/// backlog, also in the timeline) or incomplete, and latency counts from the intended
/// time (the queue's wait is in it). In count mode (`-n` with `--rate`) exactly n
/// arrive.
#[test]
fn open_model_accounts_every_arrival_on_both_engines() {
    let lab = latscope::lab::spawn(latscope::lab::LabOptions {
        workers: Some(1),
        ..Default::default()
    })
    .unwrap();
    let healthy = healthy();
    for e in engines() {
        let mut p =
            LoadPlan::closed(&lab.url("/delay/50ms"), 4, Duration::from_millis(1500)).unwrap();
        p.model = load::Model::Open { rate: 200.0 };
        p.backlog = Some(20);
        p.threads = 2;
        p.client.timeout = Duration::from_secs(5);
        p.engine = e;
        let r = load::run(&p, &Arc::new(AtomicBool::new(false))).unwrap();
        assert_eq!(r.engine, name(e));
        let arrivals = r.requests + r.dropped + r.incomplete;
        // 300 due; a scheduler running late on a busy machine may not have emitted
        // the last few before the end.
        assert!(
            (280..=302).contains(&arrivals),
            "{e:?}: {} + {} + {}",
            r.requests,
            r.dropped,
            r.incomplete
        );
        assert!(r.dropped > 150, "{e:?}: dropped {}", r.dropped);
        assert!(r.requests < 60, "{e:?}: completed {}", r.requests);
        assert!(r.latency_quantile_ms(0.99) > 300.0, "{e:?}");
        assert_eq!(r.timeline.iter().map(|s| s.dropped).sum::<u64>(), r.dropped);
        let r = count(&healthy.url("/"), e, 8, 300, |p| {
            p.model = load::Model::Open { rate: 1000.0 };
        });
        assert_eq!(
            (r.requests, r.ok, r.dropped, r.incomplete),
            (300, 300, 0, 0),
            "{e:?}"
        );
        assert!(r.service.is_some(), "{e:?}");
    }
}

/// A worker thread whose io_uring set-up fails after the probe passed (forced by the
/// test hook `LATSCOPE_TEST_URING_REFUSE`, as a kernel out of memory or descriptors
/// would): under `auto` it runs on epoll and the JSON says so (`engine` "mixed",
/// `engine_workers` per thread, `engine_fallback` why), with every request counted;
/// an explicit `--engine io_uring` fails the run naming the thread, never falling
/// back silently.
#[test]
fn a_worker_whose_ring_fails_is_reported_or_fails_the_run() {
    if engines().len() < 2 {
        return;
    }
    let lab = healthy();
    let url = lab.url("/bytes/100");
    let args = |engine: &str| -> Vec<String> {
        [
            "load",
            &url,
            "-n",
            "200",
            "-c",
            "4",
            "--threads",
            "2",
            "--engine",
            engine,
            "--json",
            "--no-save",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let run = |refuse: &str, engine: &str| {
        let mut cmd = util::latscope();
        cmd.args(args(engine))
            .env("LATSCOPE_TEST_URING_REFUSE", refuse);
        util::output_within(cmd, util::LIMIT).0
    };
    let out = run("1", "auto");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j = util::json_of(&out);
    assert_eq!(j["engine"], "mixed", "{j}");
    assert_eq!(
        j["engine_workers"],
        serde_json::json!(["io_uring", "epoll"])
    );
    let why = j["engine_fallback"][0].as_str().unwrap_or_default();
    assert!(why.contains("worker thread 1"), "{why}");
    assert_eq!(
        (j["ok"].as_u64(), j["requests"].as_u64()),
        (Some(200), Some(200))
    );

    let j = util::json_of(&run("all", "auto"));
    assert_eq!(j["engine"], "epoll", "{j}");
    assert_eq!(j["engine_fallback"].as_array().map(Vec::len), Some(2));
    assert_eq!(j["ok"].as_u64(), Some(200));

    let out = run("1", "io_uring");
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--engine io_uring") && err.contains("worker thread 1"),
        "{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "no result of an engine that did not run"
    );

    // Nothing refused: one engine, no fallback.
    let j = util::json_of(&run("", "io_uring"));
    assert_eq!(j["engine"], "io_uring");
    assert!(j.get("engine_fallback").is_none(), "{j}");
}

/// Recorded latency does not grow when the io_uring worker waits for several
/// completions per wake: each response ends when the kernel received its last bytes
/// (SO_TIMESTAMPNS through multishot recvmsg), not when the thread woke to read it.
/// The test hook `LATSCOPE_TEST_URING_BATCH=all` forces the worst batching (wait for
/// every response in flight, up to the 10 ms tick) with a fast (2 ms) and a slow
/// (40 ms) endpoint sharing the connections: the fast one's p50 stays near its
/// delay, as on epoll, instead of near the slow one's or the tick.
#[test]
fn latency_does_not_grow_with_batched_wakes() {
    if engines().len() < 2 {
        return;
    }
    let lab = healthy();
    let dir = util::scratch();
    let scenario = dir.join("batched.toml");
    std::fs::write(
        &scenario,
        format!(
            "base_url = \"{}\"\n[[request]]\nname = \"fast\"\npath = \"/delay/2ms\"\n\
             [[request]]\nname = \"slow\"\npath = \"/delay/40ms\"\n",
            lab.url("").trim_end_matches('/')
        ),
    )
    .unwrap();
    let scenario = scenario.to_string_lossy().into_owned();
    let run = |engine: &str| {
        let mut cmd = util::latscope();
        cmd.args([
            "load",
            "-f",
            &scenario,
            "-n",
            "400",
            "-c",
            "16",
            "--threads",
            "1",
            "--engine",
            engine,
            "--json",
            "--no-save",
        ])
        .env("LATSCOPE_TEST_URING_BATCH", "all");
        let j = util::json_of(&util::output_within(cmd, util::LIMIT).0);
        assert_eq!(
            (j["engine"].as_str(), j["ok"].as_u64()),
            (Some(engine), Some(400)),
            "{j}"
        );
        let p50 = |name: &str| {
            j["endpoints"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == name)
                .and_then(|e| e["latency_ms"]["p50"].as_f64())
                .unwrap()
        };
        (p50("fast"), p50("slow"))
    };
    let (fast_e, slow_e) = run("epoll");
    let (fast_u, slow_u) = run("io_uring");
    for (engine, fast, slow) in [("epoll", fast_e, slow_e), ("io_uring", fast_u, slow_u)] {
        assert!((2.0..7.0).contains(&fast), "{engine}: fast p50 {fast} ms");
        assert!((40.0..60.0).contains(&slow), "{engine}: slow p50 {slow} ms");
    }
    assert!(
        (fast_u - fast_e).abs() < 3.0,
        "fast p50: epoll {fast_e} vs io_uring {fast_u}"
    );
}

/// Many connections to a short delay (no test hook: the engine's own batching, which
/// at this pace waits for a few responses per wake): the median stays near the
/// injected delay on both engines, and the engines agree.
#[test]
fn latency_stays_at_the_delay_with_many_connections() {
    at_the_delay(2, 48, 4800, |p| p.threads = 1);
}
