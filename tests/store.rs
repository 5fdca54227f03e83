//! The run store through the binary: runs, show, export, import, concurrency and
//! damaged or newer databases.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use latscope::store::{Environment, RunRecord, StoredHistogram};
use serde_json::json;

use crate::util::latscope;

/// A fresh temp directory for one test.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    crate::util::temp_dir(&format!("store-{name}"))
}

/// A run record as an export holds it (a real histogram inside: import decodes it).
pub(crate) fn record(id: &str, host: &str) -> RunRecord {
    RunRecord {
        id: id.into(),
        kind: "load".into(),
        label: Some(format!("label-{id}")),
        target: "http://127.0.0.1:9/x".into(),
        started_at_ms: 1_795_000_000_000,
        duration_s: 2.0,
        version: "0.1.0".into(),
        config: json!({"connections": 4}),
        env: Environment {
            hostname: host.into(),
            cores: 2,
            ..Default::default()
        },
        summary: json!({"kind": "load", "rps": 123.0, "latency_ms": {"p50": 1.5, "p99": 9.0}}),
        timeline: json!([]),
        findings: json!([]),
        text: format!("run {id}: 123 req/s\n"),
        histograms: vec![StoredHistogram {
            name: "latency".into(),
            second: None,
            v2: crate::util_hostile::v2_histogram(&[1_500_000, 9_000_000]),
        }],
    }
}

/// Writes `r` as an export file in `dir`.
pub(crate) fn write_export(dir: &Path, r: &RunRecord) -> PathBuf {
    let path = dir.join(format!("{}.json", r.id));
    let doc = json!({"format": "latscope-run", "format_version": 1, "run": r});
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

/// Runs latscope, asserts exit 0, returns stdout.
pub(crate) fn run_ok(args: &[&str]) -> String {
    let out = crate::util::run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A run exported on one host imports into another store and shows, lists and
/// exports again unchanged (story 3: runs from different hosts side by side).
#[test]
fn export_import_show_roundtrip() {
    let dir = temp_dir("roundtrip");
    let db = dir.join("a.db");
    let db = db.to_str().unwrap();
    let original = record("aa11bb22cc", "pod-7");
    let file = write_export(&dir, &original);
    let id = run_ok(&["import", file.to_str().unwrap(), "--db", db]);
    assert_eq!(id.trim(), "aa11bb22cc");
    let listed = run_ok(&["runs", "--db", db]);
    assert!(
        listed.contains("aa11bb22cc")
            && listed.contains("label-aa11bb22cc")
            && listed.contains("rps=123"),
        "{listed}"
    );
    assert_eq!(
        run_ok(&["show", "aa11", "--db", db]),
        "run aa11bb22cc: 123 req/s\n"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&run_ok(&["show", "last", "--json", "--db", db])).unwrap();
    assert_eq!(summary["rps"], 123.0);
    let again = dir.join("again.json");
    run_ok(&[
        "export",
        "label-aa11bb22cc",
        "-o",
        again.to_str().unwrap(),
        "--db",
        db,
    ]);
    let back: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&again).unwrap()).unwrap();
    assert_eq!(back["run"]["env"]["hostname"], "pod-7");
    assert_eq!(
        back["run"]["histograms"][0],
        serde_json::to_value(&original.histograms[0]).unwrap()
    );
    let db2 = dir.join("b.db");
    run_ok(&[
        "import",
        again.to_str().unwrap(),
        "--db",
        db2.to_str().unwrap(),
    ]);
    // Importing the same run twice is refused, not duplicated.
    let dup = latscope()
        .args([
            "import",
            again.to_str().unwrap(),
            "--db",
            db2.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(dup.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&dup.stderr).contains("already in the store"));
}

/// Naming a run that does not exist, or a file that is not an export, is a usage
/// error with a clear message.
#[test]
fn bad_run_names_and_files() {
    let dir = temp_dir("bad");
    let db = dir.join("a.db");
    let out = latscope()
        .args(["show", "nope", "--db", db.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run matches 'nope'"));
    let junk = dir.join("junk.json");
    std::fs::write(&junk, "{\"hello\": 1}").unwrap();
    let out = latscope()
        .args([
            "import",
            junk.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a latscope export"));
}

/// Two processes writing the same store at once both succeed.
#[test]
fn two_processes_write_one_store() {
    let dir = temp_dir("concurrent");
    let db = dir.join("shared.db");
    let files: Vec<Vec<PathBuf>> = (0..2)
        .map(|p| {
            (0..8)
                .map(|i| write_export(&dir, &record(&format!("{p}{i:09}"), "h")))
                .collect()
        })
        .collect();
    let children: Vec<_> = files
        .iter()
        .map(|batch| {
            let mut script = String::new();
            for f in batch {
                script.push_str(&format!(
                    "{} import {} --db {} >/dev/null || exit 1\n",
                    env!("CARGO_BIN_EXE_latscope"),
                    f.display(),
                    db.display()
                ));
            }
            std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let listed: serde_json::Value =
        serde_json::from_str(&run_ok(&["runs", "--json", "--db", db.to_str().unwrap()])).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 16);
}

/// A store written by a newer latscope is refused with a clear error, not a crash.
#[test]
fn newer_schema_store_is_refused() {
    let dir = temp_dir("newer");
    let db = dir.join("new.db");
    run_ok(&["runs", "--db", db.to_str().unwrap()]);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.pragma_update(None, "user_version", 42).unwrap();
    drop(conn);
    let out = latscope()
        .args(["runs", "--db", db.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("newer latscope"));
}

/// A run killed mid-way (SIGKILL, no chance to clean up) leaves the store readable and
/// the runs saved before it intact.
#[test]
fn sigkill_mid_run_leaves_the_store_intact() {
    use std::time::{Duration, Instant};
    let dir = temp_dir("sigkill");
    let db = dir.join("runs.db");
    let db = db.to_str().unwrap();
    let lab = latscope::lab::spawn(latscope::lab::LabOptions::default()).unwrap();
    let url = lab.url("/delay/1ms");
    run_ok(&["probe", &url, "-n", "2", "--db", db, "--label", "before"]);
    let mut child = latscope()
        .args([
            "load", &url, "-c", "4", "-d", "30s", "--db", db, "--label", "killed",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let seen = lab.stats().total;
    while lab.stats().total < seen + 200 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the load never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let list = run_ok(&["runs", "--db", db]);
    assert!(list.contains("before"), "{list}");
    assert!(!list.contains("killed"), "{list}");
    let shown = run_ok(&["show", "before", "--db", db]);
    assert!(shown.contains("/delay/1ms"), "{shown}");
    // The store still takes new runs.
    run_ok(&["probe", &url, "-n", "1", "--db", db, "--label", "after"]);
    assert!(run_ok(&["runs", "--db", db]).contains("after"));
}

/// Runs latscope with its stdout a pipe nobody reads (closed before it starts), as
/// `latscope … | head -1` after head exits; returns (exit code, stderr). Bounded.
fn with_closed_stdout(args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let err_path = dir.join("stderr.txt");
    let mut child = latscope()
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + crate::util::LIMIT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} hung with a closed stdout");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    (status.code(), std::fs::read_to_string(&err_path).unwrap())
}

/// A closed stdout (EPIPE) ends every printing command quietly with exit 0, and a
/// measuring command still saves its run.
#[test]
fn closed_stdout_is_not_an_error() {
    let dir = temp_dir("epipe");
    let db = dir.join("a.db");
    let db = db.to_str().unwrap();
    let file = write_export(&dir, &record("ee11bb22cc", "pod-7"));
    run_ok(&["import", file.to_str().unwrap(), "--db", db]);
    let lab = crate::util_lab::healthy();
    let url = lab.url("/");
    for args in [
        vec!["show", "ee11", "--json"],
        vec!["show", "ee11"],
        vec![
            "load", &url, "-n", "5", "-c", "1", "--json", "--label", "piped",
        ],
        vec!["load", &url, "-n", "5", "-c", "1", "--label", "piped-text"],
        vec!["runs"],
        vec!["runs", "--json"],
        vec!["export", "last"],
        vec!["compare", "piped", "piped-text"],
    ] {
        let mut a = args.clone();
        a.extend(["--db", db]);
        let (code, err) = with_closed_stdout(&a, &dir);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(!err.contains("rror"), "{args:?}: {err}");
    }
    let listed = run_ok(&["runs", "--db", db]);
    assert!(
        listed.contains("piped") && listed.contains("piped-text"),
        "{listed}"
    );
}
