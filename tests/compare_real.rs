//! `latscope compare` on real runs: diagnose before and after a cache (a Python
//! origin straight, then behind nginx's proxy_cache, each with its own config in a
//! temp dir on a free 127.0.0.1 port), and disk runs on a loop device capped and
//! uncapped. The invariant of issue 14: a row whose value moved 2× or more is never
//! called "no" difference.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::compare::temp_dir;
use crate::util::free_port;
use crate::util_disk::{Capped, LoopDev};
use crate::util_real::python_server;
use crate::util_require::{require, require_ok, BLKIO_HINT, LOOP_HINT};

/// A child process stopped on drop: SIGTERM first, so a server with children of its
/// own (nginx's master stops its worker and cache manager) takes them along; SIGKILL
/// after 5 s.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until something accepts on `port` (10 s at most).
fn wait_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A Python origin: 20 ms of work per request, a 2 KB body, cacheable for 60 s
/// (`Cache-Control: public, max-age=60`), no validators.
const ORIGIN: &str = r#"
import http.server, sys, time
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        time.sleep(0.02)
        body = b"x" * 2000
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "public, max-age=60")
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

/// nginx caching the origin (RFC 9111 §3: a 200 with max-age is storable by a shared
/// cache; `proxy_cache_valid` keeps it 60 s); under `/bypass/` the same cache is
/// skipped on every request (`proxy_cache_bypass`, `proxy_no_cache`: nginx says
/// `X-Cache-Status: BYPASS`, a miss), so both runs say something about the cache.
fn nginx_conf(dir: &Path, port: u16, origin: u16) -> String {
    let d = dir.display();
    format!(
        "worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 256; }}\n\
         http {{\n access_log off;\n client_body_temp_path {d}/cb; proxy_temp_path {d}/pt;\n \
         fastcgi_temp_path {d}/ft; uwsgi_temp_path {d}/ut; scgi_temp_path {d}/st;\n \
         proxy_cache_path {d}/cache keys_zone=c:1m;\n \
         server {{\n  listen 127.0.0.1:{port};\n  location / {{\n   \
         proxy_pass http://127.0.0.1:{origin};\n   proxy_cache c;\n   \
         proxy_cache_valid 200 60s;\n   add_header X-Cache-Status $upstream_cache_status;\n  }}\n  \
         location /bypass/ {{\n   proxy_pass http://127.0.0.1:{origin};\n   proxy_cache c;\n   \
         proxy_cache_bypass 1;\n   proxy_no_cache 1;\n   \
         add_header X-Cache-Status $upstream_cache_status;\n  }}\n }}\n}}\n"
    )
}

/// nginx started on a free port in front of `origin`, with its files in `dir`.
fn nginx_in_front(dir: &Path, origin: u16) -> (Proc, u16) {
    let front = free_port();
    let conf = dir.join("nginx.conf");
    std::fs::write(&conf, nginx_conf(dir, front, origin)).unwrap();
    let nginx = Proc(
        Command::new("nginx")
            .args(["-g", "daemon off;", "-p"])
            .arg(dir)
            .arg("-c")
            .arg(&conf)
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_port(front);
    (nginx, front)
}

fn latscope_in(db: &str, args: &[&str]) -> std::process::Output {
    Command::new("timeout")
        .arg("90")
        .arg(env!("CARGO_BIN_EXE_latscope"))
        .args(args)
        .args(["--db", db])
        .output()
        .unwrap()
}

fn ok(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A saving command's text ends with where the run went (issue 37 item 6).
fn saved_at_the_end(out: &std::process::Output) {
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.trim_end().lines().last().unwrap_or_default();
    assert!(last.starts_with("  saved as run "), "{text}");
}

fn section<'a>(cmp: &'a Value, name: &str) -> &'a Value {
    cmp["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no section {name} in {cmp:#}"))
}

fn row<'a>(s: &'a Value, metric: &str) -> &'a Value {
    s["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric)
        .unwrap_or_else(|| panic!("no row {metric} in {s:#}"))
}

/// No row whose value moved 2× or more is called "no" difference: it is a yes, a
/// can't tell, a too-few, moved against a significant shift, or too small to matter
/// ("no, too small": under the 0.1 ms floor, as a reused connection's send p90 of a few
/// µs that doubled on a busy machine).
fn never_no_beside_2x(cmp: &Value) {
    for s in cmp["sections"].as_array().unwrap() {
        for r in s["rows"].as_array().unwrap() {
            for (i, t) in r["tests"].as_array().unwrap().iter().enumerate() {
                let ratio = r["ratios"][i].as_f64();
                let big = ratio.is_some_and(|x| !(0.5..=2.0).contains(&x));
                if big && t["significant"] == false {
                    assert!(
                        t["inconclusive"] == true
                            || t["against_test"] == true
                            || t["negligible"] == true,
                        "'no' beside ×{ratio:?} in {}: {r:#}",
                        s["name"]
                    );
                }
            }
        }
    }
}

/// Diagnose before/after a cache: compare keeps the ramp (peak req/s up many times,
/// each step's p50 down, significant on exceedances), the cache audit section, and
/// says which findings stayed; the text shows the ramp table.
#[test]
fn compare_diagnose_before_and_after_an_nginx_cache() {
    if !require("nginx") || !require("python3") {
        return;
    }
    let dir = temp_dir("diag-real");
    let (_py, origin) = python_server(ORIGIN, &[]);
    let (_nginx, front) = nginx_in_front(&dir, origin);
    let db = dir.join("runs.db");
    let db = db.to_str().unwrap();
    let diag = |port: u16, label: &str| {
        let url = format!("http://127.0.0.1:{port}/page");
        let out = latscope_in(
            db,
            &[
                "diagnose",
                &url,
                "-n",
                "5",
                "--max-connections",
                "4",
                "--step",
                "2s",
                "--label",
                label,
                "--json",
            ],
        );
        ok(&out, label);
    };
    diag(origin, "origin");
    diag(front, "cached");
    let out = latscope_in(db, &["compare", "origin", "cached", "--json"]);
    ok(&out, "compare");
    let cmp: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ramp = section(&cmp, "load ramp");
    let peak = row(ramp, "peak req/s");
    assert!(peak["ratios"][1].as_f64().unwrap() > 3.0, "{peak:#}");
    let p50 = row(ramp, "c=1 p50");
    assert!(p50["ratios"][1].as_f64().unwrap() < 0.5, "{p50:#}");
    assert_eq!(p50["tests"][1]["significant"], true, "{p50:#}");
    assert!(p50["tests"][1]["over"].is_array(), "{p50:#}");
    let cache = section(&cmp, "cache audit");
    assert_eq!(row(cache, "freshness (s)")["values"][0], 60.0, "{cache:#}");
    let ch = &cmp["findings"][0];
    assert_eq!(ch["run"], 1);
    let ids = |k: &str| -> Vec<String> {
        ch[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(ids("kept").contains(&"no-validators".to_string()), "{ch:#}");
    never_no_beside_2x(&cmp);
    let text = latscope_in(db, &["compare", "origin", "cached"]);
    ok(&text, "compare text");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("load ramp") && text.contains("c=4 p99"),
        "{text}"
    );
    assert!(text.contains("findings, B against A:"), "{text}");
    assert!(
        text.starts_with("B (cached) against A (origin): "),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 37 item 3, on real runs: nginx's cache skipped (`/bypass/`, every response
/// BYPASS) then used (`/`, HITs), diagnosed and load-tested. `compare`'s text leads
/// with the verdict; the rows that moved less than 0.1 ms (the loopback connect to
/// the same nginx) are hidden unless `--all`; the legend comes only with `--explain`;
/// the hit ratios that explain the change (0 % → ~100 %) are shown, under load as in
/// the diagnosis.
#[test]
fn compare_leads_with_verdict_and_shows_the_hit_ratio() {
    if !require("nginx") || !require("python3") {
        return;
    }
    let dir = temp_dir("verdict-real");
    let (_py, origin) = python_server(ORIGIN, &[]);
    let (_nginx, front) = nginx_in_front(&dir, origin);
    let db = dir.join("runs.db");
    let db = db.to_str().unwrap();
    let missed = format!("http://127.0.0.1:{front}/bypass/page");
    let cached = format!("http://127.0.0.1:{front}/page");
    for (url, label) in [(&missed, "missed"), (&cached, "cached")] {
        let out = latscope_in(
            db,
            &[
                "diagnose",
                url,
                "-n",
                "8",
                "--max-connections",
                "2",
                "--step",
                "2s",
                "--label",
                label,
            ],
        );
        ok(&out, label);
        saved_at_the_end(&out);
        let out = latscope_in(
            db,
            &[
                "load",
                url,
                "-c",
                "2",
                "-d",
                "2s",
                "--label",
                &format!("load-{label}"),
            ],
        );
        ok(&out, label);
        saved_at_the_end(&out);
    }
    let text = |args: &[&str]| {
        let out = latscope_in(db, args);
        ok(&out, "compare");
        String::from_utf8(out.stdout).unwrap()
    };
    let out = latscope_in(db, &["compare", "missed", "cached", "--json"]);
    ok(&out, "compare --json");
    let cmp: Value = serde_json::from_slice(&out.stdout).unwrap();
    let default = text(&["compare", "missed", "cached"]);
    // The verdict first, the run table after it.
    assert!(
        default.starts_with("B (cached) against A (missed): "),
        "{default}"
    );
    assert!(default.find("better").unwrap() < default.find("Runs:").unwrap());
    // The hit ratio under load: 0 % through the bypass, nearly all hits behind the cache.
    let hit = row(section(&cmp, "cache audit"), "hit ratio under load");
    assert_eq!(hit["values"][0], 0.0, "{hit:#}");
    assert!(hit["values"][1].as_f64().unwrap() > 0.9, "{hit:#}");
    assert_eq!(hit["notable"], serde_json::json!([false, true]), "{hit:#}");
    let line = default
        .lines()
        .find(|l| l.contains("hit ratio under load") && l.contains('→'))
        .unwrap_or_else(|| panic!("no hit ratio in the verdict: {default}"));
    assert!(
        line.contains("0 % → 9") || line.contains("0 % → 100 %"),
        "{line}"
    );
    // Rows that moved less than 0.1 ms are noise: never notable. A timing row that is
    // not notable (one of those when there is one; on a busy machine every timing may
    // move more, so else any other quiet timing) is hidden by default, shown by --all.
    let mut noise = Vec::new();
    let mut quiet_rows = Vec::new();
    let mut names = Vec::new();
    for s in cmp["sections"].as_array().unwrap() {
        for r in s["rows"].as_array().unwrap() {
            let metric = r["metric"].as_str().unwrap().to_string();
            names.push(metric.clone());
            let (a, b) = (r["values"][0].as_f64(), r["values"][1].as_f64());
            if let (Some(a), Some(b)) = (a, b) {
                if r["unit"] == "ms" && (a - b).abs() < 0.1 {
                    assert_eq!(r["notable"], serde_json::json!([false, false]), "{r:#}");
                    noise.push(metric.clone());
                }
                if r["unit"] == "ms" && r["notable"] == serde_json::json!([false, false]) {
                    quiet_rows.push(metric);
                }
            }
        }
    }
    let unique = |m: &String| names.iter().filter(|n| *n == m).count() == 1;
    let quiet = noise
        .iter()
        .chain(&quiet_rows)
        .find(|m| unique(m))
        .unwrap_or_else(|| panic!("no quiet row in {cmp:#}"));
    let has_row = |t: &str| {
        t.lines()
            .any(|l| l.trim_start().starts_with(&format!("{quiet} ")))
    };
    assert!(!has_row(&default), "{quiet} shown by default: {default}");
    assert!(default.contains("rows hidden"), "{default}");
    let all = text(&["compare", "missed", "cached", "--all"]);
    assert!(has_row(&all), "{quiet} missing with --all: {all}");
    // The legend only with --explain.
    assert!(!default.contains("Mann-Whitney") && !all.contains("Mann-Whitney"));
    let explained = text(&["compare", "missed", "cached", "--explain"]);
    assert!(explained.contains("Mann-Whitney U"), "{explained}");
    assert!(explained.starts_with("B (cached) against A (missed): "));
    // The load runs: throughput up many times, and the cache hit ratio that says why.
    let out = latscope_in(db, &["compare", "load-missed", "load-cached", "--json"]);
    ok(&out, "compare loads");
    let cmp: Value = serde_json::from_slice(&out.stdout).unwrap();
    let all_eps = section(&cmp, "load: all endpoints");
    let rps = row(all_eps, "requests/s");
    assert!(rps["ratios"][1].as_f64().unwrap() > 3.0, "{rps:#}");
    let hit = row(all_eps, "cache hit ratio");
    assert_eq!(hit["values"][0], 0.0, "{hit:#}");
    assert!(hit["values"][1].as_f64().unwrap() > 0.9, "{hit:#}");
    let loads = text(&["compare", "load-missed", "load-cached"]);
    assert!(
        loads.starts_with("B (load-cached) against A (load-missed): "),
        "{loads}"
    );
    let verdict: String = loads.split("\nRuns:").next().unwrap().to_string();
    assert!(
        verdict.contains("cache hit ratio") && verdict.contains("requests/s"),
        "{loads}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two real disk runs, the same loop device uncapped then capped at 500 IOPS (3 s
/// each: 3 per-second blocks, too few for a per-second test of p99.99): the tail
/// rows are judged on exceedances and called different; no 2× row reads "no".
#[test]
fn compare_disk_runs_tail_on_exceedances() {
    let Some(lo) = require_ok(LoopDev::new("cmp", 64), LOOP_HINT) else {
        return;
    };
    let Some(capped) = require_ok(Capped::new(lo.rdev(), 500), BLKIO_HINT) else {
        return;
    };
    let dir = temp_dir("disk-real");
    let db = dir.join("runs.db");
    let bin = env!("CARGO_BIN_EXE_latscope");
    let run = |label: &str, cap: Option<&Capped>| {
        let cmd = format!(
            "{bin} disk {} --size 16MB --pattern randread --iodepth 4 -d 3s --label {label} --db {}",
            lo.mnt.path(),
            db.display()
        );
        let script = cap.map_or(format!("exec {cmd}"), |c| c.script(&cmd));
        let out = Command::new("timeout")
            .args(["60", "sh", "-c", &script])
            .output()
            .unwrap();
        ok(&out, label);
    };
    run("free", None);
    run("capped", Some(&capped));
    let out = latscope_in(
        db.to_str().unwrap(),
        &["compare", "free", "capped", "--json"],
    );
    ok(&out, "compare");
    let cmp: Value = serde_json::from_slice(&out.stdout).unwrap();
    let read = section(&cmp, "disk: read");
    let tail = row(read, "p99.99");
    let t = &tail["tests"][1];
    assert!(tail["ratios"][1].as_f64().unwrap() > 2.0, "{tail:#}");
    assert_eq!(t["significant"], true, "{tail:#}");
    assert!(
        t["basis"].as_str().unwrap().starts_with("I/Os over"),
        "{tail:#}"
    );
    never_no_beside_2x(&cmp);
    let _ = std::fs::remove_dir_all(&dir);
}
