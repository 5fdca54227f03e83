//! latscope and Prometheus: `load --out prometheus=URL` streams the per-second series
//! into a real Prometheus (Debian's, remote-write receiver on, started by the test)
//! and the values read back through its HTTP API are the run's own; a Prometheus that
//! is down or stalls never slows the run; `export --format openmetrics` is accepted
//! by promtool's backfill and holds the same numbers.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util;
use crate::util_lab::healthy;
use crate::util_prometheus::{temp_dir, values, Prometheus};
use crate::util_real::python_server;
use crate::util_require::require;

/// `latscope export RUN --format openmetrics` of a real load run is accepted by
/// `promtool tsdb create-blocks-from openmetrics` (which reports the block it wrote),
/// and the block holds the run's numbers: the last `latscope_requests_total` equals
/// the run's request count and the p99 gauges are the timeline's p99_ms, second by
/// second (`promtool tsdb dump`).
#[test]
fn export_openmetrics_backfills_with_promtool() {
    if !require("promtool") {
        return;
    }
    let lab = healthy();
    let dir = temp_dir("export");
    let db = dir.join("runs.db");
    let db = db.to_str().unwrap();
    let doc = util::run_json(&[
        "load",
        &lab.url("/"),
        "-d",
        "3s",
        "-c",
        "4",
        "--threads",
        "2",
        "--db",
        db,
        "--label",
        "om-test",
        "--json",
    ]);
    let file = dir.join("run.om");
    let out = util::run(&[
        "export",
        "om-test",
        "--format",
        "openmetrics",
        "--db",
        db,
        "-o",
        file.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    let blocks = dir.join("blocks");
    let out = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&file)
        .arg(&blocks)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "promtool refused the file: {said}\n{text}"
    );
    assert!(
        said.contains("BLOCK ULID") && said.contains("NUM SAMPLES"),
        "{said}"
    );
    // `tsdb dump` wants a wal directory beside the blocks.
    std::fs::create_dir_all(blocks.join("wal")).unwrap();
    let dump = |matcher: &str| -> Vec<(f64, i64)> {
        let out = Command::new("promtool")
            .args(["tsdb", "dump", &format!("--match={matcher}")])
            .arg(&blocks)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut v: Vec<(f64, i64)> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let mut w = l.rsplit(' ');
                let ts = w.next()?.parse().ok()?;
                let value = w.next()?.parse().ok()?;
                Some((value, ts))
            })
            .collect();
        v.sort_by_key(|p| p.1);
        v
    };
    let requests = dump("latscope_requests_total");
    assert_eq!(
        requests.last().unwrap().0,
        doc["requests"].as_f64().unwrap()
    );
    let timeline = doc["timeline"].as_array().unwrap();
    assert_eq!(requests.len(), timeline.len());
    for w in requests.windows(2) {
        assert_eq!(w[1].1 - w[0].1, 1000, "one sample a second");
    }
    let p99 = dump(r#"latscope_latency_seconds{quantile="0.99",endpoint="all"}"#);
    let want: Vec<f64> = timeline
        .iter()
        .filter(|s| s["requests"].as_u64() > Some(0))
        .map(|s| s["p99_ms"].as_f64().unwrap())
        .collect();
    assert_eq!(p99.len(), want.len());
    for ((got, _), want) in p99.iter().zip(&want) {
        assert!((got * 1e3 - want).abs() < 1e-6, "p99 {got} s vs {want} ms");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `load --out prometheus=URL --out-label env=ci` into a real Prometheus (remote-write
/// receiver): the counter's last value equals the run's request count, one sample a
/// second stamped at each second's end; the p99 gauges equal the run JSON timeline's
/// p99_ms second by second (the same merged histograms); the series carry the stored
/// run's id, the label, host:port (no path) and the extra label; the run's JSON says
/// every write went through.
#[test]
fn load_out_streams_into_prometheus() {
    let Some(prom) = Prometheus::start("load_out_streams_into_prometheus") else {
        return;
    };
    let lab = healthy();
    let dir = temp_dir("out");
    let db = dir.join("runs.db");
    let out = format!("prometheus={}", prom.write_url());
    let doc = util::run_json(&[
        "load",
        &lab.url("/?secret=1"),
        "-d",
        "4s",
        "-c",
        "4",
        "--threads",
        "2",
        "--db",
        db.to_str().unwrap(),
        "--label",
        "rw-test",
        "--out",
        &out,
        "--out-label",
        "env=ci",
        "--json",
    ]);
    let outputs = doc["outputs"].as_array().expect("outputs in the JSON");
    assert_eq!(outputs.len(), 1);
    let o = &outputs[0];
    assert_eq!(o["kind"], "prometheus");
    assert_eq!(o["failed"], 0, "{o}");
    assert!(o["writes"].as_u64().unwrap() >= 3, "{o}");
    let run = o["run"].as_str().unwrap().to_string();
    let listed = util::run_json(&["runs", "--db", db.to_str().unwrap(), "--json"]);
    assert_eq!(
        listed[0]["id"],
        run.as_str(),
        "the run label is the stored id"
    );

    let sel = format!(r#"run="{run}",endpoint="all""#);
    let series = prom.query(&format!("latscope_requests_total{{{sel}}}"));
    assert_eq!(series.len(), 1, "{series:?}");
    let m = &series[0]["metric"];
    assert_eq!(m["label"], "rw-test");
    assert_eq!(m["env"], "ci");
    assert_eq!(
        m["target"],
        lab.url("/")
            .trim_start_matches("http://")
            .trim_end_matches('/')
    );
    let requests = values(&prom.query(&format!("latscope_requests_total{{{sel}}}[1h]")));
    let timeline = doc["timeline"].as_array().unwrap();
    assert_eq!(
        requests.len(),
        timeline.len(),
        "one sample a second: {requests:?}"
    );
    assert_eq!(
        requests.last().unwrap().1,
        doc["requests"].as_f64().unwrap()
    );
    let total = prom.query(&format!(
        "sum(max_over_time(latscope_requests_total{{run=\"{run}\"}}[1h]))"
    ));
    assert_eq!(
        total[0]["value"][1]
            .as_str()
            .unwrap()
            .parse::<f64>()
            .unwrap(),
        doc["requests"].as_f64().unwrap()
    );
    for w in requests.windows(2) {
        assert_eq!(w[1].0 - w[0].0, 1000, "stamped a second apart");
    }
    let p99 = values(&prom.query(&format!(
        r#"latscope_latency_seconds{{{sel},quantile="0.99"}}[1h]"#
    )));
    let want: Vec<f64> = timeline
        .iter()
        .filter(|s| s["requests"].as_u64() > Some(0))
        .map(|s| s["p99_ms"].as_f64().unwrap())
        .collect();
    assert_eq!(p99.len(), want.len(), "{p99:?} vs {want:?}");
    for ((_, got), want) in p99.iter().zip(&want) {
        assert!((got * 1e3 - want).abs() < 1e-6, "p99 {got} s vs {want} ms");
    }
    let kinds = prom.query(&format!(r#"latscope_errors_total{{run="{run}"}}"#));
    assert_eq!(kinds.len(), 7, "every error kind, at 0");
    assert_eq!(
        prom.query(&format!(r#"latscope_active{{run="{run}"}}"#))
            .len(),
        1
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Prometheus that is down (nothing listens) or stalls (a Python server that
/// accepts and never answers) neither slows nor stops the run: it lasts its planned
/// time, exits 0, and the JSON and stderr say how many writes failed and why.
#[test]
fn out_to_a_dead_or_stalled_prometheus_never_slows_the_run() {
    if !require("python3") {
        return;
    }
    let lab = healthy();
    let dead = crate::util::free_port();
    let (stall, port) = python_server(
        "import socket,sys,time\n\
             s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(64)\n\
             print(s.getsockname()[1], flush=True)\n\
             conns=[]\n\
             end=time.time()+60\n\
             s.settimeout(0.5)\n\
             while time.time()<end:\n\
             \x20   try: conns.append(s.accept()[0])\n\
             \x20   except OSError: pass\n",
        &[],
    );
    let dead_url = format!("prometheus=http://127.0.0.1:{dead}/api/v1/write");
    let stall_url = format!("prometheus=http://127.0.0.1:{port}/api/v1/write");
    let t0 = Instant::now();
    let out = util::run(&[
        "load",
        &lab.url("/"),
        "-d",
        "4s",
        "-c",
        "2",
        "--threads",
        "1",
        "--no-save",
        "--out",
        &dead_url,
        "--out",
        &stall_url,
        "--json",
    ]);
    let took = t0.elapsed();
    drop(stall);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = util::json_of(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // 4 s of run, in-flight grace, and at most the 3 s drain for the stalled one.
    assert!(took < Duration::from_secs(4 + 2 + 3 + 2), "took {took:?}");
    let d = doc["duration_s"].as_f64().unwrap();
    assert!(d < 5.0, "the run itself lasted {d} s");
    let outputs = doc["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 2);
    let (dead, stalled) = (&outputs[0], &outputs[1]);
    assert!(dead["writes"].as_u64().unwrap() >= 4, "{dead}");
    assert_eq!(dead["failed"], dead["writes"], "{dead}");
    assert!(
        dead["last_error"].as_str().unwrap().contains("connect"),
        "{dead}"
    );
    assert!(stalled["failed"].as_u64().unwrap() >= 1, "{stalled}");
    assert!(
        stalled["last_error"].as_str().unwrap().len() > 3,
        "{stalled}"
    );
    let n = dead["writes"].as_u64().unwrap();
    assert!(
        stderr.contains(&format!(
            "{n} of {n} writes to Prometheus at http://127.0.0.1:"
        )),
        "{stderr}"
    );
}

/// `diagnose --out` streams its load ramp: the steps' seconds land back to back in
/// one counter per URL (time order kept across steps, which Prometheus would refuse
/// otherwise), ending at the ramp's request count, under the stored diagnose run's id.
#[test]
fn diagnose_out_streams_the_ramp() {
    let Some(prom) = Prometheus::start("diagnose_out_streams_the_ramp") else {
        return;
    };
    let lab = healthy();
    let dir = temp_dir("diag");
    let db = dir.join("runs.db");
    let out = format!("prometheus={}", prom.write_url());
    let doc = util::run_json(&[
        "diagnose",
        &lab.url("/"),
        "-n",
        "3",
        "--max-connections",
        "4",
        "--step",
        "1s",
        "--db",
        db.to_str().unwrap(),
        "--out",
        &out,
        "--json",
    ]);
    let o = &doc["load"]["outputs"][0];
    assert_eq!(o["failed"], 0, "{o}");
    let run = o["run"].as_str().unwrap();
    let listed = util::run_json(&["runs", "--db", db.to_str().unwrap(), "--json"]);
    assert_eq!(listed[0]["id"], run);
    let requests = values(&prom.query(&format!(
        r#"latscope_requests_total{{run="{run}",endpoint="all"}}[1h]"#
    )));
    assert!(requests.len() >= 3, "{requests:?}");
    assert!(requests
        .windows(2)
        .all(|w| w[1].0 > w[0].0 && w[1].1 >= w[0].1));
    assert_eq!(
        requests.last().unwrap().1,
        doc["load"]["requests"].as_f64().unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A scenario with two endpoints: each gets its own latency gauges (`endpoint` =
/// the request's name) besides `all`, from the per-endpoint histograms of each
/// second — the one behind a 20 ms delay has a p50 of at least 20 ms, the other far
/// less — and the counters stay on `endpoint="all"` only, so their sum is the run's
/// request count. The scenario's checks reach Prometheus as
/// `latscope_scenario_checks_total{result}`, ending at the run's own counts.
#[test]
fn scenario_endpoints_get_their_own_latency_series() {
    let Some(prom) = Prometheus::start("scenario_endpoints") else {
        return;
    };
    let lab = healthy();
    let dir = temp_dir("scenario");
    let file = dir.join("s.toml");
    std::fs::write(
        &file,
        format!(
            "base_url = \"{}\"\n\n[[request]]\nname = \"home\"\npath = \"/\"\ncheck = {{ status = 200 }}\n\n[[request]]\nname = \"slow\"\npath = \"/delay/20ms\"\ncheck = {{ status = 404 }}\n",
            lab.url("").trim_end_matches('/')
        ),
    )
    .unwrap();
    let out = format!("prometheus={}", prom.write_url());
    let doc = util::run_json(&[
        "load",
        "-f",
        file.to_str().unwrap(),
        "-d",
        "3s",
        "-c",
        "4",
        "--threads",
        "2",
        "--no-save",
        "--out",
        &out,
        "--json",
    ]);
    let run = doc["outputs"][0]["run"].as_str().unwrap().to_string();
    assert_eq!(doc["outputs"][0]["failed"], 0);
    let p50 = |ep: &str| {
        values(&prom.query(&format!(
            r#"latscope_latency_seconds{{run="{run}",endpoint="{ep}",quantile="0.5"}}[1h]"#
        )))
    };
    let (home, slow, all) = (p50("home"), p50("slow"), p50("all"));
    assert!(!home.is_empty() && !slow.is_empty() && !all.is_empty());
    assert!(slow.iter().all(|(_, v)| *v >= 0.020), "{slow:?}");
    assert!(home.iter().all(|(_, v)| *v < 0.015), "{home:?}");
    let total = prom.query(&format!(
        "sum(max_over_time(latscope_requests_total{{run=\"{run}\"}}[1h]))"
    ));
    let total: f64 = total[0]["value"][1].as_str().unwrap().parse().unwrap();
    assert_eq!(total, doc["requests"].as_f64().unwrap());
    // The checks: one counter by result, ending at the run's own counts (home's
    // status check passes, slow's fails).
    let checks = |result: &str| -> f64 {
        let v = prom.query(&format!(
            "max_over_time(latscope_scenario_checks_total{{run=\"{run}\",result=\"{result}\"}}[1h])"
        ));
        v[0]["value"][1].as_str().unwrap().parse().unwrap()
    };
    let c = &doc["checks"];
    let (judged, passed) = (c["total"].as_f64().unwrap(), c["passed"].as_f64().unwrap());
    assert!(passed > 0.0 && passed < judged, "{c}");
    assert_eq!(checks("passed"), passed, "{c}");
    assert_eq!(checks("failed"), judged - passed, "{c}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// With `--watch` beside `--out`, the watched server's CPU (busy, iowait), load and
/// TCP numbers go to Prometheus on the run's time axis, each sample the value the
/// run's timeline stores for that second (`server.cpu_pct` / 100 for the ratio);
/// `export --format openmetrics` carries them too.
#[test]
fn watched_server_series_reach_prometheus() {
    if !require(crate::util_netns::NODE_EXPORTER) {
        return;
    }
    let Some(prom) = Prometheus::start("watched_server_series_reach_prometheus") else {
        return;
    };
    let (_ne, ne_url) =
        crate::util_netns::node_exporter(None, "127.0.0.1", crate::util::free_port());
    let lab = healthy();
    let dir = temp_dir("out-watch");
    let db = dir.join("runs.db");
    let out = format!("prometheus={}", prom.write_url());
    let doc = util::run_json(&[
        "load",
        &lab.url("/delay/2ms"),
        "-d",
        "5s",
        "-c",
        "4",
        "--db",
        db.to_str().unwrap(),
        "--out",
        &out,
        "--watch",
        &ne_url,
        "--json",
    ]);
    let run = doc["outputs"][0]["run"].as_str().unwrap().to_string();
    let cpu = values(&prom.query(&format!(
        "latscope_server_cpu_busy_ratio{{run=\"{run}\"}}[1h]"
    )));
    assert!(cpu.len() >= 3, "{cpu:?}");
    let rows = doc["timeline"].as_array().unwrap();
    for (ts, v) in &cpu {
        assert!((0.0..=1.0).contains(v), "{v}");
        let stored: Vec<f64> = rows
            .iter()
            .filter_map(|r| r["server"]["cpu_pct"].as_f64())
            .map(|c| c / 100.0)
            .collect();
        assert!(
            stored.iter().any(|s| (s - v).abs() < 1e-6),
            "{v} at {ts} is not a stored second's CPU: {stored:?}"
        );
    }
    for name in [
        "latscope_server_load1",
        "latscope_server_tcp_retransmits_per_second",
    ] {
        assert!(
            !prom.query(&format!("{name}{{run=\"{run}\"}}")).is_empty(),
            "{name}"
        );
    }
    let om = util::run(&[
        "export",
        &run,
        "--format",
        "openmetrics",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&om.stdout).contains("latscope_server_cpu_busy_ratio{"));
}
