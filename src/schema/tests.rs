//! Golden files of every document kind (tests/data/golden): today's documents read
//! into their types and write back the same JSON (no field lost, renamed or
//! retyped), runs stored before `schema_version`/`http_version` (and a load and a
//! probe as the first versions stored them) still read, and the range checks refuse
//! what no run measures.

use serde_json::{json, Value};

use super::*;

macro_rules! golden {
    ($name:literal) => {
        include_str!(concat!("../../tests/data/golden/", $name))
    };
}

/// Today's documents: (kind, file name, text).
const TODAY: &[(&str, &str, &str)] = &[
    ("probe", "probe.json", golden!("probe.json")),
    ("probe", "probe_several.json", golden!("probe_several.json")),
    ("load", "load.json", golden!("load.json")),
    ("load", "capacity.json", golden!("capacity.json")),
    ("load", "merge.json", golden!("merge.json")),
    ("disk", "disk.json", golden!("disk.json")),
    ("diagnose", "diagnose.json", golden!("diagnose.json")),
    (
        "diagnose",
        "diagnose_several.json",
        golden!("diagnose_several.json"),
    ),
    ("page", "page.json", golden!("page.json")),
];

/// Exports of runs stored before documents carried a version.
const OLD: &[(&str, &str)] = &[
    ("probe", golden!("old/probe.json")),
    ("probe", golden!("old/probe_minimal.json")),
    ("probe", golden!("old/probe_several.json")),
    ("load", golden!("old/load.json")),
    ("load", golden!("old/load_minimal.json")),
    ("load", golden!("old/capacity.json")),
    ("load", golden!("old/merge.json")),
    ("load", golden!("old/shard1.json")),
    ("disk", golden!("old/disk.json")),
    ("diagnose", golden!("old/diagnose.json")),
    ("diagnose", golden!("old/diagnose_several.json")),
];

/// Numbers as f64 (a count written `5.0` by an older latscope is the same count).
fn normal(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(a) => Value::Array(a.iter().map(normal).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), normal(v))).collect()),
        other => other.clone(),
    }
}

/// Every field of `small` is in `big` with the same value; returns the first path
/// that is not.
fn missing(big: &Value, small: &Value, path: &str) -> Option<String> {
    match (big, small) {
        (Value::Object(b), Value::Object(s)) => s.iter().find_map(|(k, v)| match b.get(k) {
            Some(bv) => missing(bv, v, &format!("{path}.{k}")),
            None => Some(format!("{path}.{k} (absent)")),
        }),
        (Value::Array(b), Value::Array(s)) if b.len() == s.len() => b
            .iter()
            .zip(s)
            .enumerate()
            .find_map(|(i, (bv, sv))| missing(bv, sv, &format!("{path}[{i}]"))),
        (b, s) if normal(b) == normal(s) => None,
        (b, s) => Some(format!("{path}: {b} != {s}")),
    }
}

#[test]
fn todays_documents_read_and_write_back_unchanged() {
    for (kind, name, text) in TODAY {
        let v: Value = serde_json::from_str(text).unwrap();
        let mut doc = Summary::parse(kind, &v).unwrap_or_else(|e| panic!("{name}: {e}"));
        let back = to_value(&doc);
        assert_eq!(missing(&back, &v, ""), None, "{name}: a field was lost");
        assert_eq!(missing(&v, &back, ""), None, "{name}: a field was added");
        validate::summary(&mut doc).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            !doc.headline().as_object().unwrap().is_empty(),
            "{name}: no headline"
        );
    }
}

#[test]
fn todays_documents_carry_their_version() {
    for (kind, name, text) in TODAY {
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(v["schema_version"], SCHEMA_VERSION, "{name}");
        if *kind == "load" {
            assert_eq!(v["http_version"], "HTTP/1.1", "{name}");
        }
    }
}

#[test]
fn runs_stored_before_versions_still_read() {
    for (kind, text) in OLD {
        let file: Value = serde_json::from_str(text).unwrap();
        let run = &file["run"];
        let id = run["id"].as_str().unwrap();
        assert_eq!(run["kind"], *kind);
        let summary = &run["summary"];
        assert!(summary.get("schema_version").is_none(), "{id}");
        let mut doc = Summary::parse(kind, summary).unwrap_or_else(|e| panic!("{id}: {e}"));
        // Nothing the old document said is lost or changed.
        assert_eq!(missing(&to_value(&doc), summary, ""), None, "{id}");
        validate::summary(&mut doc).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert!(!doc.headline().as_object().unwrap().is_empty(), "{id}");
        if *kind == "load" {
            let plan: PlanDoc = from_value(&run["config"]).unwrap_or_else(|e| panic!("{id}: {e}"));
            validate::plan(&plan).unwrap();
            assert!(!plan.target.is_empty(), "{id}");
            let rows: Vec<TimelineRow> = from_value(&run["timeline"]).unwrap();
            assert!(!rows.is_empty(), "{id}");
        }
        let findings: Vec<crate::diagnose::Finding> = from_value(&run["findings"]).unwrap();
        assert_eq!(findings.len(), run["findings"].as_array().unwrap().len());
    }
}

#[test]
fn the_minimal_old_load_reads_with_defaults() {
    let file: Value = serde_json::from_str(golden!("old/load_minimal.json")).unwrap();
    let doc: LoadDoc = from_value(&file["run"]["summary"]).unwrap();
    assert_eq!(doc.schema_version, 0);
    assert_eq!(doc.http_version, None);
    assert!(doc.requests > 0 && doc.tls_ms.is_none() && doc.statuses.is_empty());
    assert!(doc
        .timeline
        .iter()
        .all(|r| r.started == 0 && r.cpu_pct.is_none()));
}

/// A document's number out of its range is refused naming the field.
fn refused(kind: &str, v: &Value) -> String {
    match Summary::parse(kind, v) {
        Err(e) => e.to_string(),
        Ok(mut doc) => match validate::summary(&mut doc) {
            Err(e) => e.to_string(),
            Ok(()) => panic!("accepted: {v}"),
        },
    }
}

#[test]
fn load_numbers_out_of_range_are_refused_by_name() {
    let base: Value = serde_json::from_str(golden!("load.json")).unwrap();
    let with = |path: &[&str], x: Value| {
        let mut v = base.clone();
        let mut at = &mut v;
        for p in &path[..path.len() - 1] {
            at = match p.parse::<usize>() {
                Ok(i) => &mut at[i],
                Err(_) => &mut at[*p],
            };
        }
        at[path[path.len() - 1]] = x;
        v
    };
    for (path, x, says) in [
        (&["requests"][..], json!(-5), "requests"),
        (&["requests"][..], json!("twenty"), "requests"),
        (&["requests"][..], json!(1e300), "requests"),
        (&["rps"][..], json!(1e300), "rps"),
        (&["rps"][..], json!(-1.5), "rps"),
        (&["statuses", "200"][..], json!(-3), "statuses"),
        (&["ok"][..], json!(u64::MAX / 2), "ok"),
        (
            &["timeline", "0", "ok"][..],
            json!(1_000_000_000u64),
            "timeline[0].ok",
        ),
        (
            &["endpoints", "0", "requests"][..],
            json!(-1),
            "endpoints[0].requests",
        ),
        (&["latency_ms", "p99"][..], json!("slow"), "latency_ms.p99"),
        (&["cache", "hit_ratio"][..], json!(2.0), "cache.hit_ratio"),
    ] {
        let err = refused("load", &with(path, x.clone()));
        assert!(err.contains(says), "{path:?} = {x}: {err}");
    }
    let mut v = base.clone();
    v["statuses"]["abc"] = json!(1);
    assert!(refused("load", &v).contains("statuses"));
}

/// A page run's document: its headline is the first visits' median milestones, its
/// findings read, a visit's negative time is refused by its path, and a token in a
/// request's URL is redacted from the stored copy.
#[test]
fn page_documents_read_check_and_redact() {
    let v: Value = serde_json::from_str(golden!("page.json")).unwrap();
    let doc = Summary::parse("page", &v).unwrap();
    let h = doc.headline();
    assert_eq!(h["lcp_ms"], v["first"]["lcp_ms"], "{h}");
    assert_eq!(h["requests"], v["first"]["requests"], "{h}");
    assert_eq!(doc.page().unwrap().visits.len(), 2);
    let mut bad = v.clone();
    bad["visits"][1]["requests"][0]["end_ms"] = json!(1e300);
    assert!(refused("page", &bad).contains("visits[1]"));
    let mut secret = v.clone();
    secret["visits"][0]["requests"][1]["url"] = json!("http://127.0.0.1:18777/a.js?token=s3cr3t");
    let mut doc = Summary::parse("page", &secret).unwrap();
    redact::summary(&mut doc, &[]);
    assert!(!to_value(&doc).to_string().contains("s3cr3t"));
}

#[test]
fn probe_and_disk_numbers_out_of_range_are_refused_by_name() {
    let mut p: Value = serde_json::from_str(golden!("probe.json")).unwrap();
    p["samples"][2]["phases_ms"]["ttfb"] = json!(-4.0);
    assert!(refused("probe", &p).contains("samples[2].phases_ms.ttfb"));
    let mut d: Value = serde_json::from_str(golden!("disk.json")).unwrap();
    d["read"]["iops"] = json!(1e300);
    assert!(refused("disk", &d).contains("read.iops"));
    let mut d: Value = serde_json::from_str(golden!("disk.json")).unwrap();
    d["read"]["ios"] = json!("many");
    assert!(refused("disk", &d).contains("read.ios"));
}
