//! Shards (issue 19.1): one load split over processes that need no coordination.
//! Each shard runs the run-wide VUs, arrivals and requests whose index is ≡ I-1 mod
//! N, so the shards' totals are exact and their arrivals interleave into the whole
//! run's schedule; `--start-at` holds every shard until the same instant.

use std::process::{Child, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::util::{json_of, latscope, output_within, run, wait_output};
use crate::util_require::{require, require_root};

/// Starts `latscope load URL ARGS… --json --no-save` in the background.
fn shard(url: &str, args: &[&str]) -> Child {
    latscope()
        .arg("load")
        .arg(url)
        .args(args)
        .args(["--json", "--no-save"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("latscope starts")
}

/// Waits for a shard (bounded), asserts it exits 0 and parses its JSON.
pub fn finish(child: Child) -> Value {
    let out = wait_output(child, Duration::from_secs(60), "a shard");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out)
}

/// `-n 1000` over three shards sends exactly 1000 requests: 334, 333 and 333 (the
/// remainder to the first shard), each shard with its share of `-c 4` (2, 1, 1).
#[test]
fn request_counts_split_exactly() {
    let lab = crate::util_lab::healthy();
    let url = lab.url("/");
    let before = lab.stats().total;
    let children: Vec<Child> = (1..=3)
        .map(|i| {
            shard(
                &url,
                &["-n", "1000", "-c", "4", "--shard", &format!("{i}/3")],
            )
        })
        .collect();
    let docs: Vec<Value> = children.into_iter().map(finish).collect();
    let counts: Vec<u64> = docs
        .iter()
        .map(|d| d["requests"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [334, 333, 333]);
    assert_eq!(lab.stats().total - before, 1000);
    for (i, d) in docs.iter().enumerate() {
        assert_eq!(d["shard"]["index"], i + 1, "{d}");
        assert_eq!(d["shard"]["count"], 3, "{d}");
    }
}

/// `--rate 600` over three shards started at the same `--start-at`: together they
/// send the run's 600/s (1,800 arrivals in 3 s, all of them answered within 1 %),
/// and their arrivals interleave — the union's median gap is the whole run's 1/600 s
/// (1,667 µs), where three shards each at 200/s on their own clocks would arrive in
/// threes (median gap near 0). Each shard says how late it started (< 100 ms).
#[test]
fn open_model_shards_interleave_into_one_schedule() {
    let lab = crate::util_lab::healthy();
    let url = lab.url("/");
    let dir = crate::util::scratch().join("shards-rate");
    std::fs::create_dir_all(&dir).unwrap();
    let at = SystemTime::now() + Duration::from_secs(2);
    let at = humantime::format_rfc3339_millis(at).to_string();
    let raws: Vec<_> = (1..=3).map(|i| dir.join(format!("raw{i}.csv"))).collect();
    let children: Vec<Child> = (1..=3)
        .map(|i| {
            let raw = raws[i - 1].to_str().unwrap().to_string();
            let s = format!("{i}/3");
            shard(
                &url,
                &[
                    "--rate",
                    "600",
                    "-d",
                    "3s",
                    "--shard",
                    &s,
                    "--start-at",
                    &at,
                    "--raw",
                    &raw,
                ],
            )
        })
        .collect();
    let docs: Vec<Value> = children.into_iter().map(finish).collect();
    let total: u64 = docs.iter().map(|d| d["requests"].as_u64().unwrap()).sum();
    assert!((1782..=1800).contains(&total), "{total} requests");
    for d in &docs {
        let late = d["start_late_ms"].as_f64().unwrap();
        assert!((0.0..100.0).contains(&late), "started {late} ms late");
        assert_eq!(d["start_at"], Value::String(at.clone()));
    }
    let median = median_start_gap_us(&raws);
    assert!((1_300..=2_000).contains(&median), "median gap {median} µs");
}

/// Column `col` of every row of the `--raw` CSV files, pooled (header skipped).
fn raw_column<T: std::str::FromStr, P: AsRef<std::path::Path>>(raws: &[P], col: usize) -> Vec<T>
where
    T::Err: std::fmt::Debug,
{
    raws.iter()
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .skip(1)
                .map(|l| l.split(',').nth(col).unwrap().parse::<T>().unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The median gap, µs, between consecutive request starts (each `--raw` CSV's first
/// column) over all the shards' files: the interleaved schedule's spacing.
pub fn median_start_gap_us<P: AsRef<std::path::Path>>(raws: &[P]) -> u64 {
    let mut starts: Vec<u64> = raw_column(raws, 0);
    starts.sort_unstable();
    let mut gaps: Vec<u64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_unstable();
    gaps[gaps.len() / 2]
}

/// `--shards N` takes the shard from JOB_COMPLETION_INDEX (0-based, as a Kubernetes
/// Indexed Job sets it); without it, with fewer connections or requests than
/// shards, or with a capacity search (whose steps depend on its own measurements), the
/// run is refused (exit 2) saying why.
#[test]
fn shards_from_the_job_index_and_refusals() {
    let lab = crate::util_lab::healthy();
    let url = lab.url("/");
    let mut cmd = latscope();
    cmd.args([
        "load",
        &url,
        "-n",
        "30",
        "-c",
        "3",
        "--shards",
        "3",
        "--json",
        "--no-save",
    ])
    .env("JOB_COMPLETION_INDEX", "2");
    let (out, _) = output_within(cmd, Duration::from_secs(60));
    let doc = json_of(&out);
    assert_eq!(doc["shard"]["index"], 3, "{doc}");
    assert_eq!(doc["requests"], 10, "{doc}");

    let mut cmd = latscope();
    cmd.args(["load", &url, "-n", "30", "--shards", "3", "--no-save"])
        .env_remove("JOB_COMPLETION_INDEX");
    let (out, _) = output_within(cmd, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("JOB_COMPLETION_INDEX"), "{err}");

    for (args, says) in [
        (
            vec!["-c", "2", "-d", "1s", "--shard", "3/3"],
            "-c 2 is fewer than the 3 shards",
        ),
        (
            vec!["-n", "2", "-c", "3", "--shard", "3/3"],
            "-n 2 is fewer than the 3 shards",
        ),
        (vec!["-n", "2", "--shard", "4/3"], "expected I/N"),
        (vec!["-n", "2", "--start-at", "+3d"], "more than a day away"),
        (vec!["-n", "2", "--start-at", "soon"], "RFC 3339"),
        (
            vec!["--find-max", "p99<1s", "--shard", "1/2"],
            "--shard does not go with --find-max",
        ),
        (
            vec!["--find-max", "p99<1s", "--start-at", "+5s"],
            "--start-at does not go with --find-max",
        ),
    ] {
        let mut all = vec!["load", url.as_str(), "--no-save"];
        all.extend(args.iter());
        let out = run(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// Runs latscope with `args` against the store `db`, asserting exit 0; its stdout.
fn with_db(db: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut cmd = latscope();
    cmd.args(args).env("LATSCOPE_DB", db);
    let (out, _) = output_within(cmd, Duration::from_secs(60));
    out
}

/// The q-quantile (0..1) of sorted `values` as HdrHistogram reports it: the value at
/// rank ⌈q·n⌉.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

/// The distribution-free 95 % interval of the q-quantile of sorted `values`: the
/// order statistics at ranks n·q ∓ 1.96·√(n·q·(1−q)) (the normal approximation of the
/// binomial count below the quantile; Conover, Practical Nonparametric Statistics,
/// §3.2), rounded outwards and one rank wider on each side (conservative). A pause that
/// delays fewer requests than the interval's upper margin moves the p99 point but not
/// the interval's low end.
pub fn quantile_interval(values: &[f64], q: f64) -> (f64, f64) {
    assert!(!values.is_empty(), "no values to take a quantile of");
    let n = values.len() as f64;
    let half = 1.96 * (n * q * (1.0 - q)).sqrt();
    let rank = |r: f64| (r as usize).clamp(1, values.len()) - 1;
    (
        values[rank((n * q - half).floor())],
        values[rank((n * q + half).ceil() + 1.0)],
    )
}

/// The latencies (ms, sorted) of `--raw` CSV files, pooled.
pub fn raw_latencies_ms<P: AsRef<std::path::Path>>(raws: &[P]) -> Vec<f64> {
    let mut lat: Vec<f64> = raw_column::<f64, P>(raws, 7)
        .into_iter()
        .map(|us| us / 1000.0)
        .collect();
    lat.sort_by(f64::total_cmp);
    lat
}

/// Issue 19.2: `merge` joins three shard runs into one stored run whose counts are
/// the shards' sums and whose percentiles are those of every request the shards made
/// (their --raw latencies pooled: within the histogram's 0.1 % resolution), not an
/// average of percentiles; the timeline's seconds add up to the total; the merged run
/// says it came from 3 of 3 shards, and show / export → import / compare / report
/// take it like any run. Runs of another plan, or a run given twice, are refused
/// (exit 2) saying why.
#[test]
fn merge_adds_the_shards_exactly() {
    let lab = crate::util_lab::healthy();
    let url = lab.url("/delay/10ms");
    let dir = crate::util::scratch().join("shards-merge");
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("runs.db");
    let at =
        humantime::format_rfc3339_millis(SystemTime::now() + Duration::from_secs(2)).to_string();
    let children: Vec<Child> = (1..=3)
        .map(|i| {
            let raw = dir.join(format!("raw{i}.csv"));
            latscope()
                .args(["load", &url, "--rate", "300", "-d", "2s", "--start-at", &at])
                .args(["--shard", &format!("{i}/3"), "--label", &format!("s{i}")])
                .arg("--raw")
                .arg(&raw)
                .env("LATSCOPE_DB", &db)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = with_db(&db, &["merge", "s1", "s2", "s3", "--label", "m", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json_of(&out);
    let lat = raw_latencies_ms(
        &(1..=3)
            .map(|i| dir.join(format!("raw{i}.csv")))
            .collect::<Vec<_>>(),
    );
    assert_eq!(doc["requests"].as_u64().unwrap(), lat.len() as u64, "{doc}");
    assert!((594..=600).contains(&lat.len()), "{}", lat.len());
    for (q, key) in [(0.5, "p50"), (0.99, "p99")] {
        let want = quantile(&lat, q);
        let got = doc["latency_ms"][key].as_f64().unwrap();
        assert!(
            (got - want).abs() <= want * 0.01 + 0.01,
            "{key}: merged {got} ms, pooled {want} ms"
        );
    }
    let seconds: u64 = doc["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(seconds, lat.len() as u64);
    assert_eq!(doc["merged"]["shards"], 3, "{doc}");
    assert_eq!(doc["merged"]["of"], 3, "{doc}");

    let shown = with_db(&db, &["show", "m"]);
    assert!(String::from_utf8_lossy(&shown.stdout).contains("latscope merge — 3 runs"));
    let file = dir.join("m.json");
    assert!(with_db(&db, &["export", "m", "-o", file.to_str().unwrap()])
        .status
        .success());
    let other = dir.join("other.db");
    assert!(with_db(&other, &["import", file.to_str().unwrap()])
        .status
        .success());
    let compared = with_db(&db, &["compare", "s1", "m"]);
    let text = String::from_utf8_lossy(&compared.stdout);
    assert!(text.contains("merged: 3 of 3 shards from 1 host"), "{text}");
    let html = dir.join("m.html");
    assert!(with_db(&db, &["report", "m", "-o", html.to_str().unwrap()])
        .status
        .success());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("merged from 3 of 3 shards from 1 host"),
        "the report says where the run came from"
    );
    // Export files merge like stored runs.
    let files: Vec<String> = (1..=3)
        .map(|i| {
            let f = dir.join(format!("s{i}.json")).to_str().unwrap().to_string();
            assert!(with_db(&db, &["export", &format!("s{i}"), "-o", &f])
                .status
                .success());
            f
        })
        .collect();
    let from_files = with_db(
        &other,
        &[
            "merge",
            &files[0],
            &files[1],
            &files[2],
            "--json",
            "--no-save",
        ],
    );
    assert_eq!(json_of(&from_files)["requests"], doc["requests"]);

    let refused = |args: &[&str], says: &str| {
        let out = with_db(&db, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    };
    assert!(with_db(&db, &["load", &url, "-n", "5", "--label", "other"])
        .status
        .success());
    refused(&["merge", "s1", "other"], "not a shard of the same plan");
    refused(&["merge", "s1", "s1"], "already given");
}

/// A merged run keeps what only one shard's run holds whole: the TLS handshakes
/// (added like the latency) and the `--watch` rows — every shard watched the same
/// server, so each merged second keeps one scrape (not the shards' sum), and the
/// run's `watch` summary counts the merged seconds.
#[test]
fn merged_runs_keep_tls_handshakes_and_the_watched_server() {
    use latscope::lab::{self, LabOptions};
    if !require_root() || !require("ip") {
        return;
    }
    let lab = lab::spawn(LabOptions {
        tls: Some(lab::LabTls::self_signed(&[]).unwrap()),
        ..Default::default()
    })
    .unwrap();
    let dir = crate::util::scratch().join("shards-watch");
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, lab.cert_pem().unwrap()).unwrap();
    let (_ne, metrics) =
        crate::util_netns::node_exporter(None, "127.0.0.1", crate::util::free_port());
    let url = lab.url("/delay/5ms");
    let files: Vec<String> = (1..=2)
        .map(|i| dir.join(format!("w{i}.json")).to_str().unwrap().to_string())
        .collect();
    // Started together, so merged second t is each shard's second t.
    let at = humantime::format_rfc3339_millis(SystemTime::now() + Duration::from_millis(1500))
        .to_string();
    let children: Vec<Child> = (1..=2)
        .map(|i| {
            let s = format!("{i}/2");
            shard(
                &url,
                &[
                    "--rate",
                    "40",
                    "-d",
                    "3s",
                    "--no-keepalive",
                    "--shard",
                    &s,
                    "--start-at",
                    &at,
                    "--cacert",
                    ca.to_str().unwrap(),
                    "--watch",
                    &metrics,
                    "--export",
                    &files[i - 1],
                ],
            )
        })
        .collect();
    let docs: Vec<Value> = children.into_iter().map(finish).collect();
    let handshakes: u64 = docs
        .iter()
        .map(|d| d["connections_opened"].as_u64().unwrap())
        .sum();
    assert!(handshakes >= 100, "{handshakes} handshakes");
    let out = run(&["merge", &files[0], &files[1], "--json", "--no-save"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = json_of(&out);
    let tls = &m["tls_ms"];
    assert!(tls["p50"].as_f64().unwrap() > 0.0, "{m}");
    let rows = m["timeline"].as_array().unwrap();
    let watched: Vec<&Value> = rows.iter().filter(|r| r["server"].is_object()).collect();
    assert!(watched.len() >= 2, "{rows:?}");
    assert_eq!(
        m["watch"]["seconds"].as_u64(),
        Some(watched.len() as u64),
        "{m}"
    );
    // One scrape per second, as each shard saw it: a CPU share, not two added.
    for r in &watched {
        let t = r["t"].as_u64().unwrap() as usize;
        let first = &docs[0]["timeline"][t]["server"];
        if first.is_object() {
            assert_eq!(r["server"], *first, "second {t}");
        }
    }
}

/// `client-bound` is judged per shard (issue 19.2): two shards, each one thread doing a
/// full TLS handshake per request on a route that answers at once (the load of
/// `findings::client_bound_fires_when_latscope_cannot_keep_up`), are each bound by
/// their own CPU; the merge says so, naming the busiest shard, instead of spreading
/// one shard's CPU over both shards' threads.
#[test]
#[ignore = "heavy: holds the wire lock; scripts/test.sh runs these alone (--ignored)"]
fn merge_judges_client_bound_per_shard() {
    use latscope::lab::{self, LabOptions, LabTls};
    let _heavy = crate::util_wire::lock();
    let tls = LabTls::self_signed(&[]).unwrap();
    let lab = lab::spawn(LabOptions {
        tls: Some(tls.without_resumption()),
        ..Default::default()
    })
    .unwrap();
    let dir = crate::util::scratch().join("shards-bound");
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, tls.cert_pem()).unwrap();
    let files: Vec<String> = (1..=2)
        .map(|i| dir.join(format!("b{i}.json")).to_str().unwrap().to_string())
        .collect();
    let url = lab.url("/status/204");
    let docs: Vec<Value> = (1..=2)
        .map(|i| {
            let s = format!("{i}/2");
            let child = shard(
                &url,
                &[
                    "-c",
                    "16",
                    "-d",
                    "2s",
                    "--threads",
                    "1",
                    "--no-keepalive",
                    "--shard",
                    &s,
                    "--cacert",
                    ca.to_str().unwrap(),
                    "--export",
                    &files[i - 1],
                ],
            );
            finish(child)
        })
        .collect();
    for d in &docs {
        let ids: Vec<&str> = d["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["id"].as_str())
            .collect();
        assert!(ids.contains(&"client-bound"), "a shard alone: {ids:?}");
    }
    let out = run(&["merge", &files[0], &files[1], "--json", "--no-save"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = json_of(&out);
    let f = m["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "client-bound")
        .unwrap_or_else(|| panic!("merged: {}", m["findings"]));
    assert_eq!(f["evidence"]["threads"], 1, "{f}");
    assert!(
        f["evidence"]["shard"].as_str().unwrap().ends_with("/2"),
        "{f}"
    );
    assert!(f["title"].as_str().unwrap().starts_with("shard "), "{f}");
}
