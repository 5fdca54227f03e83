//! `latscope load` against the in-process lab (and the binary for exit codes): exact
//! counts, closed-model pacing, error classification, the open model's coordinated
//! omission correction, scenarios, thresholds, stages, protocols. Every run is short
//! and bounded by its duration or count plus a small request timeout.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use latscope::lab::{self, LabOptions};
use latscope::load::{self, LoadPlan, LoadResult, Model};

use crate::util;
use crate::util_lab::healthy;

fn no_stop() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}

/// A closed plan for `url` with a short timeout, adjusted by `f`.
fn plan(url: &str, c: u32, d: Duration, f: impl FnOnce(&mut LoadPlan)) -> LoadPlan {
    let mut p = LoadPlan::closed(url, c, d).expect("plan");
    p.client.timeout = Duration::from_secs(5);
    p.threads = 2.min(c as usize);
    f(&mut p);
    p
}

fn run(p: &LoadPlan) -> LoadResult {
    load::run(p, &no_stop()).expect("the run works")
}

fn json_of(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Count mode (ab's -n) sends exactly N requests: the lab saw N, all ok, and the
/// timeline adds up to N.
#[test]
fn count_mode_sends_exactly_n() {
    let lab = healthy();
    let p = plan(&lab.url("/"), 7, Duration::from_secs(30), |p| {
        p.duration = None;
        p.count = Some(1234);
    });
    let r = run(&p);
    assert_eq!((r.requests, r.ok, r.incomplete), (1234, 1234, 0));
    assert_eq!(lab.stats().total, 1234);
    assert_eq!(r.timeline.iter().map(|s| s.requests).sum::<u64>(), 1234);
    assert_eq!(r.connections_opened, 7, "keep-alive: one connection per VU");
    assert_eq!(r.statuses.get(&200), Some(&1234));
    assert!(r.bytes > 1234 * 20);
}

/// The closed model keeps -c requests in flight for -d: against a 20 ms route, 4 VUs
/// for 1 s complete about 200 requests, each about 20 ms; what the lab counted is
/// what was recorded (in-flight requests finish at the end).
#[test]
fn closed_model_paces_by_the_response() {
    let lab = healthy();
    let p = plan(&lab.url("/delay/20ms"), 4, Duration::from_secs(1), |_| {});
    let t0 = Instant::now();
    let r = run(&p);
    assert!(t0.elapsed() < Duration::from_secs(4));
    assert!((80..=210).contains(&r.requests), "{}", r.requests);
    assert_eq!(lab.stats().total, r.requests + r.incomplete);
    let p50 = r.latency_quantile_ms(0.5);
    assert!((19.0..80.0).contains(&p50), "p50 {p50}");
    let j = latscope::schema::to_value(&latscope::schema::LoadDoc::from(&r));
    for k in [
        "kind",
        "target",
        "model",
        "requests",
        "ok",
        "dropped",
        "errors",
        "duration_s",
        "rps",
        "bytes",
        "latency_ms",
        "connect_ms",
        "incomplete",
        "client_cpu_pct",
        "endpoints",
        "timeline",
        "thresholds",
    ] {
        assert!(j.get(k).is_some(), "missing {k}");
    }
    let t = &j["timeline"][0];
    for k in [
        "t",
        "requests",
        "ok",
        "errors",
        "bytes",
        "p50_ms",
        "p90_ms",
        "p99_ms",
        "max_ms",
        "active",
        "cache_hits",
        "retrans",
    ] {
        assert!(t.get(k).is_some(), "timeline missing {k}");
    }
    assert_eq!(t["active"], 4);
    assert_eq!(j["model"], "closed");
    assert!(j["latency_ms"]["p50"].as_f64().unwrap() >= 19.0);
    assert!(r
        .histograms()
        .iter()
        .any(|h| h.name == "latency" && h.second == Some(0)));
}

/// `-d` is a hard limit in the closed model (and with stages): requests still in
/// flight at the end get a short grace (min(timeout, 2 s)), then count as
/// incomplete, not as errors — a 20 s route with a 60 s timeout ends in seconds.
#[test]
fn duration_is_a_hard_limit_in_flight_is_incomplete() {
    let lab = healthy();
    for stages in [false, true] {
        let p = plan(&lab.url("/delay/20s"), 2, Duration::from_secs(1), |p| {
            p.client.timeout = Duration::from_secs(60);
            if stages {
                p.duration = None;
                p.stages = load::stages::parse("100ms:2,900ms:2").unwrap();
            }
        });
        let t0 = Instant::now();
        let r = run(&p);
        let took = t0.elapsed();
        assert!(took < Duration::from_secs(6), "stages {stages}: {took:?}");
        assert_eq!(
            (r.requests, r.incomplete),
            (0, 2),
            "stages {stages}: {:?}",
            r.errors
        );
    }
}

/// The binary: `-n` with `--json` prints the load JSON and exits 0.
#[test]
fn cli_count_json() {
    let lab = healthy();
    let j = util::run_json(&[
        "load",
        &lab.url("/bytes/100"),
        "-n",
        "50",
        "-c",
        "5",
        "--json",
        "--no-save",
    ]);
    assert_eq!(
        (j["requests"].as_u64(), j["ok"].as_u64()),
        (Some(50), Some(50))
    );
    assert_eq!(lab.stats().route("bytes"), 50);
    assert!(j["findings"].is_array());
    // Every field of the document is named in docs/json.md, which the help of --json
    // points to (DESIGN.md is not in the repository).
    let section = include_str!("../docs/json.md");
    for k in j.as_object().unwrap().keys() {
        assert!(section.contains(k.as_str()), "docs/json.md lacks {k}");
    }
    let help = util::run(&["load", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        !help.contains("DESIGN.md") && help.contains("docs/json.md"),
        "{help}"
    );
    assert!(
        help.contains("hard limit") && help.contains("incomplete"),
        "{help}"
    );
}

/// Each failure lands in its kind: a reset connection, a 500, a 404, a closed port
/// and a timeout.
#[test]
fn errors_are_classified() {
    let lab = healthy();
    let count = |path: &str, n: u64, f: &dyn Fn(&mut LoadPlan)| {
        let p = plan(&lab.url(path), 2, Duration::from_secs(30), |p| {
            p.duration = None;
            p.count = Some(n);
            f(p);
        });
        run(&p)
    };
    let r = count("/reset", 6, &|_| {});
    assert_eq!(
        (r.requests, r.errors.get("reset").copied()),
        (6, Some(6)),
        "{:?}",
        r.errors
    );
    let r = count("/status/500", 6, &|_| {});
    assert_eq!(r.errors.get("http_5xx"), Some(&6), "{:?}", r.errors);
    assert_eq!(r.statuses.get(&500), Some(&6));
    let r = count("/status/404", 4, &|_| {});
    assert_eq!(r.errors.get("http_4xx"), Some(&4), "{:?}", r.errors);
    let r = count("/delay/5s", 2, &|p| {
        p.client.timeout = Duration::from_millis(500)
    });
    assert_eq!(r.errors.get("timeout"), Some(&2), "{:?}", r.errors);
    assert!(r.elapsed < Duration::from_secs(3), "{:?}", r.elapsed);

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let p = plan(&url, 2, Duration::from_secs(30), |p| {
        p.duration = None;
        p.count = Some(4);
    });
    let r = run(&p);
    assert_eq!(r.errors.get("connect"), Some(&4), "{:?}", r.errors);
    assert_eq!(r.ok, 0);

    // Every request failed: the binary says so and exits 1.
    let out = util::run(&["load", &url, "-n", "3", "-c", "1", "--no-save"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("every request failed"));
}

/// Ctrl-C (SIGINT) ends a long run at once; what was measured is printed.
#[test]
fn sigint_stops_cleanly() {
    let lab = healthy();
    for (signal, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let before = lab.stats().total;
        let mut child = util::latscope()
            .args([
                "load",
                &lab.url("/delay/5ms"),
                "-d",
                "60s",
                "-c",
                "2",
                "--json",
                "--no-save",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while lab.stats().total < before + 20 && t0.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: plain kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if child.try_wait().unwrap().is_none() {
            let _ = child.kill();
            panic!("latscope load did not stop on {name}");
        }
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let j = json_of(&out);
        assert_eq!(j["aborted"], true, "{name}");
        assert!(j["requests"].as_u64().unwrap() >= 20, "{name}");
        assert!(j["duration_s"].as_f64().unwrap() < 30.0, "{name}");
    }
}

/// The stop flag also works through the library API.
#[test]
fn stop_flag_ends_a_library_run() {
    let lab = healthy();
    let p = plan(&lab.url("/delay/10ms"), 2, Duration::from_secs(60), |_| {});
    let stop = no_stop();
    let s2 = stop.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        s2.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let r = load::run(&p, &stop).unwrap();
    t.join().unwrap();
    assert!(r.aborted && r.elapsed < Duration::from_secs(5));
    assert!(r.requests > 5);
    let _ = Model::Closed;
    let _ = lab::spawn(LabOptions::default()).map(|l| l.shutdown());
}

/// Coordinated omission: the lab stalls every response for 1 s every 5 s; an open
/// model at 200/s with 64 connections for 10 s must show what users waited — the run
/// spans two stalls, so a fifth of the requests wait 0..1 s: p90 near 0.5 s, p99
/// above 0.8 s — while service time (from the actual send) stays low at p90: only
/// the 64 requests caught in flight saw the stall from the inside. A closed-loop tool
/// would report roughly the service time. On both engines (`auto` is io_uring where
/// the kernel allows it), at once, each against a lab of its own.
#[test]
fn open_model_corrects_coordinated_omission() {
    let runs = [
        latscope::cli::LoadEngine::Epoll,
        latscope::cli::LoadEngine::Auto,
    ]
    .map(|engine| std::thread::spawn(move || open_model_corrects_coordinated_omission_on(engine)));
    for run in runs {
        if let Err(panic) = run.join() {
            std::panic::resume_unwind(panic);
        }
    }
}

fn open_model_corrects_coordinated_omission_on(engine: latscope::cli::LoadEngine) {
    let lab_start = std::time::Instant::now();
    let lab = lab::spawn(LabOptions {
        stall: Some(lab::StallOptions {
            every: Duration::from_secs(5),
            length: Duration::from_secs(1),
        }),
        ..Default::default()
    })
    .unwrap();
    let p = plan(&lab.url("/"), 64, Duration::from_secs(10), |p| {
        p.model = Model::Open { rate: 200.0 };
        p.engine = engine;
    });
    // The stalls run on the lab's clock, at 5–6 s and 10–11 s: starting at 4 s puts
    // both inside the 10 s run.
    while lab_start.elapsed() < Duration::from_secs(4) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let r = run(&p);
    let (p90, p95, p99) = (
        r.latency_quantile_ms(0.90),
        r.latency_quantile_ms(0.95),
        r.latency_quantile_ms(0.99),
    );
    let s90 = r.service_quantile_ms(0.90).unwrap();
    eprintln!(
        "{engine} engine: requests {} dropped {} incomplete {} p90 {p90} p95 {p95} p99 {p99} service p90 {s90} p99 {:?}",
        r.requests,
        r.dropped,
        r.incomplete,
        r.service_quantile_ms(0.99),
        engine = r.engine,
    );
    assert!(
        (1900..=2010).contains(&(r.requests + r.incomplete)),
        "{}",
        r.requests
    );
    assert_eq!(r.dropped, 0);
    assert!(p99 > 800.0, "latency p99 {p99} ms");
    assert!((250.0..800.0).contains(&p90), "latency p90 {p90} ms");
    assert!(p95 > p90, "latency p95 {p95} ms");
    assert!(s90 < 50.0, "service time p90 {s90} ms");
    assert!(r.latency.len() == r.service.as_ref().unwrap().len());
    let doc = latscope::schema::LoadDoc::from(&r);
    assert_eq!(doc.model, "open");
    assert!(doc.service_time_ms.unwrap().p90 < 50.0);
}

/// Above what the server sustains (one worker, 50 ms per request: 20/s), an open
/// model at 200/s says so: requests beyond the backlog are counted as dropped, the
/// queued ones still waiting at the end as incomplete, and every arrival is one of
/// completed, dropped or incomplete.
#[test]
fn open_model_over_capacity_drops_and_says_so() {
    let lab = lab::spawn(LabOptions {
        workers: Some(1),
        ..Default::default()
    })
    .unwrap();
    let p = plan(
        &lab.url("/delay/50ms"),
        4,
        Duration::from_millis(1500),
        |p| {
            p.model = Model::Open { rate: 200.0 };
            p.backlog = Some(20);
        },
    );
    let r = run(&p);
    let arrivals = r.requests + r.dropped + r.incomplete;
    assert!(
        (295..=302).contains(&arrivals),
        "{} + {} + {}",
        r.requests,
        r.dropped,
        r.incomplete
    );
    assert!(r.dropped > 150, "dropped {}", r.dropped);
    assert!(r.requests < 60, "completed {}", r.requests);
    assert!(r.latency_quantile_ms(0.99) > 300.0);
    assert!(r.timeline.iter().map(|s| s.dropped).sum::<u64>() == r.dropped);
}

fn write_scenario(text: &str) -> (tempdir::Dir, String) {
    let dir = tempdir::Dir::new();
    let path = dir.path().join("s.toml");
    std::fs::write(&path, text).unwrap();
    let p = path.display().to_string();
    (dir, p)
}

/// A tiny self-removing temporary directory (no extra crate).
mod tempdir {
    pub struct Dir(std::path::PathBuf);
    impl Dir {
        pub fn new() -> Dir {
            static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let p = crate::util::scratch().join(format!(
                "latscope-load-test-{}-{}",
                std::process::id(),
                N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
        pub fn path(&self) -> &std::path::Path {
            &self.0
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A scenario in sequence (story 5): every VU walks every endpoint; the per-endpoint
/// counts are what the lab counted per route, and the JSON lists each endpoint.
#[test]
fn scenario_sequence_counts_per_endpoint() {
    let lab = healthy();
    let (_d, file) = write_scenario(&format!(
        r#"
base_url = "{}"
order = "sequence"

[load]
connections = 3
requests = 31

[[request]]
name = "slow"
path = "/delay/2ms"

[[request]]
name = "data"
path = "/bytes/64"
headers = {{ Accept = "application/octet-stream" }}

[[request]]
name = "made"
method = "POST"
path = "/status/201"
body = "x=1"
"#,
        lab.base_url()
    ));
    let j = util::run_json(&["load", "-f", &file, "--json", "--no-save"]);
    assert_eq!(j["requests"], 31);
    let eps = j["endpoints"].as_array().unwrap();
    let count = |name: &str| {
        eps.iter()
            .find(|e| e["name"] == name)
            .and_then(|e| e["requests"].as_u64())
            .unwrap()
    };
    let stats = lab.stats();
    assert_eq!(count("slow"), stats.route("delay"));
    assert_eq!(count("data"), stats.route("bytes"));
    assert_eq!(count("made"), stats.route("status"));
    // Sequence: each VU walks slow, data, made, …, so the counts differ by at most 3.
    let counts = [count("slow"), count("data"), count("made")];
    assert!(
        counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 3,
        "{counts:?}"
    );
    assert!(eps
        .iter()
        .all(|e| e["latency_ms"]["p50"].as_f64().is_some()));
}

/// Weighted order picks requests in proportion to their weight.
#[test]
fn scenario_weighted_order() {
    let lab = healthy();
    let (_d, file) = write_scenario(&format!(
        "base_url = \"{}\"\norder = \"weighted\"\n[[request]]\nname = \"a\"\npath = \"/bytes/1\"\nweight = 3\n[[request]]\nname = \"b\"\npath = \"/text/1\"\n",
        lab.base_url()
    ));
    let out = util::run(&[
        "load",
        "-f",
        &file,
        "-n",
        "800",
        "-c",
        "4",
        "--json",
        "--no-save",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (a, b) = (lab.stats().route("bytes"), lab.stats().route("text"));
    assert_eq!(a + b, 800);
    assert!((520..=680).contains(&a), "a {a} b {b}");
}

/// A bad scenario file is a usage error (exit 2) naming the line and the field.
#[test]
fn bad_scenario_names_line_and_field() {
    let (_d, file) = write_scenario(
        "base_url = \"http://127.0.0.1:9\"\n\n[[request]]\nname = \"x\"\npath = \"/\"\nweight = -2\n",
    );
    let out = util::run(&["load", "-f", &file, "--no-save"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 6") && err.contains("request[1].weight"),
        "{err}"
    );
    let out = util::run(&["load", "-f", "/nonexistent/s.toml", "--no-save"]);
    assert_eq!(out.status.code(), Some(2));
}

/// A threshold on an endpoint the scenario does not have is a usage error (exit 2)
/// naming it and the known ones; docs/load.md's scenario example plans as written.
#[test]
fn threshold_on_unknown_endpoint_is_a_usage_error() {
    let (_d, file) = write_scenario(
        "base_url = \"http://127.0.0.1:9\"\nthresholds = [\"place:p99<300ms\"]\n\n[[request]]\nname = \"places\"\npath = \"/places\"\n",
    );
    let out = util::run(&["load", "-f", &file, "-n", "1", "--no-save"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("'place'") && err.contains("'places'"), "{err}");

    let readme = include_str!("../docs/load.md");
    let start = readme
        .find("```toml\nbase_url")
        .expect("docs/load.md has a scenario")
        + 8;
    let toml = &readme[start..start + readme[start..].find("```").unwrap()];
    let (_d2, file) = write_scenario(toml);
    let cli =
        <latscope::cli::Cli as clap::Parser>::try_parse_from(["latscope", "load", "-f", &file])
            .expect("parses");
    let latscope::cli::Command::Load(args) = cli.command else {
        panic!("not a load command")
    };
    let p = latscope::config::load::plan(&args)
        .unwrap_or_else(|e| panic!("docs/load.md scenario: {e}"));
    assert_eq!(p.thresholds.len(), 3);
}

/// Thresholds: passing ones exit 0, a failing one exits 99 and names itself, per
/// endpoint and for every endpoint.
#[test]
fn thresholds_exit_codes() {
    let lab = healthy();
    let url = lab.url("/delay/30ms");
    let run = |extra: &[&str]| {
        let mut args = vec!["load", url.as_str(), "-n", "20", "-c", "4", "--no-save"];
        args.extend_from_slice(extra);
        util::run(&args)
    };
    let out = run(&[
        "--threshold",
        "p99<5s",
        "--threshold",
        "error_rate<1%",
        "--threshold",
        "rps>1",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("pass p99<5s"));
    let out = run(&["--threshold", "p99<5s", "--threshold", "p50<10ms"]);
    assert_eq!(out.status.code(), Some(99));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("p50<10ms") && !err.contains("p99<5s"), "{err}");
    let out = run(&["--threshold", "*:p99<10ms"]);
    assert_eq!(out.status.code(), Some(99));
    let out = run(&["--threshold", "/delay/30ms:p50>20ms"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&["--threshold", "p99<<1s"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Closed-model stages ramp VUs linearly: 0 → 4 over 1 s, then 4 for 1 s; the
/// timeline's active connections reach 4 and the plateau does more than the ramp.
#[test]
fn stages_ramp_vus() {
    let lab = healthy();
    let p = plan(&lab.url("/delay/10ms"), 4, Duration::from_secs(30), |p| {
        p.duration = None;
        p.stages = load::stages::parse("1s:4,1s:4").unwrap();
    });
    let r = run(&p);
    assert!(r.elapsed < Duration::from_secs(4), "{:?}", r.elapsed);
    let t = &r.timeline;
    assert!(t.len() >= 2, "{t:?}");
    assert_eq!(
        t[1].active,
        4,
        "{:?}",
        t.iter().map(|s| s.active).collect::<Vec<_>>()
    );
    assert!(
        t[0].requests < t[1].requests,
        "{} vs {}",
        t[0].requests,
        t[1].requests
    );
    assert!(
        t[0].requests > 20,
        "the ramp sends something: {}",
        t[0].requests
    );
}

/// Open-model stages ramp the rate: 0 → 200/s over 1 s (100 arrivals), then 200/s
/// for 1 s (200 more).
#[test]
fn stages_ramp_rate() {
    let lab = healthy();
    let p = plan(&lab.url("/"), 50, Duration::from_secs(30), |p| {
        p.duration = None;
        p.model = Model::Open { rate: 1.0 };
        p.stages = load::stages::parse("1s:200,1s:200").unwrap();
    });
    let r = run(&p);
    let arrivals = r.requests + r.dropped + r.incomplete;
    assert!((296..=302).contains(&arrivals), "{arrivals}");
    assert!(
        (85..=115).contains(&r.timeline[0].requests),
        "{}",
        r.timeline[0].requests
    );
    assert!(
        (185..=215).contains(&r.timeline[1].requests),
        "{}",
        r.timeline[1].requests
    );
}

/// --no-keepalive opens a new connection per request, and each request's latency
/// includes the connect it paid; connect time is recorded on its own.
#[test]
fn no_keepalive_connects_every_time() {
    let lab = healthy();
    let p = plan(&lab.url("/"), 2, Duration::from_secs(30), |p| {
        p.duration = None;
        p.count = Some(20);
        p.keepalive = false;
    });
    let r = run(&p);
    assert_eq!((r.ok, r.connections_opened, r.connect.len()), (20, 20, 20));
    assert_eq!(lab.stats().connections, 20);
    assert!(r.latency.min() >= r.connect.min());
}

fn tls_lab(http2: bool) -> (lab::RunningLab, tempdir::Dir, String) {
    let lab = lab::spawn(LabOptions {
        tls: Some(lab::LabTls::self_signed(&[]).unwrap()),
        http2,
        ..Default::default()
    })
    .unwrap();
    let dir = tempdir::Dir::new();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, lab.cert_pem().unwrap()).unwrap();
    let ca = ca.display().to_string();
    (lab, dir, ca)
}

/// https over HTTP/1.1 (the lab offers only http/1.1 without --http2): the lab's
/// certificate is trusted through --cacert, the TLS handshake is timed per
/// connection, and an untrusted certificate is a `tls` error.
#[test]
fn https_http1() {
    let (lab, _dir, ca) = tls_lab(false);
    let p = plan(&lab.url("/bytes/1k"), 2, Duration::from_secs(30), |p| {
        p.duration = None;
        p.count = Some(30);
        p.client.cacert = Some(ca.clone().into());
    });
    let r = run(&p);
    assert_eq!(r.ok, 30, "{:?}", r.errors);
    // One handshake per connection: two VUs open two, unless one thread sent all
    // 30 before the other started (a busy machine).
    assert_eq!(r.tls.len(), r.connections_opened);
    assert!(
        (1..=2).contains(&r.connections_opened),
        "{}",
        r.connections_opened
    );
    assert!(r.bytes >= 30 * 1024);
    let p = plan(&lab.url("/"), 1, Duration::from_secs(30), |p| {
        p.duration = None;
        p.count = Some(2);
    });
    let r = run(&p);
    assert_eq!(r.errors.get("tls"), Some(&2), "{:?}", r.errors);
}

/// h2 via ALPN with --streams: 2 connections carry 4 streams each.
#[test]
fn https_h2_streams() {
    let (lab, _dir, ca) = tls_lab(true);
    let p = plan(&lab.url("/delay/5ms"), 2, Duration::from_secs(30), |p| {
        p.duration = None;
        p.count = Some(80);
        p.streams = 4;
        p.client.cacert = Some(ca.clone().into());
    });
    let r = run(&p);
    assert_eq!(r.ok, 80, "{:?}", r.errors);
    assert_eq!(r.connections_opened, 2);
    // One more connection: the ALPN check before the run.
    assert_eq!(lab.stats().connections, 3);
    assert_eq!(lab.stats().total, 80);
}

/// h2c with prior knowledge (--http2 on http): 8 streams on one connection run at
/// once, so 16 requests of 50 ms take about two rounds, not sixteen.
#[test]
fn h2c_streams_run_concurrently() {
    let lab = lab::spawn(LabOptions {
        http2: true,
        ..Default::default()
    })
    .unwrap();
    let j = util::run_json(&[
        "load",
        &lab.url("/delay/50ms"),
        "--http2",
        "-n",
        "16",
        "-c",
        "1",
        "--streams",
        "8",
        "--json",
        "--no-save",
    ]);
    assert_eq!(
        (j["ok"].as_u64(), j["connections_opened"].as_u64()),
        (Some(16), Some(1))
    );
    let secs = j["duration_s"].as_f64().unwrap();
    assert!(secs < 0.5, "16 × 50 ms over 8 streams took {secs} s");
    assert_eq!(lab.stats().connections, 1);
}

/// `--raw FILE` writes a header and one CSV row per request, from every thread.
#[test]
fn raw_csv_has_a_row_per_request() {
    let lab = healthy();
    let dir = tempdir::Dir::new();
    let path = dir.path().join("raw.csv");
    let p = plan(&lab.url("/bytes/10"), 4, Duration::from_secs(30), |p| {
        p.duration = None;
        p.count = Some(300);
        p.raw = Some(path.clone());
    });
    let r = run(&p);
    assert_eq!(r.ok, 300);
    assert!(r.raw_error.is_none());
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], load::raw::HEADER.trim_end());
    assert_eq!(lines.len(), 301);
    for l in &lines[1..] {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f.len(), 10, "{l}");
        assert_eq!((f[1], f[2], f[3]), ("/bytes/10", "200", ""), "{l}");
        assert!(
            f[7].parse::<u64>().unwrap() >= f[6].parse::<u64>().unwrap(),
            "{l}"
        );
    }
}

/// The live feed (what the live view and remote-write read while a run goes) hands
/// out every second once, in order, merged exactly as the stored timeline: same
/// request counts and percentiles per second, the last partial second in the final
/// call, the open model's service time, and status totals that add up to the run.
#[test]
fn live_feed_matches_the_stored_timeline() {
    let lab = healthy();
    let p = plan(
        &lab.url("/delay/5ms"),
        16,
        Duration::from_millis(3500),
        |p| {
            p.model = Model::Open { rate: 150.0 };
        },
    );
    let mut seen = Vec::new();
    let mut calls = Vec::new();
    let mut last_statuses = std::collections::BTreeMap::new();
    let r = load::run_with_progress(&p, &no_stop(), &mut |pr| {
        calls.push((pr.finished, pr.seconds.len()));
        for s in &pr.seconds {
            assert!(s.service.is_some(), "open model: a service histogram");
            assert_eq!(
                s.latency.len(),
                s.second.requests,
                "histogram of the second"
            );
        }
        seen.extend(pr.seconds.iter().map(|s| s.second.clone()));
        last_statuses = pr.statuses.clone();
    })
    .expect("the run works");
    assert_eq!(calls.last().map(|c| c.0), Some(true), "{calls:?}");
    assert_eq!(calls.iter().filter(|c| c.0).count(), 1, "{calls:?}");
    // Seconds arrive while the run goes, not only at the end.
    let live: usize = calls.iter().filter(|c| !c.0).map(|c| c.1).sum();
    assert!(live >= 2, "{calls:?}");
    assert_eq!(seen.len(), r.timeline.len());
    for (a, b) in seen.iter().zip(&r.timeline) {
        assert_eq!(a.t, b.t);
        assert_eq!(a.requests, b.requests, "second {}", b.t);
        assert_eq!(a.ok, b.ok, "second {}", b.t);
        assert_eq!(a.p99_ms, b.p99_ms, "second {}", b.t);
        assert_eq!(a.max_ms, b.max_ms, "second {}", b.t);
        assert_eq!(a.v2, b.v2, "second {}", b.t);
    }
    assert!(r.requests > 300, "{}", r.requests);
    assert_eq!(last_statuses.get(&200).copied(), Some(r.ok));
}

/// The per-endpoint second histograms (the timeline's `ep_v2`, stored as
/// `latency:NAME` and shown per endpoint by the live view) hold the real latencies: a
/// 20 ms endpoint's p50 is ≥ 15 ms and a fast one's below it. They start at 1–2 µs
/// and grow; recording with clamping had put every latency at 2 µs.
#[test]
fn per_endpoint_seconds_keep_their_latencies() {
    use hdrhistogram::serialization::Deserializer;
    let lab = healthy();
    let p = plan(&lab.url("/"), 4, Duration::from_secs(2), |p| {
        let mut slow = p.endpoints[0].clone();
        slow.name = "slow".into();
        slow.path_and_query = "/delay/20ms".into();
        p.endpoints[0].name = "fast".into();
        p.endpoints.push(slow);
    });
    let r = run(&p);
    let mut de = Deserializer::new();
    let mut p50 = |e: usize| -> f64 {
        let mut all = latscope::stats::histogram::new_histogram();
        for s in &r.timeline {
            if let Some(b) = s.ep_v2.get(e).filter(|b| !b.is_empty()) {
                let h: hdrhistogram::Histogram<u64> = de.deserialize(&mut b.as_slice()).unwrap();
                all.add(&h).unwrap();
            }
        }
        assert!(!all.is_empty(), "endpoint {e} has second histograms");
        all.value_at_quantile(0.5) as f64 / 1e6
    };
    let (fast, slow) = (p50(0), p50(1));
    assert!(slow >= 15.0, "slow p50 {slow} ms");
    assert!(fast < 15.0 && fast > 0.002, "fast p50 {fast} ms");
}

/// A load whose TLS handshakes fail says why, in the verifier's words (here: the
/// lab's certificate is self-signed and no --cacert was given), on stderr and as
/// `tls_error` in the JSON — not only "tls 5".
#[test]
fn tls_failures_say_why() {
    let (lab, _dir, _ca) = tls_lab(false);
    let url = lab.url("/");
    let out = crate::util::run(&["load", &url, "-n", "5", "-c", "1", "--no-save", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("5 TLS handshakes failed") && err.contains("self-signed"),
        "{err}"
    );
    let doc = json_of(&out);
    assert_eq!(doc["errors"]["tls"], 5, "{doc}");
    assert!(
        doc["tls_error"].as_str().unwrap().contains("--cacert"),
        "{doc}"
    );
}
