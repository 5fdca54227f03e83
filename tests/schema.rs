//! The typed JSON contract through the binary (issue 27 item 1, issue 28 items 6, 7
//! and 9): today's runs write documents their types read back whole; runs stored by
//! an older latscope (tests/data/golden/old) still show, compare and report; merge
//! refuses what is not a set of shards of one plan; import refuses fields out of
//! their schema or range, naming them, and streams a large export.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use latscope::schema::{self, Summary};
use latscope::store::{ExportFile, Store};
use serde_json::{json, Value};

use crate::util::{run, run_json};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/golden");

fn old(name: &str) -> PathBuf {
    Path::new(GOLDEN).join("old").join(format!("{name}.json"))
}

fn dir(name: &str) -> PathBuf {
    crate::util::temp_dir(&format!("schema-{name}"))
}

/// Runs latscope, asserts exit 0, returns stdout.
fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs latscope, asserts exit 2 (a usage error) naming `says`.
fn refused(args: &[&str], says: &str) {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: expected '{says}' in: {err}");
}

/// The document of a fresh run reads into its type and writes back the same JSON,
/// with this latscope's `schema_version` (and a load run's `http_version`).
pub(crate) fn reads_back(kind: &str, doc: &Value) -> Summary {
    let typed = Summary::parse(kind, doc).unwrap_or_else(|e| panic!("{kind}: {e}"));
    let norm = |v: &Value| -> Value { serde_json::from_str(&v.to_string()).unwrap() };
    assert_eq!(
        norm(&schema::to_value(&typed)),
        norm(doc),
        "{kind}: not the same"
    );
    assert_eq!(doc["schema_version"], schema::SCHEMA_VERSION, "{kind}");
    let mut typed = typed;
    schema::validate::summary(&mut typed).unwrap();
    typed
}

/// Today's probe, load (closed, open, a scenario of two endpoints) and disk runs
/// against real sockets and a real file: each document is exactly what its type
/// writes, carries `schema_version`, and a load says which HTTP version it spoke.
#[test]
fn todays_documents_are_their_types() {
    let lab = crate::util_lab::healthy();
    let d = dir("today");
    let probe = run_json(&["probe", &lab.url("/"), "-n", "3", "--json", "--no-save"]);
    let typed = reads_back("probe", &probe);
    assert_eq!(typed.probes().len(), 1);
    let closed = run_json(&[
        "load",
        &lab.url("/"),
        "-c",
        "2",
        "-n",
        "200",
        "--json",
        "--no-save",
    ]);
    let Summary::Load(l) = reads_back("load", &closed) else {
        panic!()
    };
    assert_eq!(l.http_version.as_deref(), Some("HTTP/1.1"));
    assert_eq!(l.requests, 200);
    assert_eq!(closed["http_version"], "HTTP/1.1");
    let open = run_json(&[
        "load",
        &lab.url("/"),
        "--rate",
        "100",
        "-d",
        "1s",
        "--json",
        "--no-save",
    ]);
    let Summary::Load(l) = reads_back("load", &open) else {
        panic!()
    };
    assert!(l.service_time_ms.is_some() && l.model == "open");
    let scenario = d.join("two.toml");
    std::fs::write(
        &scenario,
        format!(
            "base_url = \"{}\"\n[load]\nconnections = 2\nrequests = 100\n\
             [[request]]\nname = \"a\"\npath = \"/\"\n[[request]]\nname = \"b\"\npath = \"/status/503\"\n",
            lab.url("")
        ),
    )
    .unwrap();
    let two = run_json(&[
        "load",
        "-f",
        scenario.to_str().unwrap(),
        "--json",
        "--no-save",
    ]);
    let Summary::Load(l) = reads_back("load", &two) else {
        panic!()
    };
    assert_eq!(l.endpoints.len(), 2);
    assert!(l.statuses().any(|(s, _)| s == 503));
    let disk = run_json(&[
        "disk",
        d.to_str().unwrap(),
        "--size",
        "8MB",
        "-d",
        "1s",
        "--json",
        "--no-save",
    ]);
    let typed = reads_back("disk", &disk);
    assert!(typed.disk().unwrap().read.ios > 0);
}

/// Saves the old exports' runs into a store as they were stored (their documents
/// untouched, without `schema_version`), returning the store's path.
fn old_store(name: &str, runs: &[&str]) -> PathBuf {
    let db = dir(name).join("runs.db");
    let mut store = Store::open(&db).unwrap();
    for r in runs {
        let file: ExportFile =
            serde_json::from_str(&std::fs::read_to_string(old(r)).unwrap()).unwrap();
        assert!(file.run.summary.get("schema_version").is_none(), "{r}");
        store.save(&file.run).unwrap();
    }
    db
}

/// Runs stored by a latscope before documents carried `schema_version` (and a load
/// and a probe as the first versions stored them) still list, show, compare and
/// report.
#[test]
fn old_stored_runs_show_compare_and_report() {
    let db = old_store(
        "old",
        &[
            "load",
            "load_minimal",
            "probe",
            "probe_minimal",
            "probe_several",
            "disk",
            "diagnose",
            "diagnose_several",
            "capacity",
            "merge",
        ],
    );
    let db = db.to_str().unwrap();
    let listed = ok(&["runs", "--db", db]);
    for id in [
        "8850185170",
        "01d0000001",
        "d1946624bc",
        "5033161d35",
        "ea5f0464fd",
    ] {
        assert!(listed.contains(id), "{id} not listed: {listed}");
    }
    assert!(listed.contains("capacity=400"), "{listed}");
    for id in [
        "8850185170",
        "01d0000001",
        "d1946624bc",
        "01d0000002",
        "bfe7203d16",
        "5033161d35",
        "e3bc154c52",
        "7c01062ed4",
        "ea5f0464fd",
        "5dfeb9f23e",
    ] {
        assert!(!ok(&["show", id, "--db", db]).is_empty(), "{id}");
        let shown: Value = serde_json::from_str(&ok(&["show", id, "--db", db, "--json"])).unwrap();
        assert!(shown.is_object(), "{id}");
    }
    for (a, b) in [
        ("8850185170", "01d0000001"),
        ("d1946624bc", "01d0000002"),
        ("e3bc154c52", "7c01062ed4"),
        ("ea5f0464fd", "5dfeb9f23e"),
    ] {
        let text = ok(&["compare", a, b, "--db", db]);
        assert!(!text.trim().is_empty(), "compare {a} {b}");
    }
    let compared = ok(&["compare", "8850185170", "01d0000001", "--all", "--db", db]);
    assert!(compared.contains("p99"), "{compared}");
    let html = dir("old-report").join("r.html");
    let html_s = html.to_str().unwrap();
    for id in [
        "8850185170",
        "01d0000001",
        "01d0000002",
        "5033161d35",
        "e3bc154c52",
        "ea5f0464fd",
    ] {
        ok(&["report", id, "-o", html_s, "--db", db]);
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(page.contains("<svg") || page.contains("<table"), "{id}");
    }
}

/// Writes `run` (an old export, changed by `edit`) to `dir/name.json`.
fn edited(dir: &Path, from: &str, name: &str, edit: impl Fn(&mut Value)) -> String {
    let mut file: Value =
        serde_json::from_str(&std::fs::read_to_string(old(from)).unwrap()).unwrap();
    edit(&mut file["run"]);
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, file.to_string()).unwrap();
    path.to_str().unwrap().to_string()
}

/// Issue 28 item 6: merge refuses, exit 2 naming the mismatch, a run that is not a
/// shard, a shard whose index is above its count, shards of different plans, and a
/// shard of a file whose counts cannot be (ok above requests); the two shards of one
/// plan merge, their availability at most 100 %.
#[test]
fn merge_refuses_what_is_not_shards_of_one_plan() {
    let d = dir("merge");
    let s1 = old("shard1");
    let s1 = s1.to_str().unwrap();
    let s2 = old("shard2");
    let s2 = s2.to_str().unwrap();
    let merged = run_json(&["merge", s1, s2, "--json", "--no-save"]);
    let doc = reads_back("load", &merged);
    let Summary::Load(l) = doc else { panic!() };
    assert_eq!(l.merged.as_ref().map(|m| m.shards), Some(2));
    assert!(l.ok <= l.requests);
    let whole = edited(&d, "shard2", "whole", |r| {
        r["config"]["shard"] = Value::Null
    });
    refused(&["merge", s1, &whole, "--no-save"], "not a shard");
    let above = edited(&d, "shard2", "above", |r| {
        r["config"]["shard"] = json!({"index": 5, "count": 2})
    });
    refused(&["merge", s1, &above, "--no-save"], "shard");
    refused(&["merge", s1, &above, "--no-save"], "5/2");
    let other = edited(&d, "shard2", "other", |r| {
        r["config"]["thresholds"] = json!(["p99<1s"])
    });
    refused(&["merge", s1, &other, "--no-save"], "differ in thresholds");
    let split = edited(&d, "shard2", "split", |r| {
        r["config"]["shard"] = json!({"index": 2, "count": 3})
    });
    refused(&["merge", s1, &split, "--no-save"], "different splits");
    let twice = edited(&d, "shard1", "twice", |r| r["id"] = json!("0000000001"));
    refused(&["merge", s1, &twice, "--no-save"], "given twice");
    let double = edited(&d, "shard2", "double", |r| {
        let n = r["summary"]["requests"].as_u64().unwrap();
        r["summary"]["ok"] = json!(2 * n);
    });
    refused(&["merge", s1, &double, "--no-save"], "summary.ok");
    let probe = old("probe");
    refused(
        &["merge", s1, probe.to_str().unwrap(), "--no-save"],
        "not a load run",
    );
}

/// Issue 28 item 7: import checks every field against its type and range and
/// refuses (exit 2, naming the field) a negative count, a word for a number, 10^300,
/// a negative status count, more ok than requests, a bad timeline row; the old
/// exports (every kind) import.
#[test]
fn import_refuses_fields_out_of_schema_or_range() {
    let d = dir("import");
    let db = d.join("runs.db");
    let db = db.to_str().unwrap();
    for (name, edit, says) in [
        ("neg", json!(-5), "run.summary.requests"),
        ("word", json!("twenty"), "run.summary.requests"),
        ("huge", json!(1e300), "run.summary.requests"),
    ] {
        let f = edited(&d, "load", name, |r| {
            r["summary"]["requests"] = edit.clone()
        });
        refused(&["import", &f, "--db", db], says);
    }
    let f = edited(&d, "load", "status", |r| {
        r["summary"]["statuses"]["200"] = json!(-7)
    });
    refused(&["import", &f, "--db", db], "run.summary.statuses.200");
    let f = edited(&d, "load", "rps", |r| r["summary"]["rps"] = json!(1e300));
    refused(&["import", &f, "--db", db], "run.summary.rps");
    let f = edited(&d, "load", "ok", |r| {
        let n = r["summary"]["requests"].as_u64().unwrap();
        r["summary"]["ok"] = json!(2 * n);
    });
    refused(&["import", &f, "--db", db], "run.summary.ok");
    let f = edited(&d, "load", "row", |r| {
        r["timeline"][0]["requests"] = json!(-1)
    });
    refused(&["import", &f, "--db", db], "run.timeline[0].requests");
    let f = edited(&d, "disk", "disk", |r| {
        r["summary"]["read"]["iops"] = json!(-3.5)
    });
    refused(&["import", &f, "--db", db], "run.summary.read.iops");
    let f = edited(&d, "probe", "probe", |r| {
        r["summary"]["samples"][0]["phases_ms"]["total"] = json!("fast")
    });
    refused(&["import", &f, "--db", db], "samples[0].phases_ms.total");
    assert_eq!(
        ok(&["runs", "--db", db]).lines().count(),
        1,
        "nothing stored"
    );
    for name in [
        "load",
        "load_minimal",
        "probe",
        "probe_several",
        "disk",
        "diagnose",
        "capacity",
        "merge",
    ] {
        ok(&["import", old(name).to_str().unwrap(), "--db", db]);
    }
    let shown: Value =
        serde_json::from_str(&ok(&["show", "8850185170", "--json", "--db", db])).unwrap();
    assert_eq!(shown["kind"], "load");
}

/// Exit code and peak resident memory (KB) of `latscope ARGS…`, as GNU time's
/// wait4 reports it for its child (measured from this process, the figure would
/// include this test process's own memory: a spawned child's peak starts as its
/// parent's until it execs).
fn peak_kb(args: &[&str], dir: &Path) -> (Option<i32>, u64) {
    let report = dir.join("time.txt");
    let status = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&report)
        .arg(env!("CARGO_BIN_EXE_latscope"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("GNU time (Debian's package 'time'; scripts/test.sh installs it)");
    let text = std::fs::read_to_string(&report).unwrap();
    let kb = text
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .next_back()
        .unwrap_or_else(|| panic!("no figure from time: {text}"));
    (status.code(), kb)
}

/// Issue 28 item 9: importing a large export (a long load run: ~40,000 timeline
/// rows, twice, and as many per-second histograms) takes at most twice the file's
/// size in memory: it is streamed into typed documents, never read whole nor held
/// as a JSON tree.
#[test]
fn a_large_export_imports_within_twice_its_size() {
    let d = dir("large");
    let mut file: Value =
        serde_json::from_str(&std::fs::read_to_string(old("load")).unwrap()).unwrap();
    let run = &mut file["run"];
    let row = run["timeline"][0].clone();
    let hist = run["histograms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| !h["second"].is_null())
        .unwrap()
        .clone();
    let n = 40_000;
    let rows: Vec<Value> = (0..n)
        .map(|t| {
            let mut r = row.clone();
            r["t"] = json!(t);
            r
        })
        .collect();
    run["summary"]["timeline"] = json!(rows);
    run["timeline"] = json!(rows);
    drop(rows);
    let hists = run["histograms"].as_array_mut().unwrap();
    hists.retain(|h| h["second"].is_null());
    for t in 0..n {
        let mut h = hist.clone();
        h["second"] = json!(t);
        hists.push(h);
    }
    run["id"] = json!("b190000001");
    let path = d.join("large.json");
    serde_json::to_writer(
        std::io::BufWriter::new(std::fs::File::create(&path).unwrap()),
        &file,
    )
    .unwrap();
    drop(file);
    let size_kb = std::fs::metadata(&path).unwrap().len() / 1024;
    assert!(size_kb > 40 * 1024, "{size_kb} KB");
    let db = d.join("runs.db");
    let (code, peak) = peak_kb(
        &[
            "import",
            path.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ],
        &d,
    );
    assert_eq!(code, Some(0));
    assert!(
        peak <= 2 * size_kb,
        "import of a {size_kb} KB export peaked at {peak} KB"
    );
    let shown: Value = serde_json::from_str(&ok(&[
        "show",
        "b190000001",
        "--json",
        "--db",
        db.to_str().unwrap(),
    ]))
    .unwrap();
    assert_eq!(shown["timeline"].as_array().unwrap().len(), n);
}
