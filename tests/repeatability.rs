//! Issue 29, "same server, same verdict": the same real server diagnosed N times
//! while two CPU hogs run (`stress-ng --cpu 2`, started here and stopped at the end
//! of each case) gets the same set of `warn`/`crit` findings every time:
//! - nginx serving a static file with `expires` (healthy: no warn or crit at all);
//! - nginx proxy_cache in front of a Python origin that sends `no-store` (every
//!   request a MISS), diagnosed with `--origin`: the proxy on the same host adds
//!   well under 20 ms, so no `cdn-cost` either way;
//! - Varnish with its built-in VCL hitting in front of the same origin sending
//!   `public, max-age=600`, with `--origin`: no `warn cdn-cost` (the edge saves the
//!   origin's time: at most an `info`);
//! - the lab's `/cold` route with a planted 1 s cold start (a new lab per run):
//!   `cold-start` every time;
//! - the database suite (`latscope disk PATH`) on an unthrottled RAM-backed loop
//!   device (no warn or crit: no `disk-tail` from a starved second) and on one capped
//!   at 500 IOPS by a cgroup v1 `blkio.throttle` (`disk-iops-cap` every time).
//!
//! The hogs would slow every other test running beside them, so this is a test
//! binary of its own (Cargo.toml), which `cargo test` runs after `tests`, alone; its
//! cases take turns (one lock), one set of hogs at a time. `LATSCOPE_REPEAT` sets N
//! (3 by default; `bench/repeatability.sh` runs 10); `LATSCOPE_HOGS=0` runs them
//! without hogs; `LATSCOPE_BIN` diagnoses with another build; `LATSCOPE_REPEAT_LOG=FILE` appends one JSON line per diagnosis
//! (case, run, warn/crit ids, every id) for the bench to count.

mod util;
mod util_caches;
mod util_disk;
mod util_nginx;
mod util_real;
mod util_require;
mod util_suite;
mod util_wire;

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::util_disk::{Capped, LoopDev};
use crate::util_real::{python_server, TempDir};
use crate::util_require::{require, require_ok, BLKIO_HINT, LOOP_HINT};
use crate::util_suite::{check_suite_doc, finding, fit, loud, profile, say, SUITE};
use crate::util_wire::ChildGuard;

/// Diagnoses per case (at least 3).
fn runs() -> usize {
    std::env::var("LATSCOPE_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1)
}

/// Whether the hogs run (`LATSCOPE_HOGS=0` turns them off, for the bench's quiet
/// half).
fn hogs_wanted() -> bool {
    std::env::var("LATSCOPE_HOGS").map_or(true, |v| v != "0")
}

/// One case at a time: each runs its own hogs.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// This case's turn (a case that failed leaves the lock poisoned: the next one
/// still runs).
fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Two CPU hogs for as long as the guard lives: `stress-ng --cpu 2` in a process
/// group of its own, stopped (SIGTERM to that group, which stress-ng passes to its
/// workers, then SIGKILL) on drop; `--timeout` bounds it should the test die.
struct Hogs(Option<ChildGuard>);

impl Hogs {
    fn start() -> Option<Hogs> {
        if !hogs_wanted() {
            return Some(Hogs(None));
        }
        if !require("stress-ng") {
            return None;
        }
        use std::os::unix::process::CommandExt;
        let child = Command::new("stress-ng")
            .args(["--cpu", "2", "--timeout", "300s", "--quiet"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("stress-ng starts");
        let pid = child.id();
        let hogs = Hogs(Some(ChildGuard(child)));
        // The first measurement starts once both workers run (stress-ng's children).
        let children = format!("/proc/{pid}/task/{pid}/children");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(&children).map_or(0, |c| c.split_whitespace().count()) < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "stress-ng's two workers did not start within 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(hogs)
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        if let Some(g) = self.0.as_mut() {
            let group = g.0.id() as i32;
            // SAFETY: kill(2) on the process group of our own child (its pid).
            unsafe { libc::kill(-group, libc::SIGTERM) };
            if g.wait_for_exit(Duration::from_secs(5)).is_none() {
                // SAFETY: as above.
                unsafe { libc::kill(-group, libc::SIGKILL) };
            }
        }
    }
}

/// A Python origin whose handler burns ~20 ms of CPU per request (rendering a page,
/// as an app does: the hogs make it slower and noisier) and sends `cache_control`.
const ORIGIN: &str = r#"
import hashlib, http.server, sys, time
CC = sys.argv[1]
BODY = b"<!doctype html><title>page</title>" + b"<p>rendered</p>" * 80
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        x, t = b"page", time.process_time()
        while time.process_time() - t < 0.020:
            x = hashlib.sha256(x).digest()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Cache-Control", CC)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
s.daemon_threads = True
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

/// One diagnosis: `latscope diagnose --no-save --no-load --json ARGS`, its findings
/// as (id, severity, verdict).
/// `LATSCOPE_BIN` runs another build instead (the bench compares one with main's).
fn diagnose(args: &[&str]) -> (Value, Vec<(String, String)>) {
    let v = match std::env::var_os("LATSCOPE_BIN") {
        Some(bin) => {
            let mut cmd = Command::new(bin);
            cmd.args(["diagnose", "--no-save", "--no-load", "--json"])
                .args(args);
            let (out, _) = crate::util::output_within(cmd, Duration::from_secs(120));
            assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
            crate::util::json_of(&out)
        }
        None => crate::util::diagnose_json(args),
    };
    let found = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (v, found)
}

/// The warn and crit ids of a diagnosis, sorted.
fn serious(found: &[(String, String)]) -> Vec<String> {
    let mut ids: Vec<String> = found
        .iter()
        .filter(|(_, s)| s == "warn" || s == "crit")
        .map(|(id, _)| id.clone())
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Appends one line to `LATSCOPE_REPEAT_LOG` when set.
fn log(case: &str, run: usize, v: &Value, found: &[(String, String)]) {
    let Ok(path) = std::env::var("LATSCOPE_REPEAT_LOG") else {
        return;
    };
    let line = serde_json::json!({
        "case": case,
        "run": run,
        "hogs": hogs_wanted(),
        "serious": serious(found),
        "findings": found.iter().map(|(id, s)| format!("{s} {id}")).collect::<Vec<_>>(),
        "rounds": v["probe"]["sampling"]["rounds"],
        "stopped": v["probe"]["sampling"]["stopped"],
        "client": v["probe"]["client"],
    });
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("the log opens");
    writeln!(f, "{line}").unwrap();
}

/// Diagnoses `args` (made afresh for each run by `args_for`) N times and checks that
/// every run has the same warn/crit ids; returns every run's findings.
fn repeat(
    case: &str,
    mut args_for: impl FnMut(usize) -> Vec<String>,
) -> Vec<Vec<(String, String)>> {
    let mut all = Vec::new();
    for run in 0..runs() {
        let args = args_for(run);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (v, found) = diagnose(&args);
        eprintln!(
            "{case} run {run}: {found:?} (sampling {}, client {})",
            v["probe"]["sampling"], v["probe"]["client"]
        );
        log(case, run, &v, &found);
        all.push(found);
    }
    let first = serious(&all[0]);
    for (i, found) in all.iter().enumerate() {
        assert_eq!(
            serious(found),
            first,
            "{case}: run {i}'s warn/crit ids differ from run 0's: {all:?}"
        );
    }
    all
}

/// nginx serving a small static file with `expires 1h` (Cache-Control, ETag and
/// Last-Modified): nothing to warn about, every time.
#[test]
fn repeatability_nginx_static_is_healthy_every_time() {
    let _turn = turn();
    let Some(bin) = crate::util_nginx::nginx_bin() else {
        return;
    };
    let dir = TempDir::new("repeat-static");
    std::fs::create_dir_all(dir.join("html")).unwrap();
    std::fs::write(dir.join("html/index.html"), "<!doctype html><p>hello</p>\n").unwrap();
    let port = crate::util::free_port();
    crate::util_nginx::write_conf(
        &dir.0,
        &format!(
            "  server {{ listen 127.0.0.1:{port}; root {}; expires 1h; }}",
            dir.join("html").display()
        ),
    );
    let addr = format!("127.0.0.1:{port}").parse().unwrap();
    let _nginx = crate::util_nginx::start(&bin, &dir.0, addr);
    let Some(_hogs) = Hogs::start() else {
        return;
    };
    let url = format!("http://127.0.0.1:{port}/index.html");
    let all = repeat("nginx-static", |_| vec![url.clone()]);
    assert!(serious(&all[0]).is_empty(), "healthy nginx: {all:?}");
}

/// nginx proxy_cache (every request a MISS: the origin sends `no-store`) on the same
/// host as its Python origin, with `--origin`: the proxy adds well under a
/// millisecond to the origin's ~20 ms, so `cdn-cost` fires neither way, every time.
#[test]
fn repeatability_miss_only_proxy_has_no_cdn_cost() {
    let _turn = turn();
    if !require("python3") || !require("nginx") {
        return;
    }
    let (_origin, origin) = python_server(ORIGIN, &["no-store"]);
    let proxy = crate::util_caches::nginx(origin);
    let Some(_hogs) = Hogs::start() else {
        return;
    };
    let url = format!("http://127.0.0.1:{}/page", proxy.port);
    let origin_addr = format!("127.0.0.1:{origin}");
    let all = repeat("nginx-miss-origin", |_| {
        vec![url.clone(), "--origin".into(), origin_addr.clone()]
    });
    for found in &all {
        assert!(
            !found.iter().any(|(id, _)| id == "cdn-cost"),
            "a MISS-only proxy beside its origin costs and saves nothing: {found:?}"
        );
    }
}

/// Varnish (built-in VCL) hitting in front of the Python origin (`public,
/// max-age=600`), with `--origin`: a hit answers in well under a millisecond, the
/// origin in ~20 ms; never a `warn cdn-cost`, and the same warn/crit ids every time.
#[test]
fn repeatability_varnish_hitting_has_no_cdn_cost_warning() {
    let _turn = turn();
    if !require("python3") || !require("varnishd") {
        return;
    }
    let (_origin, origin) = python_server(ORIGIN, &["public, max-age=600"]);
    let varnish = crate::util_caches::varnish(origin);
    let url = format!("http://127.0.0.1:{}/page", varnish.port);
    // Fill the cache before measuring.
    crate::util_caches::get(varnish.port, "/page", &[]);
    let Some(_hogs) = Hogs::start() else {
        return;
    };
    let origin_addr = format!("127.0.0.1:{origin}");
    let all = repeat("varnish-hit-origin", |_| {
        vec![url.clone(), "--origin".into(), origin_addr.clone()]
    });
    for found in &all {
        assert!(
            !found
                .iter()
                .any(|(id, s)| id == "cdn-cost" && (s == "warn" || s == "crit")),
            "a hitting Varnish does not cost time: {found:?}"
        );
    }
}

/// The lab's `/cold` route with a planted 1 s cold start (a fresh lab for every
/// run, so every run sees its first request): `cold-start` every time.
#[test]
fn repeatability_planted_cold_start_is_always_found() {
    let _turn = turn();
    let Some(_hogs) = Hogs::start() else {
        return;
    };
    let mut labs = Vec::new();
    let all = repeat("lab-cold", |_| {
        let (lab, url) = crate::util_wire::start_lab(&["--listen", "127.0.0.1:0", "--cold", "1s"]);
        labs.push(lab);
        vec![format!("{}/cold", url.trim_end_matches('/'))]
    });
    for found in &all {
        assert!(
            found
                .iter()
                .any(|(id, s)| id == "cold-start" && s == "warn"),
            "the planted cold start: {found:?}"
        );
    }
}

/// The database suite (`latscope disk PATH --size 64MB`, inside `cgroup`) N times
/// under the hogs; every run's document checked (tests/util_suite.rs) and by `check`,
/// its (id, severity) listed, and the same warn/crit ids required of every run.
fn repeat_disk(
    case: &str,
    cgroup: Option<&crate::util_disk::Capped>,
    path: &str,
    check: impl Fn(&Value),
) -> Vec<Vec<(String, String)>> {
    let mut all = Vec::new();
    for run in 0..runs() {
        let v = crate::util_disk::disk_json_in(cgroup, &format!("{path} {SUITE}"));
        let found: Vec<(String, String)> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let s = |k: &str| f[k].as_str().unwrap().to_string();
                (s("id"), s("severity"))
            })
            .collect();
        say(case, run, &v);
        for f in v["findings"].as_array().unwrap() {
            if f["severity"] != "info" {
                eprintln!("  {}: {} {}", f["id"], f["title"], f["evidence"]);
            }
        }
        log(case, run, &v, &found);
        check_suite_doc(&v);
        check(&v);
        all.push(found);
    }
    let first = serious(&all[0]);
    for (i, found) in all.iter().enumerate() {
        assert_eq!(serious(found), first, "{case}: run {i} differs: {all:?}");
    }
    all
}

/// The database suite on an unthrottled RAM-backed loop device under the hogs: fit
/// for every kind of database and nothing to warn about, every time (a second in
/// which the hogs starved latscope's I/O threads is set aside, never a `disk-tail`;
/// a commit tail the busy machine made is at most an info `slow-fsync`); the test
/// file is gone after each run.
#[test]
fn repeatability_unthrottled_volume_is_quiet_every_time() {
    let _turn = turn();
    let Some(lo) = require_ok(LoopDev::new("repeat-fast", 160), LOOP_HINT) else {
        return;
    };
    let Some(_hogs) = Hogs::start() else {
        return;
    };
    let all = repeat_disk("disk-unthrottled", None, lo.mnt.path(), |v| {
        assert_eq!(fit(v), "yes", "{}", v["verdict"]);
        assert!(loud(v).is_empty(), "{:?}: {}", loud(v), v["findings"]);
        assert!(
            lo.mnt.entries().iter().all(|e| e == "lost+found"),
            "{:?}",
            lo.mnt.entries()
        );
    });
    assert!(
        serious(&all[0]).is_empty(),
        "an unthrottled volume: {all:?}"
    );
}

/// The database suite on a loop device capped at 500 IOPS (cgroup v1 blkio) under
/// the hogs: `disk-iops-cap` names 500 every time (the same IOPS at 4 and 64 KiB,
/// latency rising with queue depth), never a bandwidth cap, added latency or a flush
/// cost (the O_DIRECT log runs at the cap, a write and a flush per commit: whichever
/// waits for the tokens, the wait is the cap's); the verdict is "limited" because of
/// the cap.
#[test]
fn repeatability_iops_cap_is_named_every_time() {
    let _turn = turn();
    let Some(lo) = require_ok(LoopDev::new("repeat-iops", 160), LOOP_HINT) else {
        return;
    };
    let Some(capped) = require_ok(Capped::new(lo.rdev(), 500), BLKIO_HINT) else {
        return;
    };
    let Some(_hogs) = Hogs::start() else {
        return;
    };
    repeat_disk("disk-iops-cap", Some(&capped), lo.mnt.path(), |v| {
        let cap = finding(v, "disk-iops-cap");
        assert_ne!(cap["severity"], "info", "{cap}");
        assert_eq!(cap["evidence"]["cap_iops"], 500.0, "{cap}");
        let ids: Vec<&str> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap())
            .collect();
        for quiet in [
            "disk-bandwidth-cap",
            "disk-added-latency",
            "disk-flush-cost",
        ] {
            assert!(!ids.contains(&quiet), "an IOPS cap, not {quiet}: {ids:?}");
        }
        assert_eq!(fit(v), "limited", "{}", v["verdict"]);
        assert_eq!(profile(v, "read-heavy"), "limited", "{}", v["verdict"]);
        let because = v["verdict"]["because"].to_string();
        assert!(because.contains("disk-iops-cap"), "{because}");
    });
}
