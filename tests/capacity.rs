//! `latscope load --find-max` (issue 18): the capacity search against servers whose
//! capacity is known — the lab's `--capacity` queue and Python servers with a fixed
//! worker pool and service time — in both models; an objective no level meets
//! (exit 99); the endpoint that limits capacity; and the run it stores (show,
//! report, export, compare). Steps are short (`--step 2s`) and every search is
//! bounded by `--max-time`, so each test stays well under a minute.

use std::time::{Duration, Instant};

use serde_json::Value;

use latscope::lab::{self, LabOptions};

use crate::util::{json_of, run_within};
use crate::util_real::{python_server, TempDir};
use crate::util_require::require;

/// A search may take this long before it counts as a hang (its `--max-time` is 35 s).
const LIMIT: Duration = Duration::from_secs(90);

/// Runs `latscope load ARGS --json` and returns (exit code, JSON, stderr). A search
/// judges p99 on steps of a few hundred requests, where a stall of the machine fails
/// a step: the searches never run beside a wire or another heavy test (the wire
/// lock), only beside each other (a few hundred requests a second each).
fn search(args: &[&str]) -> (i32, Value, String) {
    let _quiet = crate::util_wire::lock_shared();
    search_held(args)
}

/// [`search`] for a caller that holds the wire lock already.
fn search_held(args: &[&str]) -> (i32, Value, String) {
    let mut all = vec!["load", "--json", "--max-time", "35s"];
    all.extend_from_slice(args);
    let started = Instant::now();
    let out = run_within(&all, LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!(
        "{args:?}: {:.1} s; stderr: {stderr}",
        started.elapsed().as_secs_f64()
    );
    (out.status.code().unwrap_or(-1), json_of(&out), stderr)
}

/// [`search`], run once more when `fits` refuses the first answer: a stall of the
/// shared machine (other builds, parallel suites) fails a step that the server
/// passes, and then the search answers about the machine. Said on stderr; the
/// second answer is the one asserted on.
fn search_fit(args: &[&str], fits: impl Fn(i32, &Value) -> bool) -> (i32, Value, String) {
    search_fit_by(search, args, fits)
}

/// [`search_fit`] searching with `search`.
fn search_fit_by(
    search: fn(&[&str]) -> (i32, Value, String),
    args: &[&str],
    fits: impl Fn(i32, &Value) -> bool,
) -> (i32, Value, String) {
    let first = search(args);
    if fits(first.0, &first.1) {
        return first;
    }
    eprintln!(
        "a noisy answer ({}): searching once more",
        first.1["capacity"]["answer"]
    );
    search(args)
}

/// Whether the search answered with a capacity within `range`.
fn lands(range: std::ops::RangeInclusive<f64>) -> impl Fn(i32, &Value) -> bool {
    move |code, v| {
        code == 0
            && v["capacity"]["level"]
                .as_f64()
                .is_some_and(|l| range.contains(&l))
    }
}

/// The capacity object and its level.
fn capacity(v: &Value) -> (&Value, f64) {
    let c = &v["capacity"];
    let level = c["level"]
        .as_f64()
        .unwrap_or_else(|| panic!("no level: {c}"));
    (c, level)
}

/// The lab with `--capacity 200`: requests start no faster than one per 5 ms.
fn lab_200() -> lab::RunningLab {
    lab::spawn(LabOptions {
        capacity: Some(200.0),
        ..Default::default()
    })
    .expect("lab starts")
}

/// Open model against the lab's `--capacity 200` queue: below 200 req/s a request
/// waits at most a slot or two (5 ms each); above it the queue grows by (rate − 200)
/// requests a second, so at 210 req/s p99 passes 100 ms within the 3 s step. The
/// capacity found at `p99<100ms` lands within 15 % of 200 req/s, the bracket is
/// within the 5 % precision, and the run is stored as one load run whose steps
/// `show`, `report` (the capacity chart with the objective line and the bracket),
/// `export` and `compare` all read.
#[test]
fn find_max_open_model_lands_on_the_lab_capacity() {
    let lab = lab_200();
    let dir = TempDir::new("capacity-open");
    let db = dir.join("runs.db").to_string_lossy().into_owned();
    let url = lab.url("/");
    let (code, v, _) = search_fit(
        &[
            &url,
            "--find-max",
            "p99<100ms",
            "--step",
            "2s",
            "--min-rate",
            "50",
            "--db",
            &db,
            "--label",
            "search",
        ],
        lands(170.0..=230.0),
    );
    assert_eq!(code, 0, "{v}");
    let (c, level) = capacity(&v);
    assert!((170.0..=230.0).contains(&level), "capacity {level}: {c}");
    assert_eq!(c["model"], "open");
    assert_eq!(c["unit"], "req/s");
    assert_eq!(c["stopped"], "precision", "{c}");
    let (lo, hi) = (
        c["bracket"][0].as_f64().unwrap(),
        c["bracket"][1].as_f64().unwrap(),
    );
    assert_eq!(lo, level);
    assert!(
        hi > lo && (hi - lo) / lo <= 0.05 + 1e-9,
        "bracket {lo}..{hi}"
    );
    assert_eq!(c["limiting_endpoint"], "/");
    let answer = c["answer"].as_str().unwrap();
    assert!(answer.starts_with("capacity ≈ "), "{answer}");
    let steps = v["steps"].as_array().unwrap();
    assert!(steps.len() >= 4, "{steps:?}");
    for s in steps {
        let pass = s["pass"].as_bool().unwrap();
        let p99 = s["endpoints"]["/"]["p99_ms"].as_f64().unwrap();
        // A step passes exactly when its window's p99 is under the objective and it
        // completed its rate.
        assert_eq!(pass, p99 < 100.0 && s["limited_by"].is_null(), "{s}");
        assert_eq!(
            pass,
            s["failed_objective"].is_null() && s["limited_by"].is_null()
        );
    }
    let cap_step = steps
        .iter()
        .find(|s| s["level"].as_f64() == Some(level))
        .unwrap();
    assert!(
        cap_step["achieved"].as_f64().unwrap() > 0.9 * level,
        "{cap_step}"
    );
    // The stored run: show prints the answer first, export carries the steps and
    // their histograms, the report draws the capacity chart.
    let show = run_within(&["show", "search", "--db", &db], LIMIT);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains(answer) && text.contains("◀ capacity"),
        "{text}"
    );
    let export = run_within(&["export", "search", "--db", &db], LIMIT);
    let file: Value = serde_json::from_slice(&export.stdout).unwrap();
    assert_eq!(
        file["run"]["summary"]["steps"].as_array().unwrap().len(),
        steps.len()
    );
    let names: Vec<&str> = file["run"]["histograms"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h["name"].as_str())
        .collect();
    let tag = format!("latency@r{level}");
    assert!(names.contains(&tag.as_str()), "{tag} not in {names:?}");
    let html = dir.join("report.html");
    let out = run_within(
        &[
            "report",
            "search",
            "-o",
            html.to_str().unwrap(),
            "--db",
            &db,
        ],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(0));
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains("Capacity</h4>") && html.contains("p99 against load"));
    assert!(html.contains("objective p99&lt;100ms"));
    assert!(
        html.contains(&format!("bracket {lo} – {hi}")),
        "no bracket in the chart"
    );
    // compare: the search (at its capacity) beside a plain run.
    let plain = run_within(
        &[
            "load", &url, "--rate", "100", "-d", "2s", "--db", &db, "--label", "plain",
        ],
        LIMIT,
    );
    assert_eq!(plain.status.code(), Some(0));
    let cmp = run_within(&["compare", "plain", "search", "--db", &db], LIMIT);
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert_eq!(cmp.status.code(), Some(0), "{text}");
    assert!(text.contains("capacity (open)"), "{text}");
}

/// Closed model against the same queue: each of c connections waits behind the
/// others' slots, so latency ≈ c × 5 ms at 200 req/s whatever c is; `p99<100ms`
/// holds up to about 19 connections. The search reports connections, and the rate
/// it achieved at its capacity is the lab's 200 req/s within 15 %.
#[test]
fn find_max_closed_model_lands_on_the_lab_capacity() {
    let lab = lab_200();
    let (code, v, _) = search_fit(
        &[
            &lab.url("/"),
            "--find-max",
            "p99<100ms",
            "--model",
            "closed",
            "--min-connections",
            "4",
            "--step",
            "2s",
            "--no-save",
        ],
        lands(14.0..=21.0),
    );
    assert_eq!(code, 0, "{v}");
    let (c, level) = capacity(&v);
    assert_eq!(c["model"], "closed");
    assert_eq!(c["unit"], "connections");
    assert!(
        (14.0..=21.0).contains(&level),
        "capacity {level} connections: {c}"
    );
    let achieved = c["achieved"].as_f64().unwrap();
    assert!(
        (170.0..=230.0).contains(&achieved),
        "{achieved} req/s at capacity: {c}"
    );
    assert_eq!(c["stopped"], "precision", "{c}");
    let (lo, hi) = (
        c["bracket"][0].as_f64().unwrap(),
        c["bracket"][1].as_f64().unwrap(),
    );
    assert!(
        hi - lo <= 1.0 || (hi - lo) / lo <= 0.05,
        "bracket {lo}..{hi}"
    );
}

/// An objective no level can meet: every request to /delay/30ms takes ≥ 30 ms, so
/// `p99<10ms` fails at the lowest rate already. The search stops there, says so on
/// stderr and exits 99 (as a failed --threshold); a search flag without --find-max,
/// or --find-max with --rate, is a usage error (exit 2) naming the flag.
#[test]
fn an_objective_that_cannot_be_met_exits_99() {
    let lab = lab::spawn(LabOptions::default()).expect("lab starts");
    let (code, v, stderr) = search(&[
        &lab.url("/delay/30ms"),
        "--find-max",
        "p99<10ms",
        "--step",
        "1s",
        "--no-save",
    ]);
    assert_eq!(code, 99, "{v}");
    assert_eq!(v["capacity"]["stopped"], "lowest-level-failed");
    assert!(v["capacity"]["level"].is_null());
    assert_eq!(v["steps"].as_array().unwrap().len(), 1);
    assert!(
        stderr.contains("objective failed") && stderr.contains("lowest level"),
        "{stderr}"
    );
    for (args, flag) in [
        (vec!["--model", "closed"], "--model"),
        (vec!["--find-max", "p99<1s", "--rate", "10"], "--rate"),
        (vec!["--find-max", "p99<1s", "--step", "100ms"], "--step"),
        (vec!["--find-max", "p99"], "--find-max"),
        (vec!["--find-max", "nope:p99<1s"], "nope"),
    ] {
        let mut all = vec!["load", "http://127.0.0.1:9/"];
        all.extend(args);
        let out = run_within(&all, LIMIT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {err}");
        assert!(err.contains(flag), "{all:?}: {err}");
    }
}

/// A real server with a fixed worker pool and a fixed service time, written here in
/// Python: `argv[1]` lists `path:workers:seconds`; a request to a pooled path holds
/// one of its workers for the service time (the rest wait for a free worker), other
/// paths answer at once. Responses go out in one write (no Nagle delay).
const POOL: &str = r#"
import sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
pools = {}
for spec in sys.argv[1].split(","):
    path, workers, service = spec.split(":")
    pools[path] = (threading.Semaphore(int(workers)), float(service))

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = -1
    def do_GET(self):
        pool = pools.get(self.path)
        if pool is not None:
            with pool[0]:
                time.sleep(pool[1])
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass

class S(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

/// A Python server with 4 workers and a 20 ms service time: at most 4 / 0.020 s =
/// 200 requests per second (Little's law: 4 in service, each 20 ms). Below that a
/// request takes ≈ 20 ms; above it the wait for a worker grows every second. The
/// capacity found at `p99<100ms` (open model) lands within 15 % of 200 req/s.
#[test]
fn find_max_finds_a_python_worker_pools_capacity() {
    if !require("python3") {
        return;
    }
    let (_server, port) = python_server(POOL, &["/work:4:0.020"]);
    let url = format!("http://127.0.0.1:{port}/work");
    let (code, v, _) = search_fit(
        &[
            &url,
            "--find-max",
            "p99<100ms",
            "--step",
            "2s",
            "--min-rate",
            "50",
            "--no-save",
        ],
        lands(170.0..=230.0),
    );
    assert_eq!(code, 0, "{v}");
    let (c, level) = capacity(&v);
    assert!(
        (170.0..=230.0).contains(&level),
        "capacity {level} req/s, 200 in theory: {c}"
    );
    no_step_above_its_rate(&v);
    // Below capacity a request costs its 20 ms of service, little more.
    let first = &v["steps"][0]["endpoints"]["/work"];
    let p50 = first["p50_ms"].as_f64().unwrap();
    assert!(
        (19.0..=40.0).contains(&p50),
        "p50 {p50} ms at 50 req/s: {first}"
    );
}

/// Two endpoints walked in turn, each half the arrivals: `fast` answers at once,
/// `slow` has 2 workers × 20 ms = 100 req/s, so the total rate can reach ≈ 200
/// req/s before `slow` queues. `p99<100ms` (every endpoint) fails first on `slow`:
/// the search names it as the limiting endpoint, in the JSON and in the text, and
/// `fast` stays below `slow` at the failing step (and fast at the first).
#[test]
fn the_limiting_endpoint_is_named() {
    if !require("python3") {
        return;
    }
    let dir = TempDir::new("capacity-limit");
    let (_server, port) = python_server(POOL, &["/slow:2:0.020"]);
    let scenario = dir.write(
        "scenario.toml",
        &format!(
            r#"base_url = "http://127.0.0.1:{port}"
[[request]]
name = "fast"
path = "/fast"
[[request]]
name = "slow"
path = "/slow"
"#
        ),
    );
    let db = dir.join("runs.db").to_string_lossy().into_owned();
    let (code, v, _) = search_fit(
        &[
            "-f",
            &scenario,
            "--find-max",
            "p99<100ms",
            "--step",
            "2s",
            "--min-rate",
            "50",
            "--db",
            &db,
        ],
        lands(150.0..=250.0),
    );
    assert_eq!(code, 0, "{v}");
    let (c, level) = capacity(&v);
    assert_eq!(c["limiting_endpoint"], "slow", "{c}");
    assert!((150.0..=250.0).contains(&level), "capacity {level}: {c}");
    let failed = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["level"] == c["bracket"][1])
        .unwrap();
    assert_eq!(failed["failed_endpoint"], "slow", "{failed}");
    // `fast` may wait too once every connection is held by a queued `slow` request
    // (the open model's requests wait for a free connection), but less.
    let p99 = |e: &str| failed["endpoints"][e]["p99_ms"].as_f64().unwrap();
    assert!(p99("fast") < p99("slow"), "{failed}");
    let first = &v["steps"][0]["endpoints"];
    assert!(first["fast"]["p99_ms"].as_f64().unwrap() < 50.0, "{first}");
    let show = run_within(&["show", "last", "--db", &db], LIMIT);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("limiting endpoint: slow"), "{text}");
    assert!(text.contains("on every endpoint"), "{text}");
}

/// The steps of a search's JSON.
fn steps_of(v: &Value) -> &Vec<Value> {
    v["steps"].as_array().expect("steps")
}

/// Issue 29: an open-model step never reports more achieved than its rate, early
/// stopped or not (what its window completed beyond is a drained backlog, apart).
fn no_step_above_its_rate(v: &Value) {
    for s in steps_of(v) {
        let target = s["target_rps"].as_f64().expect("an open-model step");
        let achieved = s["achieved"].as_f64().unwrap();
        assert!(achieved <= target, "achieved {achieved} > {target}: {s}");
        if let Some(d) = s["backlog_drained_rps"].as_f64() {
            assert!(d > 0.0 && achieved == target, "{s}");
        }
    }
}

/// Early stop (k6's `abortOnFail` with `delayAbortEval`, made safe): against the
/// lab's `--capacity 200` queue a 240 req/s step queues 40 more requests each
/// second, so after the 1 s settle every answer waits well past 100 ms; its p99 is
/// decided once more than 1 % of the step's most possible requests (240 × 4 s ×
/// 1.05 + 10 = 1018, so 10) are over, and the step ends after its first scored
/// second instead of its 3 s. Asserted on the recorded steps, not on the clock:
/// with early stop some failing step scored less than `--step` and says
/// `stopped_early` with the objective and why; with `--no-early-stop` every step
/// scored its whole 3 s; no passing step ever stopped early or scored less; and the
/// two searches agree within the precision (their brackets overlap).
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn find_max_stops_decided_steps_early() {
    // Two brackets are compared, so both searches run alone (the wire lock, not
    // shared): beside another search, each one's noise moved the other's answer by
    // a few per cent.
    let _alone = crate::util_wire::lock();
    let lab = lab_200();
    let url = lab.url("/");
    let args = [
        url.as_str(),
        "--find-max",
        "p99<100ms",
        "--step",
        "3s",
        "--min-rate",
        "120",
    ];
    let (code, early, _) = search_fit_by(search_held, &args, lands(170.0..=230.0));
    assert_eq!(code, 0, "{early}");
    let mut full_args = args.to_vec();
    full_args.push("--no-early-stop");
    let (code, full, _) = search_fit_by(search_held, &full_args, lands(170.0..=230.0));
    assert_eq!(code, 0, "{full}");
    let scored = |s: &Value| s["duration_s"].as_f64().unwrap();
    let mut stopped = 0;
    for s in steps_of(&early) {
        if s["pass"].as_bool().unwrap() {
            assert_eq!(s["stopped_early"], false, "{s}");
            assert_eq!(scored(s), 3.0, "{s}");
        } else if s["stopped_early"] == true {
            stopped += 1;
            assert!(scored(s) < 3.0, "{s}");
            assert_eq!(s["early_stop"]["objective"], "p99<100ms", "{s}");
            assert_eq!(s["early_stop"]["planned_s"], 3.0, "{s}");
            assert_eq!(s["failed_objective"], "p99<100ms", "{s}");
            // Judged on what it scored, the step fails on its own numbers.
            assert!(
                s["endpoints"]["/"]["p99_ms"].as_f64().unwrap() >= 100.0,
                "{s}"
            );
        }
    }
    assert!(
        stopped >= 1,
        "no step stopped early: {:?}",
        steps_of(&early)
    );
    no_step_above_its_rate(&early);
    no_step_above_its_rate(&full);
    for s in steps_of(&full) {
        assert_eq!(s["stopped_early"], false, "{s}");
        assert_eq!(scored(s), 3.0, "{s}");
    }
    let bracket = |v: &Value| {
        let b = &v["capacity"]["bracket"];
        (b[0].as_f64().unwrap(), b[1].as_f64().unwrap())
    };
    let ((lo_a, hi_a), (lo_b, hi_b)) = (bracket(&early), bracket(&full));
    assert!(
        lo_a < hi_b && lo_b < hi_a,
        "brackets {lo_a}..{hi_a} (early stop) and {lo_b}..{hi_b} (full steps) disagree"
    );
}

/// A search whose every step passes (the lab's queue at no more than 120 req/s,
/// 60 % of its 200) never stops a step early: each scored its whole `--step`. Not
/// 80 %: there the queue drains a backlog at only 40 req/s, so a 0.15 s stall of a
/// busy machine held p99 over 100 ms for a whole 2 s step (one CI run in many).
#[test]
fn find_max_never_stops_a_passing_step() {
    let lab = lab_200();
    let url = lab.url("/");
    let (code, v, _) = search(&[
        &url,
        "--find-max",
        "p99<100ms",
        "--find-max",
        "errors<1%",
        "--step",
        "2s",
        "--min-rate",
        "40",
        "--max-rate",
        "120",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["capacity"]["stopped"], "cap", "{}", v["capacity"]);
    let steps = steps_of(&v);
    assert_eq!(steps.len(), 3, "{steps:?}");
    for s in steps {
        assert_eq!(s["pass"], true, "{s}");
        assert_eq!(s["stopped_early"], false, "{s}");
        assert!(s["early_stop"].is_null(), "{s}");
        assert_eq!(s["duration_s"], 2.0, "{s}");
    }
}

/// A server that accepts connections and never answers (each handler holds its
/// connection 20 s): nothing completes, so no latency or error objective has
/// evidence, but the open model's arrivals pile up past the connections and the
/// one-second backlog and are dropped. At 50 req/s for 1 s settle + 5 s the step
/// has at most 325 arrivals (50 × 6 × 1.05 + 10) and needs 225 completed in its
/// window (90 % of 250): once more than 100 are dropped it cannot make its rate
/// whatever the server does, and it ends early (after 4 of its 5 s here) as a
/// rate failure limited by the server; nothing completing at the lowest level
/// exits 1.
#[test]
fn find_max_stops_a_stalled_step_on_its_dropped_arrivals() {
    const STALL: &str = r#"
import socketserver, time
class H(socketserver.BaseRequestHandler):
    def handle(self):
        time.sleep(20)
class S(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256
s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;
    let (_server, port) = python_server(STALL, &["stall"]);
    let url = format!("http://127.0.0.1:{port}/");
    let (code, v, stderr) = search(&[
        &url,
        "--find-max",
        "p99<100ms",
        "--step",
        "5s",
        "--min-rate",
        "50",
        "--max-rate",
        "50",
    ]);
    // Nothing completed at the lowest level: the run failed (exit 1), said so.
    assert_eq!(code, 1, "{v}");
    assert!(stderr.contains("no request completed"), "{stderr}");
    let steps = steps_of(&v);
    assert_eq!(steps.len(), 1, "{steps:?}");
    let s = &steps[0];
    assert_eq!(s["pass"], false, "{s}");
    assert_eq!(s["stopped_early"], true, "{s}");
    assert_eq!(s["early_stop"]["objective"], "rate 50 req/s", "{s}");
    assert_eq!(s["limited_by"], "server", "{s}");
    assert!(s["duration_s"].as_f64().unwrap() < 5.0, "{s}");
    eprintln!("stalled step: {}", s["early_stop"]);
}
