//! `latscope report` through the binary: the self-contained HTML report (charts as
//! inline SVG, tables, findings, everything from a server escaped), the CSV timeline
//! and the HdrHistogram interval log, on stores of hand-built realistic runs (see
//! `compare.rs` for the builders). The browser test opens the report in headless
//! Chromium.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use latscope::store::RunRecord;
use serde_json::json;

use crate::compare::{disk_run, load_run, record, store_with, temp_dir, LoadShape, Rng, HEALTHY};
use crate::util::latscope;

/// What a hostile server sends back: markup that would run if it were not escaped.
const EVIL: &str = "<script>document.title='pwned'</script>";

/// A probe run as `latscope probe --json` describes it, with 20 samples per series
/// and a response header carrying [`EVIL`].
fn probe_run(id: &str, label: &str, wait_ms: f64, seed: u64) -> RunRecord {
    let mut rng = Rng::new(seed);
    let mut samples = Vec::new();
    let mut by_phase: std::collections::BTreeMap<(&str, &str), Vec<f64>> = Default::default();
    for series in ["fresh", "reused"] {
        for i in 0..20 {
            let fresh = series == "fresh";
            let p = |base: f64, rng: &mut Rng| base * (1.0 + 0.1 * rng.normal()).max(0.1);
            let dns = if fresh { p(0.4, &mut rng) } else { 0.0 };
            let connect = if fresh { p(1.0, &mut rng) } else { 0.0 };
            let tls = if fresh { p(2.0, &mut rng) } else { 0.0 };
            let send = p(0.05, &mut rng);
            let wait = p(wait_ms, &mut rng);
            let receive = p(0.3, &mut rng);
            let ttfb = dns + connect + tls + send + wait;
            let total = ttfb + receive;
            let phases = [
                ("dns", dns),
                ("connect", connect),
                ("tls", tls),
                ("send", send),
                ("wait", wait),
                ("receive", receive),
                ("ttfb", ttfb),
                ("total", total),
            ];
            let mut pm = serde_json::Map::new();
            for (k, v) in phases {
                pm.insert(k.into(), json!(v));
                by_phase.entry((series, k)).or_default().push(v);
            }
            samples.push(json!({"series": series, "t_ms": i * 30, "phases_ms": pm}));
        }
    }
    let series_doc = |series: &str| {
        let mut pm = serde_json::Map::new();
        for ((s, k), v) in &by_phase {
            if *s == series {
                pm.insert(
                    k.to_string(),
                    serde_json::to_value(latscope::stats::Percentiles::from_samples(v)).unwrap(),
                );
            }
        }
        json!({"count": 20, "phases_ms": pm})
    };
    let finding = json!({"id": "no-validators", "category": "cache", "severity": "warn",
        "title": format!("responses carry no ETag {EVIL}"),
        "evidence": {"etag": EVIL, "status": 200}, "advice": "send ETag or Last-Modified"});
    let summary = json!({"kind": "probe", "target": "https://127.0.0.1:8443/page",
        "addresses": ["127.0.0.1"], "http_version": "HTTP/1.1",
        "tls": {"version": "TLSv1.3", "alpn": "http/1.1", "resumed": false},
        "fresh": series_doc("fresh"), "reused": series_doc("reused"), "samples": samples,
        "first_request": {"total_ms": 40.0},
        "tcp": {"rtt_ms": 0.05, "min_rtt_ms": 0.03, "retransmits": 0, "total_retrans": 0},
        "server_time_ms": {"p50": wait_ms}, "server_time_label": "server",
        "headers": {"content-type": "text/html", "x-evil": EVIL},
        "findings": [finding.clone()]});
    let mut r = record(id, label, "probe", "https://127.0.0.1:8443/page", summary);
    r.findings = json!([finding]);
    r
}

/// Runs `latscope report` with `args` against `db`; panics with stderr on failure.
fn report(db: &str, args: &[&str]) {
    let out = latscope()
        .arg("report")
        .args(args)
        .args(["--db", db])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A store with two load runs (one with a slow tail), two probes and a disk run.
fn fixture(name: &str) -> (PathBuf, String) {
    let dir = temp_dir(&format!("report-{name}"));
    let mut before = load_run("eeee000001", "before <b>", HEALTHY, 31);
    before.findings = json!([{"id": "tail", "category": "load", "severity": "crit",
        "title": "p99 is 6× p50", "evidence": {"p99_ms": 65.0, "p50_ms": 10.0},
        "advice": "look at the slow requests"}]);
    let after = load_run(
        "eeee000002",
        "after",
        LoadShape {
            tail_ms: (150.0, 200.0),
            ..HEALTHY
        },
        32,
    );
    let db = store_with(
        &dir,
        &[
            before,
            after,
            probe_run("eeee000003", "origin", 3.0, 33),
            probe_run("eeee000004", "proxy", 9.0, 34),
            disk_run("eeee000005", "local", 90.0, 3000, 35),
        ],
    );
    (dir, db)
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// Asserts the page is self-contained: no script, nothing loaded from elsewhere
/// (links within the page, `href="#…"` of the table of contents, load nothing).
pub(crate) fn assert_self_contained(html: &str) {
    let lower = html.to_lowercase();
    assert!(!lower.contains("<script"), "a script element in the report");
    for attr in ["src=", "@import", "url("] {
        assert!(!lower.contains(attr), "the report loads something: {attr}");
    }
    for (i, _) in lower.match_indices("href=") {
        assert!(
            lower[i..].starts_with("href=\"#"),
            "the report links outside itself: {}",
            &html[i..(i + 80).min(html.len())]
        );
    }
    assert!(
        html.contains(
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
             style-src 'unsafe-inline'; img-src data:\">"
        ),
        "the CSP is gone"
    );
}

/// One load run: timeline panels and a percentile chart as SVG, endpoint table,
/// findings with evidence, labels escaped, nothing external.
#[test]
fn report_of_one_load_run() {
    let (dir, db) = fixture("one");
    let html_path = dir.join("one.html");
    report(&db, &["before <b>", "-o", html_path.to_str().unwrap()]);
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_self_contained(&html);
    assert_eq!(count(&html, "<svg"), 2, "timeline + distribution");
    for title in [
        "Latency per second",
        "Requests per second",
        "Errors per second",
        "Active connections",
        "Latency by percentile",
        "99.9%",
    ] {
        assert!(html.contains(title), "missing {title}");
    }
    assert!(html.contains("<table class=\"endpoints\">"));
    assert!(html.contains("<td>places</td>") && html.contains("<td>search</td>"));
    assert!(html.contains("p99 is 6× p50") && html.contains("<td>p99_ms</td>"));
    assert!(html.contains("before &lt;b&gt;") && !html.contains("before <b>"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Several runs of every kind: a table of contents linking each run's section, each
/// run in its own section (the first run's findings, its verdict, come before any
/// overlay: issue 17), then the overlay and side-by-side table, probes with phase
/// bars and escaped headers.
#[test]
fn report_overlays_several_runs() {
    let (dir, db) = fixture("many");
    let html_path = dir.join("many.html");
    report(
        &db,
        &[
            "before <b>",
            "after",
            "origin",
            "proxy",
            "local",
            "-o",
            html_path.to_str().unwrap(),
        ],
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert_self_contained(&html);
    let at = html.find("id=\"overlay\"").unwrap();
    let first_run = html.find("id=\"run-").unwrap();
    let first_verdict = html.find("-findings\"").expect("the first run's findings");
    assert!(
        first_run < at && first_verdict < at,
        "the runs, verdict first, come before the overlay"
    );
    assert!(
        !html[at..].contains("id=\"run-"),
        "the overlay follows every run"
    );
    let overlay = &html[at..];
    assert!(overlay.contains("Load latency by percentile, all runs"));
    assert!(overlay.contains("Probe TTFB by percentile, all runs"));
    assert!(overlay.contains("I/O latency by percentile, all runs"));
    assert!(overlay.contains("Side by side") && overlay.contains("Mann-Whitney U"));
    assert!(
        overlay.contains("yes p&lt;0.001"),
        "the slow tail is significant"
    );
    assert_eq!(count(&html, "<section class=\"run\""), 5);
    // Several runs: a table of contents, before the runs, links each run's section
    // and, last, the overlay.
    let toc = html
        .find("<nav class=\"toc\">")
        .expect("a table of contents");
    assert!(toc < first_run);
    let toc_end = html[toc..].find("</nav>").unwrap() + toc;
    let toc_text = &html[toc..toc_end];
    assert!(
        toc_text.find("#overlay").unwrap() > toc_text.find("#run-eeee000005").unwrap(),
        "{toc_text}"
    );
    for id in ["eeee000001", "eeee000003", "eeee000005"] {
        assert!(
            html[toc..].contains(&format!("<a href=\"#run-{id}\">")),
            "{id}"
        );
        assert!(html.contains(&format!("id=\"run-{id}\"")), "{id}");
    }
    assert!(html.contains("Where a request&#39;s time goes") || html.contains("Where a request"));
    assert!(html.contains("<table class=\"phases\">"));
    assert!(html.contains("&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"));
    assert!(!html.contains(EVIL));
    assert!(count(&html, "<svg") >= 12, "{}", count(&html, "<svg"));
    let _ = std::fs::remove_dir_all(&dir);
}

fn decode_log(bytes: &[u8]) -> Vec<(Option<String>, f64, Histogram<u64>)> {
    let mut de = Deserializer::new();
    let mut out = Vec::new();
    for e in IntervalLogIterator::new(bytes) {
        if let LogEntry::Interval(i) = e.unwrap() {
            let raw = base64_decode(i.encoded_histogram());
            let h: Histogram<u64> = de.deserialize(&mut raw.as_slice()).unwrap();
            out.push((
                i.tag().map(|t| t.as_str().to_string()),
                i.start_timestamp().as_secs_f64(),
                h,
            ));
        }
    }
    out
}

/// Standard base64 (the interval log's encoding), enough for the test.
fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let bytes: Vec<u8> = s.bytes().filter(|c| *c != b'=').collect();
    let mut out = Vec::new();
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= u32::from(val(*c)) << (18 - 6 * i);
        }
        for i in 0..chunk.len().saturating_sub(1) {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}

/// The CSV timeline has one row per run and second; the interval log holds each
/// second's histogram, untagged for one run, tagged per run for several, and the
/// counts add up to the run's requests.
#[test]
fn csv_and_hdr_log_exports() {
    let (dir, db) = fixture("exports");
    let csv = dir.join("t.csv");
    let hlog = dir.join("one.hlog");
    report(
        &db,
        &["before <b>", "local", "--csv", csv.to_str().unwrap()],
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], latscope::report::csv::HEADER);
    assert_eq!(lines.len(), 1 + 10 + 10, "{text}");
    assert!(
        lines[1].starts_with("eeee000001,before <b>,load,all,0,200,199,1,"),
        "{}",
        lines[1]
    );
    assert!(
        lines[11].starts_with("eeee000005,local,disk,read,0,"),
        "{}",
        lines[11]
    );
    let p99: f64 = lines[1].split(',').nth(11).unwrap().parse().unwrap();
    assert!(p99 > 30.0 && p99 < 80.0, "{}", lines[1]);

    report(&db, &["after", "--hdr-log", hlog.to_str().unwrap()]);
    let log = std::fs::read(&hlog).unwrap();
    let head = String::from_utf8_lossy(&log[..200.min(log.len())]).to_string();
    assert!(
        head.contains("#[StartTime:") && head.contains("#[BaseTime:"),
        "{head}"
    );
    let entries = decode_log(&log);
    assert_eq!(entries.len(), 10);
    assert!(entries.iter().all(|e| e.0.is_none()));
    assert_eq!(entries.iter().map(|e| e.2.len()).sum::<u64>(), 2000);
    assert!((entries[3].1 - 3.0).abs() < 1e-6);
    // The slow tail of "after" is in the histograms.
    assert!(entries[0].2.value_at_quantile(0.99) > 140_000_000);

    let both = dir.join("both.hlog");
    report(
        &db,
        &["before <b>", "after", "--hdr-log", both.to_str().unwrap()],
    );
    let entries = decode_log(&std::fs::read(&both).unwrap());
    assert_eq!(entries.len(), 20);
    assert_eq!(entries[0].0.as_deref(), Some("before_<b>"));
    assert_eq!(entries[19].0.as_deref(), Some("after"));

    // A probe has no per-second histograms: a clear usage error.
    let out = latscope()
        .args([
            "report",
            "origin",
            "--hdr-log",
            both.to_str().unwrap(),
            "--db",
            &db,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no per-second histograms"));
    // Nothing to write: usage error.
    let out = latscope()
        .args(["report", "origin", "--db", &db])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Finds Debian's chromium.
pub(crate) fn chromium() -> Option<PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        crate::util_require::require("/usr/bin/chromium");
    }
    found
}

/// Runs chromium headless with the flags from shared/notes/browser.md plus `extra`,
/// bounded to 90 s; returns its stdout.
pub(crate) fn run_chromium(bin: &Path, profile: &Path, extra: &[String]) -> String {
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut { stdout }, &mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium exited with {status}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    reader.join().unwrap()
}

/// The report opened in a real browser: the charts and tables are in the DOM, the
/// `<script>` a server sent in a header is text in a table cell and did not run (the
/// title is unchanged, no script element exists), and a screenshot is saved to
/// the test run's scratch directory (`util::scratch`) for people to look at (not under the
/// repository's `target/`: CARGO_TARGET_DIR may be elsewhere, and that dir missing).
#[test]
fn report_in_headless_chromium() {
    let Some(bin) = chromium() else {
        return;
    };
    let (dir, db) = fixture("browser");
    let html_path = dir.join("browser.html");
    report(
        &db,
        &[
            "before <b>",
            "after",
            "proxy",
            "local",
            "-o",
            html_path.to_str().unwrap(),
        ],
    );
    let url = format!("file://{}", html_path.display());
    let profile = dir.join("profile");
    let dom = run_chromium(&bin, &profile, &["--dump-dom".into(), url.clone()]);
    assert!(
        dom.contains("<title>latscope report: before &lt;b&gt; vs after vs proxy vs local</title>"),
        "the title changed: {}",
        &dom[..dom.len().min(600)]
    );
    assert!(!dom.contains("pwned</title>"));
    assert!(
        !dom.to_lowercase().contains("<script"),
        "a script element made it into the DOM"
    );
    assert!(
        dom.contains("<td>&lt;script&gt;document.title='pwned'&lt;/script&gt;</td>"),
        "the header is not shown as text"
    );
    assert!(count(&dom, "<svg") >= 10, "charts missing from the DOM");
    assert!(
        count(&dom, "<polyline") + count(&dom, "<path") > 10,
        "charts have no lines"
    );
    assert!(
        dom.contains("<table class=\"endpoints\">") && dom.contains("<table class=\"phases\">")
    );
    let shot = crate::util::scratch().join("latscope-report-chromium.png");
    let _ = std::fs::remove_file(&shot);
    run_chromium(
        &bin,
        &profile,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,2000".into(),
            "--hide-scrollbars".into(),
            url,
        ],
    );
    let png = std::fs::read(&shot).expect("chromium saved the screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
