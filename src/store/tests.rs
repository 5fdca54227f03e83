//! Unit tests of the run store on temporary databases.

use super::*;
use serde_json::json;

/// A database path in a directory of its own, removed with everything in it when
/// the test ends (passed or failed): the unit tests leave nothing in /tmp.
struct TempDb(PathBuf);

impl std::ops::Deref for TempDb {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<std::path::Path> for TempDb {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn temp_db(name: &str) -> TempDb {
    let dir = std::env::temp_dir().join(format!(
        "latscope-store-{}-{}-{}",
        name,
        std::process::id(),
        new_id()
    ));
    TempDb(dir.join("runs.db"))
}

fn run(kind: &str, label: Option<&str>, at: i64) -> RunRecord {
    RunRecord {
        id: String::new(),
        kind: kind.into(),
        label: label.map(Into::into),
        target: "http://127.0.0.1:1/x".into(),
        started_at_ms: at,
        duration_s: 1.5,
        version: "0.1.0".into(),
        config: json!({"connections": 2}),
        env: Environment::capture(),
        summary: json!({"kind": kind, "rps": 100.0, "latency_ms": {"p50": 1.0, "p99": 2.0}}),
        timeline: json!([{"t": 0, "requests": 5}]),
        findings: json!([]),
        text: "printed text\n".into(),
        histograms: vec![StoredHistogram {
            name: "latency".into(),
            second: None,
            v2: vec![1, 2, 255],
        }],
    }
}

/// A saved run comes back whole, and is found by id, prefix, label and `last`.
#[test]
fn save_load_resolve() {
    let path = temp_db("roundtrip");
    let mut store = Store::open(&path).unwrap();
    let a = store.save(&run("load", Some("before"), 1000)).unwrap();
    let b = store.save(&run("probe", Some("after"), 2000)).unwrap();
    let loaded = store.load(&a).unwrap();
    let mut expect = run("load", Some("before"), 1000);
    expect.id = a.clone();
    assert_eq!(loaded, expect);
    assert_eq!(store.resolve("last").unwrap(), b);
    assert_eq!(store.resolve("last~1").unwrap(), a);
    assert!(matches!(
        store.resolve("last~2"),
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(store.resolve("before").unwrap(), a);
    assert_eq!(store.resolve(&a[..6]).unwrap(), a);
    assert!(matches!(store.resolve("zzz"), Err(StoreError::NotFound(_))));
    let listed = store.list(&ListFilter::default()).unwrap();
    assert_eq!(
        listed.iter().map(|r| r.id.clone()).collect::<Vec<_>>(),
        vec![b.clone(), a.clone()]
    );
    assert_eq!(listed[1].headline["rps"], 100.0);
    let only_load = store
        .list(&ListFilter {
            kind: Some("load".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(only_load.len(), 1);
    let last1 = store
        .list(&ListFilter {
            last: Some(1),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(last1[0].id, b);
    let by_target = store
        .list(&ListFilter {
            target: Some("127.0.0.1:1".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(by_target.len(), 2);
}

/// An id prefix shared by two runs is refused as ambiguous.
#[test]
fn ambiguous_prefix() {
    let path = temp_db("ambiguous");
    let mut store = Store::open(&path).unwrap();
    let mut r1 = run("disk", None, 1);
    r1.id = "abc001".into();
    let mut r2 = run("disk", None, 2);
    r2.id = "abc002".into();
    store.save(&r1).unwrap();
    store.save(&r2).unwrap();
    assert!(matches!(
        store.resolve("abc"),
        Err(StoreError::Ambiguous(..))
    ));
    assert!(matches!(store.save(&r1), Err(StoreError::Duplicate(_))));
}

/// A database from a newer schema gets a clear error, not a crash.
#[test]
fn newer_schema_is_refused() {
    let path = temp_db("newer");
    drop(Store::open(&path).unwrap());
    let conn = Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let err = Store::open(&path).err().expect("refused");
    assert!(
        matches!(err, StoreError::NewerSchema { found: 99, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("newer latscope"));
}

/// Two writers on one database (two connections, as two processes would have) both
/// succeed.
#[test]
fn concurrent_writers() {
    let path = temp_db("concurrent");
    drop(Store::open(&path).unwrap());
    let handles: Vec<_> = (0..2)
        .map(|t| {
            let path = path.to_path_buf();
            std::thread::spawn(move || {
                let mut store = Store::open(&path).unwrap();
                for i in 0..20 {
                    store.save(&run("load", None, t * 100 + i)).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.list(&ListFilter::default()).unwrap().len(), 40);
}

/// Export format: a record survives JSON (histogram bytes as hex).
#[test]
fn record_json_roundtrip() {
    let mut r = run("load", Some("x"), 5);
    r.id = "0123456789".into();
    let text = serde_json::to_string(&r).unwrap();
    assert!(text.contains("\"v2\":\"0102ff\""));
    let back: RunRecord = serde_json::from_str(&text).unwrap();
    assert_eq!(back, r);
}

/// A probe's headline shows the kernel's min RTT (distance), never its smoothed RTT
/// (delayed-ACK noise on loopback); without TCP_INFO, the connect p50, named so.
#[test]
fn probe_headline_uses_min_rtt_or_connect() {
    let probe = json!({"kind": "probe",
        "fresh": {"phases_ms": {"ttfb": {"p50": 1.5}, "connect": {"p50": 0.12}}},
        "tcp": {"rtt_ms": 21.7, "min_rtt_ms": 0.031}});
    let h = headline("probe", &probe);
    assert_eq!(h["min_rtt_ms"], 0.031);
    assert!(h.get("rtt_ms").is_none(), "{h}");
    let diagnose = json!({"kind": "diagnose", "probe":
        {"fresh": {"phases_ms": {"connect": {"p50": 0.12}}}, "tcp": {"rtt_ms": 21.7}}});
    let h = headline("diagnose", &diagnose);
    assert_eq!(h["connect_p50_ms"], 0.12);
    assert!(
        h.get("rtt_ms").is_none() && h.get("min_rtt_ms").is_none(),
        "{h}"
    );
}

/// Several URLs whose first failed: the headline comes from the first that was
/// measured, for probe and diagnose runs alike.
#[test]
fn headline_skips_a_failed_url() {
    let measured = json!({"fresh": {"phases_ms": {"ttfb": {"p50": 2.5}}}});
    let failed = json!({"url": "http://127.0.0.1:1/", "error": "cannot connect"});
    let probe = json!({"kind": "probe", "results": [failed, measured]});
    assert_eq!(headline("probe", &probe)["fresh_ttfb_p50_ms"], 2.5);
    let diagnose = json!({"kind": "diagnose", "results": [failed, {"probe": measured}]});
    assert_eq!(headline("diagnose", &diagnose)["fresh_ttfb_p50_ms"], 2.5);
}

/// Pruning deletes only the label's old runs, their histograms with them, and never
/// the newest ones kept.
#[test]
fn prune_deletes_a_labels_old_runs_only() {
    let path = temp_db("prune");
    let mut store = Store::open(&path).unwrap();
    let old = store.save(&run("probe", Some("serve:blog"), 1000)).unwrap();
    let older = store.save(&run("probe", Some("serve:blog"), 500)).unwrap();
    let newer = store.save(&run("probe", Some("serve:blog"), 3000)).unwrap();
    let other = store.save(&run("probe", Some("mine"), 100)).unwrap();
    assert_eq!(store.prune("serve:blog", 2000, 1).unwrap(), 2);
    for gone in [&old, &older] {
        assert!(matches!(store.load(gone), Err(StoreError::NotFound(_))));
    }
    assert!(store.load(&newer).is_ok() && store.load(&other).is_ok());
    // The newest kept even when it is old.
    assert_eq!(store.prune("serve:blog", 10_000, 1).unwrap(), 0);
    let orphans: i64 = store
        .conn
        .query_row(
            "SELECT COUNT(*) FROM histograms WHERE run_id NOT IN (SELECT id FROM runs)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 0, "the histograms go with their runs");
}

/// The size cap's pieces: the used bytes grow with what is stored and shrink when runs
/// go; the oldest runs under the prefix go first, never a label's newest, never
/// another label's — `Serve:x` is not under `serve:` (SQL's LIKE would ignore the
/// case), nor `serveXy` under `serve_` (LIKE's `_` would match any character).
#[test]
fn prune_oldest_frees_the_store_from_the_oldest_checks() {
    let path = temp_db("prune-oldest");
    let mut store = Store::open(&path).unwrap();
    let empty = store.used_bytes().unwrap();
    let big = |label: &str, at: i64| {
        let mut r = run("probe", Some(label), at);
        r.text = "x".repeat(200_000);
        r
    };
    let mut blog: Vec<String> = (0..4)
        .map(|i| store.save(&big("serve:blog", 1000 + i)).unwrap())
        .collect();
    let wiki = store.save(&big("serve:wiki", 10)).unwrap();
    let mine = store.save(&big("mine", 1)).unwrap();
    let lookalike = store.save(&big("Serve:x", 2)).unwrap();
    let lookalike_older = store.save(&big("Serve:x", 1)).unwrap();
    let wildcard = store.save(&big("serveXy", 3)).unwrap();
    let wildcard_older = store.save(&big("serveXy", 2)).unwrap();
    assert_eq!(store.prune_oldest("serve_", 50).unwrap(), 0);
    let full = store.used_bytes().unwrap();
    assert!(full >= empty + 10 * 200_000, "{empty} -> {full}");
    assert_eq!(store.prune_oldest("serve:", 2).unwrap(), 2);
    for gone in blog.drain(..2) {
        assert!(matches!(store.load(&gone), Err(StoreError::NotFound(_))));
    }
    let less = store.used_bytes().unwrap();
    assert!(less <= full - 2 * 200_000, "{full} -> {less}");
    // Everything it may take: blog's third; blog's newest, wiki's only run and the
    // other labels stay.
    assert_eq!(store.prune_oldest("serve:", 50).unwrap(), 1);
    assert_eq!(store.prune_oldest("serve:", 50).unwrap(), 0);
    for kept in [
        &blog[1],
        &wiki,
        &mine,
        &lookalike,
        &lookalike_older,
        &wildcard,
        &wildcard_older,
    ] {
        assert!(store.load(kept).is_ok(), "{kept}");
    }
}
