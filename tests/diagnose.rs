//! `latscope diagnose` / `latscope URL` and `latscope demo` against the lab: each
//! planted problem gives its finding, a healthy route gives none of them, the ramp
//! stays bounded, and the diagnose JSON has its parts.

use std::time::Duration;

use latscope::lab::{self, LabOptions};
use serde_json::Value;

use crate::findings::{diagnose, ids};
use crate::util::{json_of, run_within};

const LIMIT: Duration = Duration::from_secs(90);

fn has(v: &Value, id: &str) -> bool {
    ids(v).iter().any(|i| i == id)
}

#[test]
fn a_diagnosis_has_probe_cache_load_summary_and_findings() {
    let lab = lab::spawn(LabOptions::default()).unwrap();
    let v = diagnose(&[&lab.url("/cache/public"), "--max-connections", "4"]);
    assert_eq!(v["kind"], "diagnose");
    assert_eq!(v["probe"]["kind"], "probe");
    assert!(v["probe"]["fresh"]["count"].as_u64().unwrap() >= 5);
    assert_eq!(v["cache"]["status"], 200);
    let ramp = v["load"]["ramp"].as_array().unwrap();
    let conns: Vec<u64> = ramp
        .iter()
        .map(|s| s["connections"].as_u64().unwrap())
        .collect();
    assert_eq!(conns, vec![1, 2, 4]);
    assert!(ramp.iter().all(|s| s["requests"].as_u64().unwrap() > 0));
    assert!(
        v["summary"].as_str().unwrap().contains("TTFB"),
        "{}",
        v["summary"]
    );
    assert!(v["findings"].is_array());
    // A healthy route: none of the planted problems' findings.
    for id in [
        "cold-start",
        "knee",
        "not-shared-cacheable",
        "no-validators",
        "no-304",
        "errors-under-load",
        "periodic-spikes",
    ] {
        assert!(!has(&v, id), "{id} fired on a healthy route: {:?}", ids(&v));
    }
}

#[test]
fn latscope_url_is_diagnose_and_no_load_skips_the_ramp() {
    let lab = lab::spawn(LabOptions::default()).unwrap();
    let v = crate::util::run_json_within(
        &[
            &lab.url("/cache/public"),
            "--no-load",
            "--no-save",
            "--json",
            "-n",
            "3",
        ],
        LIMIT,
    );
    assert_eq!(v["kind"], "diagnose");
    assert_eq!(v["skipped"], "--no-load");
    assert!(v["load"].is_null());
    // Public with validators: the conditional GETs come back 304 with no body.
    assert_eq!(v["cache"]["if_none_match"]["status"], 304);
    assert_eq!(v["cache"]["if_none_match"]["ok"], true);
    assert_eq!(v["cache"]["shared_cacheable"], true);
    for id in ["not-shared-cacheable", "no-validators", "no-304"] {
        assert!(!has(&v, id), "{id} fired on /cache/public: {:?}", ids(&v));
    }
    let text = run_within(
        &[
            &lab.url("/cache/public"),
            "--no-load",
            "--no-save",
            "-n",
            "2",
        ],
        LIMIT,
    );
    let text = String::from_utf8_lossy(&text.stdout);
    for needle in [
        "cache audit",
        "If-None-Match",
        "load ramp         skipped",
        "where the time goes",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

#[test]
fn cache_problems_are_found() {
    let lab = lab::spawn(LabOptions::default()).unwrap();
    let v = diagnose(&[&lab.url("/cache/private-cookie"), "--no-load"]);
    assert!(has(&v, "not-shared-cacheable"), "{:?}", ids(&v));
    assert_eq!(v["cache"]["set_cookie"], true);
    let v = diagnose(&[&lab.url("/cache/no-validators"), "--no-load"]);
    assert!(has(&v, "no-validators"), "{:?}", ids(&v));
    let v = diagnose(&[&lab.url("/cdn/miss"), "--no-load"]);
    assert!(has(&v, "cdn-not-caching"), "{:?}", ids(&v));
    assert_eq!(v["probe"]["server_time_label"], "edge → origin + server");
    let v = diagnose(&[&lab.url("/cdn/hit"), "--no-load"]);
    assert!(!has(&v, "cdn-not-caching"), "{:?}", ids(&v));
}

#[test]
fn redirects_and_closed_connections_are_found() {
    let lab = lab::spawn(LabOptions::default()).unwrap();
    let v = diagnose(&[&lab.url("/redirect/3"), "--no-load"]);
    assert_eq!(v["cache"]["redirects"].as_array().unwrap().len(), 3);
    assert!(has(&v, "redirect-chain"), "{:?}", ids(&v));
    let v = diagnose(&[&lab.url("/close"), "--no-load"]);
    assert!(has(&v, "no-keepalive"), "{:?}", ids(&v));
    let v = diagnose(&[&lab.url("/delay/1ms"), "--no-load"]);
    assert!(
        !has(&v, "no-keepalive") && !has(&v, "redirect-chain"),
        "{:?}",
        ids(&v)
    );
}

#[test]
fn a_saturating_server_shows_a_knee_in_the_ramp() {
    let lab = lab::spawn(LabOptions {
        capacity: Some(200.0),
        ..LabOptions::default()
    })
    .unwrap();
    let v = diagnose(&[
        &lab.url("/delay/5ms"),
        "--max-connections",
        "32",
        "--step",
        "500ms",
    ]);
    let ramp = v["load"]["ramp"].as_array().unwrap();
    assert!(ramp.len() >= 4, "{ramp:?}");
    assert!(has(&v, "knee"), "{:?} {ramp:?}", ids(&v));
}

#[test]
fn bad_input_is_a_usage_error() {
    for (args, needle) in [
        (vec!["diagnose", "ftp://x/"], "unknown scheme"),
        (vec!["diagnose", "tcp://127.0.0.1:1"], "http:// or https://"),
        (
            vec!["diagnose", "http://127.0.0.1:1/", "--origin", "nowhere"],
            "--origin",
        ),
        (
            vec!["diagnose", "http://127.0.0.1:1/", "--step", "1ms"],
            "--step",
        ),
        (
            vec!["diagnose", "http://127.0.0.1:1/", "--max-connections", "0"],
            "--max-connections",
        ),
    ] {
        let out = run_within(&args, LIMIT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let out = run_within(
        &["diagnose", "--no-save", &format!("http://{closed}/")],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot connect"));
}

/// Several URLs where one cannot be reached: probe and diagnose still report the
/// others, and `--json` keeps every URL in the order given, the failed one as
/// `{url, error}`; the exit code says something failed.
#[test]
fn a_failed_url_keeps_its_place_in_the_json() {
    let lab = latscope::lab::spawn(latscope::lab::LabOptions::default()).unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let closed = format!("http://{closed}/");
    let ok = lab.url("/");
    for command in ["probe", "diagnose"] {
        let mut args = vec![command, "--json", "--no-save", "-n", "2", &closed, &ok];
        if command == "diagnose" {
            args.push("--no-load");
        }
        let out = run_within(&args, LIMIT);
        assert_eq!(out.status.code(), Some(1), "{command}");
        let v = json_of(&out);
        assert_eq!(v["kind"], command);
        let results = v["results"].as_array().expect("results for several URLs");
        assert_eq!(results.len(), 2, "{command}: {v}");
        assert_eq!(results[0]["url"], closed.as_str());
        assert!(
            results[0]["error"]
                .as_str()
                .unwrap()
                .contains("cannot connect"),
            "{command}: {}",
            results[0]
        );
        assert!(results[1]["error"].is_null(), "{command}: {}", results[1]);
    }
}

/// `--max-time` reached during the first of two URLs: the second keeps its place in
/// `results` as not measured (not a failure: exit 0).
#[test]
fn urls_not_reached_keep_their_place() {
    let lab = latscope::lab::spawn(latscope::lab::LabOptions::default()).unwrap();
    let second = lab.url("/");
    let v = diagnose(&[
        &lab.url("/delay/300ms"),
        &second,
        "--max-time",
        "1s",
        "--no-load",
    ]);
    let results = v["results"].as_array().expect("results for two URLs");
    assert_eq!(results.len(), 2, "{v}");
    assert_eq!(results[0]["probe"]["interrupted"], true);
    assert_eq!(results[1]["url"], second.as_str());
    assert_eq!(results[1]["error"], "not measured: --max-time reached");
}

/// The demo, run as the README's quick start runs it (its arguments, taken from the
/// README, then a store and a report path of the test's own) by an ordinary user
/// (nobody, when the tests run as root): every planted problem is among the findings,
/// the HTML report is written, the text ends with where the run went (`saved as run
/// ID`, issue 37 item 6), and the stored JSON is the diagnose JSON plus `planted`. The
/// wire runs in a namespace of the demo's own (the path root takes too); where even
/// that is refused, the RTT is left out and it says so, and the demo runs once more as
/// root to see the wire's problem found. One run serves both (the demo is ~25 s).
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn the_demo_finds_every_planted_problem() {
    let _lock = crate::util_wire::lock();
    let dir = crate::util::scratch().join(format!("latscope-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let nobody = unsafe { libc::geteuid() } == 0;
    let v = demo(&dir, "nobody", nobody);
    if v["wire_skipped"].is_string() {
        assert!(
            !v["planted"].to_string().contains("handshake-dominates"),
            "{v}"
        );
        if nobody {
            let v = demo(&dir, "root", false);
            assert!(v["wire_skipped"].is_null(), "as root the demo has its wire");
            assert!(v["planted"].to_string().contains("handshake-dominates"));
        }
    } else {
        assert!(v["planted"].to_string().contains("handshake-dominates"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `latscope demo` with the README's quick-start arguments, a store and a report in
/// `dir/NAME…`, as nobody when `nobody`; the stored run, after checking what every demo
/// run must show.
fn demo(dir: &std::path::Path, name: &str, nobody: bool) -> Value {
    let html = dir.join(format!("{name}.html"));
    let db = dir.join(format!("{name}.db"));
    let db = db.to_str().unwrap();
    let mut args = crate::readme::quick_start_args();
    assert_eq!(args, ["demo"], "the README's quick start");
    args.extend(["--db", db, "-o", html.to_str().unwrap()].map(String::from));
    let mut cmd = crate::util::latscope();
    cmd.args(&args).env("HOME", dir).current_dir(dir);
    if nobody {
        crate::util::as_nobody(&mut cmd);
    }
    let (out, _) = crate::util::output_within(cmd, Duration::from_secs(120));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    let (_, id) = text
        .trim_end()
        .rsplit_once("\n  saved as run ")
        .unwrap_or_else(|| panic!("no `saved as run` line at the end: {text}"));
    assert!(text.contains("what to try next"), "{text}");
    let shown = run_within(&["show", id, "--json", "--db", db], LIMIT);
    assert_eq!(shown.status.code(), Some(0), "show {id}");
    let v = json_of(&shown);
    assert_eq!(v["kind"], "diagnose");
    let planted: Vec<&str> = v["planted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(planted.len() >= 5, "{planted:?}");
    assert_eq!(
        v["results"][0]["skipped"], "the demo ramps /cache/private-cookie only",
        "a URL the demo does not ramp says why"
    );
    let found = ids(&v);
    for p in &planted {
        assert!(
            found.iter().any(|f| f == p),
            "planted {p} not found; found {found:?}; {err}"
        );
    }
    assert_eq!(v["missing"], serde_json::json!([]), "{err}");
    assert_eq!(v["unexpected"], serde_json::json!([]), "found {found:?}");
    if v["wire_skipped"].is_string() {
        assert!(err.contains("NOTE"), "a skipped wire is said loudly: {err}");
    }
    let page = std::fs::read_to_string(&html).expect("the demo writes its HTML report");
    assert!(page.contains("<svg"), "no chart in the report");
    v
}

/// `--max-time` bounds a diagnosis: past it, latscope concludes from what it measured.
#[test]
fn max_time_bounds_a_diagnosis() {
    let lab = lab::spawn(LabOptions::default()).unwrap();
    let start = std::time::Instant::now();
    let v = diagnose(&[&lab.url("/delay/300ms"), "--max-time", "2s"]);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(v["probe"]["interrupted"], true);
    // -n 5: at 300 ms a request, 2 s cover about six of the ten requests.
    let fresh = v["probe"]["fresh"]["count"].as_u64().unwrap();
    let reused = v["probe"]["reused"]["count"].as_u64().unwrap_or(0);
    assert!(
        fresh >= 2 && reused < 5,
        "{fresh} fresh, {reused} reused samples"
    );
    assert_eq!(
        v["probe"]["fresh"]["errors"], 0,
        "an interrupted request is not an error"
    );
    assert_eq!(v["skipped"], "--max-time reached");
}
