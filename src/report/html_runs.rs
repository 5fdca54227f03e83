//! The HTML report's section for one run, by kind: load (timeline panels, percentile
//! distribution, per-endpoint table), probe (phase bars and table, sample
//! distribution, response headers), disk (per-direction tables, per-second panels,
//! distribution), each after the run's findings. A diagnose run has a section per URL,
//! verdict first (`html_diagnose`).

use hdrhistogram::Histogram;
use serde_json::Value;

use crate::record::RunRecord;

use super::charts::{self, Panel, Series, PALETTE};
use super::compare_text::fmt_value;
use super::html::{esc, figure, table, value_text, ReportError};
use super::html_verdict;
use super::rundata::{self, num, Histograms};

pub use super::html_overlay::overlay;
pub use super::html_probe::phase_bar;

/// Latency summary keys shown in tables: (header, key).
const PCT: [(&str, &str); 8] = [
    ("min", "min"),
    ("mean", "mean"),
    ("p50", "p50"),
    ("p90", "p90"),
    ("p99", "p99"),
    ("p99.9", "p999"),
    ("p99.99", "p9999"),
    ("max", "max"),
];

/// The (nines, value) curve of a histogram (ns → `unit_ns` units), to as many nines
/// as its count can resolve (at most 5); it ends at the maximum, so a chart's axis
/// always reaches the slowest request.
pub fn hist_curve(h: &Histogram<u64>, unit_ns: f64) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let max_nines = (h.len() as f64).log10().clamp(1.0, 5.0);
    let steps = (max_nines * 20.0) as usize;
    let mut curve: Vec<(f64, f64)> = (0..=steps)
        .map(|i| {
            let x = max_nines * i as f64 / steps as f64;
            let q = 1.0 - 10f64.powf(-x);
            (x, h.value_at_quantile(q) as f64 / unit_ns)
        })
        .collect();
    if let Some(last) = curve.last_mut() {
        last.1 = h.max() as f64 / unit_ns;
    }
    curve
}

/// The (nines, value) curve of raw samples (nearest rank), ending at the largest
/// sample (a cold start in 20 samples is the curve's end, not cut off).
pub fn sample_curve(samples: &[f64]) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return Vec::new();
    }
    v.sort_by(f64::total_cmp);
    let max_nines = (v.len() as f64).log10().clamp(1.0, 5.0);
    let steps = (max_nines * 20.0) as usize;
    (0..=steps)
        .map(|i| {
            let x = max_nines * i as f64 / steps as f64;
            let q = 1.0 - 10f64.powf(-x);
            let idx = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
            (x, if i == steps { v[v.len() - 1] } else { v[idx] })
        })
        .collect()
}

/// A curve from a summary's percentiles when no histogram is stored.
pub fn summary_curve(p: &Value) -> Vec<(f64, f64)> {
    [
        (0.0, "min"),
        (0.301, "p50"),
        (1.0, "p90"),
        (2.0, "p99"),
        (3.0, "p999"),
        (4.0, "p9999"),
    ]
    .iter()
    .filter_map(|(x, k)| num(p, &[k]).map(|v| (*x, v)))
    .collect()
}

/// A `min … max` table row from a percentile object.
pub(super) fn pct_row(name: &str, p: &Value, unit: &str) -> Vec<String> {
    let mut row = vec![name.to_string()];
    for (_, k) in PCT {
        row.push(num(p, &[k]).map(|v| fmt_value(v, unit)).unwrap_or_default());
    }
    row
}

fn pct_header(first: &'static str) -> Vec<&'static str> {
    let mut h = vec![first];
    h.extend(PCT.iter().map(|(n, _)| *n));
    h
}

/// A key/value table of the scalar fields present.
pub(super) fn kv(out: &mut String, pairs: Vec<(&str, Option<String>)>) {
    let rows: Vec<Vec<String>> = pairs
        .into_iter()
        .filter_map(|(k, v)| v.filter(|v| !v.is_empty()).map(|v| vec![k.to_string(), v]))
        .collect();
    if !rows.is_empty() {
        table(out, "kv", &["", ""], &rows);
    }
}

pub(super) fn text_at(v: &Value, path: &[&str]) -> Option<String> {
    let mut v = v;
    for p in path {
        v = v.get(p)?;
    }
    match v {
        Value::Null => None,
        Value::Array(a) => Some(a.iter().map(value_text).collect::<Vec<_>>().join(", ")),
        other => Some(value_text(other)),
    }
}

/// One run's section. A diagnose run has one section per URL, each verdict first
/// (`html_diagnose`); other runs show their findings first, then what was
/// measured.
pub fn run_section(out: &mut String, run: &RunRecord) -> Result<(), ReportError> {
    let hist = Histograms::decode(run)?;
    if run.kind == "diagnose" {
        return super::html_diagnose::sections(out, run, &hist);
    }
    if let Some(s) = run.summary.get("summary").and_then(Value::as_str) {
        out.push_str(&format!("<p class=\"summary\">{}</p>\n", esc(s)));
    }
    let list = run
        .findings
        .as_array()
        .filter(|a| !a.is_empty())
        .or_else(|| run.summary.get("findings").and_then(Value::as_array))
        .cloned()
        .unwrap_or_default();
    html_verdict::findings(
        out,
        &list,
        &format!("{}-findings", html_verdict::run_anchor(run)),
    );
    let results = rundata::probe_results(run);
    for (i, result) in results.iter().enumerate() {
        if results.len() > 1 {
            let url = text_at(result, &["target"]).unwrap_or_else(|| format!("URL {}", i + 1));
            out.push_str(&format!("<h3>Probe {}</h3>\n", esc(&url)));
        } else {
            out.push_str("<h3>Probe</h3>\n");
        }
        super::html_probe::probe(out, result)?;
    }
    if let Some(load) = rundata::load_summary(run) {
        load_section(out, run, load, &hist)?;
    }
    if let Some(disk) = rundata::disk_summary(run) {
        disk_section(out, run, disk, &hist)?;
    }
    Ok(())
}

/// The load timeline as panels: latency p50/p90/p99, requests/s, errors/s, active.
pub fn load_panels(run: &RunRecord, hist: &Histograms) -> (Vec<Panel>, f64) {
    let tl = rundata::timeline(run);
    let secs = hist.per_second("latency");
    let from_hist = |q: f64| -> Vec<(f64, f64)> {
        secs.iter()
            .filter(|(_, h)| !h.is_empty())
            .map(|(t, h)| (f64::from(*t), h.value_at_quantile(q) as f64 / 1e6))
            .collect()
    };
    let series = |f: fn(&rundata::Second) -> Option<f64>| -> Vec<(f64, f64)> {
        tl.iter()
            .filter_map(|s| f(s).map(|v| (f64::from(s.t), v)))
            .collect()
    };
    let pick = |f: fn(&rundata::Second) -> Option<f64>, q: f64| {
        let v = series(f);
        if v.is_empty() {
            from_hist(q)
        } else {
            v
        }
    };
    let x_max = tl
        .iter()
        .map(|s| s.t)
        .chain(secs.iter().map(|(t, _)| *t))
        .max()
        .map(|t| f64::from(t) + 1.0)
        .unwrap_or(run.duration_s);
    let mut requests = series(|s| s.requests);
    if requests.is_empty() {
        requests = secs
            .iter()
            .map(|(t, h)| (f64::from(*t), h.len() as f64))
            .collect();
    }
    let mut panels = vec![
        Panel {
            title: "Latency per second".into(),
            y_desc: "ms".into(),
            series: vec![
                Series::new("p50", PALETTE[2], pick(|s| s.p50_ms, 0.5)),
                Series::new("p90", PALETTE[3], pick(|s| s.p90_ms, 0.9)),
                Series::new("p99", PALETTE[1], pick(|s| s.p99_ms, 0.99)),
            ],
        },
        Panel {
            title: "Requests per second".into(),
            y_desc: "req/s".into(),
            series: vec![Series::new("requests/s", PALETTE[0], requests)],
        },
        Panel {
            title: "Errors per second".into(),
            y_desc: "errors/s".into(),
            series: vec![Series::new("errors/s", PALETTE[1], series(|s| s.errors))],
        },
        Panel {
            title: "Active connections (VUs)".into(),
            y_desc: "active".into(),
            series: vec![Series::new("active", PALETTE[4], series(|s| s.active))],
        },
    ];
    // The watched server (`--watch`), right under the latency on the same time axis.
    let (cpu, retrans) = (series(|s| s.server_cpu_pct), series(|s| s.server_retrans));
    if !cpu.is_empty() || !retrans.is_empty() {
        panels.insert(
            1,
            Panel {
                title: "Watched server (--watch)".into(),
                y_desc: "% / per s".into(),
                series: vec![
                    Series::new("server CPU %", PALETTE[0], cpu),
                    Series::new("server retransmits/s", PALETTE[1], retrans),
                ],
            },
        );
    }
    (panels, x_max)
}

pub(super) fn load_section(
    out: &mut String,
    run: &RunRecord,
    load: &Value,
    hist: &Histograms,
) -> Result<(), ReportError> {
    out.push_str("<h3>Load</h3>\n");
    super::html_diagnose::ramp_table(out, load);
    let n = |k: &str| num(load, &[k]).map(|v| fmt_value(v, ""));
    kv(
        out,
        vec![
            ("model", text_at(load, &["model"])),
            ("requests", n("requests")),
            ("ok", n("ok")),
            (
                "errors",
                rundata::count(load.get("errors")).map(|v| fmt_value(v, "")),
            ),
            ("dropped", n("dropped")),
            ("incomplete", n("incomplete")),
            (
                "duration",
                num(load, &["duration_s"]).map(|v| format!("{v:.1} s")),
            ),
            (
                "throughput",
                num(load, &["rps"]).map(|v| fmt_value(v, "req/s")),
            ),
            ("bytes", n("bytes")),
            (
                "client CPU",
                num(load, &["client_cpu_pct"]).map(|v| format!("{v:.0}%")),
            ),
        ],
    );
    super::html_capacity::section(out, load)?;
    let mut rows = Vec::new();
    for (name, key) in [
        ("latency", "latency_ms"),
        ("service time", "service_time_ms"),
        ("connect", "connect_ms"),
    ] {
        if let Some(p) = load.get(key).filter(|p| p.is_object()) {
            rows.push(pct_row(name, p, "ms"));
        }
    }
    table(out, "latency", &pct_header("ms"), &rows);
    let (panels, x_max) = load_panels(run, hist);
    if panels
        .iter()
        .any(|p| p.series.iter().any(|s| !s.points.is_empty()))
    {
        figure(out, &charts::time_panels(&panels, x_max)?);
    }
    // Percentile distribution: overall and per endpoint.
    let mut curves = Vec::new();
    let overall = match hist.totals.get("latency") {
        Some(h) => hist_curve(h, 1e6),
        None => load
            .get("latency_ms")
            .map(summary_curve)
            .unwrap_or_default(),
    };
    curves.push(Series::new("all endpoints", PALETTE[0], overall));
    let endpoints: Vec<&Value> = load
        .get("endpoints")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    for (i, ep) in endpoints.iter().enumerate() {
        let name = text_at(ep, &["name"]).unwrap_or_default();
        let curve = match hist.totals.get(&format!("latency:{name}")) {
            Some(h) => hist_curve(h, 1e6),
            None => ep.get("latency_ms").map(summary_curve).unwrap_or_default(),
        };
        curves.push(Series::new(name, PALETTE[(i + 1) % PALETTE.len()], curve).dashed());
    }
    if curves.iter().any(|c| !c.points.is_empty()) {
        figure(out, &charts::nines(&curves, "ms", "Latency by percentile")?);
    }
    if !endpoints.is_empty() {
        out.push_str("<h4>Per endpoint</h4>\n");
        let rows: Vec<Vec<String>> = endpoints
            .iter()
            .map(|ep| {
                let mut r = vec![
                    text_at(ep, &["name"]).unwrap_or_default(),
                    text_at(ep, &["requests"]).unwrap_or_default(),
                    text_at(ep, &["ok"]).unwrap_or_default(),
                ];
                let p = ep.get("latency_ms").cloned().unwrap_or(Value::Null);
                r.extend(pct_row("", &p, "ms").into_iter().skip(1));
                r
            })
            .collect();
        let mut header = vec!["endpoint", "requests", "ok"];
        header.extend(PCT.iter().map(|(n, _)| *n));
        table(out, "endpoints", &header, &rows);
    }
    if let Some(errors) = load.get("errors").and_then(Value::as_object) {
        let rows: Vec<Vec<String>> = errors
            .iter()
            .filter(|(_, v)| v.as_f64().unwrap_or(0.0) > 0.0)
            .map(|(k, v)| vec![k.clone(), value_text(v)])
            .collect();
        if !rows.is_empty() {
            table(out, "errors", &["error", "count"], &rows);
        }
    }
    if let Some(th) = load.get("thresholds").and_then(Value::as_array) {
        let rows: Vec<Vec<String>> = th
            .iter()
            .map(|t| {
                vec![
                    text_at(t, &["expr"]).unwrap_or_default(),
                    match t.get("ok").and_then(Value::as_bool) {
                        Some(true) => "pass".into(),
                        Some(false) => "FAIL".into(),
                        None => String::new(),
                    },
                    text_at(t, &["value"]).unwrap_or_default(),
                ]
            })
            .collect();
        if !rows.is_empty() {
            table(out, "thresholds", &["threshold", "result", "value"], &rows);
        }
    }
    Ok(())
}

/// Per-second panels of a disk run: latency p50/p99 per direction, IOPS.
pub fn disk_panels(hist: &Histograms) -> (Vec<Panel>, f64) {
    let mut lat = Vec::new();
    let mut iops = Vec::new();
    let mut x_max: f64 = 1.0;
    for (i, dir) in ["read", "write", "fsync"].iter().enumerate() {
        let secs = hist.per_second(dir);
        if secs.is_empty() {
            continue;
        }
        let color = PALETTE[i];
        let q = |q: f64| -> Vec<(f64, f64)> {
            secs.iter()
                .filter(|(_, h)| !h.is_empty())
                .map(|(t, h)| (f64::from(*t), h.value_at_quantile(q) as f64 / 1e3))
                .collect()
        };
        lat.push(Series::new(format!("{dir} p50"), color, q(0.5)).dashed());
        lat.push(Series::new(format!("{dir} p99"), color, q(0.99)));
        iops.push(Series::new(
            format!("{dir} I/Os"),
            color,
            secs.iter()
                .map(|(t, h)| (f64::from(*t), h.len() as f64))
                .collect(),
        ));
        x_max = x_max.max(
            secs.iter()
                .map(|(t, _)| f64::from(*t) + 1.0)
                .fold(0.0, f64::max),
        );
    }
    let panels = vec![
        Panel {
            title: "I/O latency per second".into(),
            y_desc: "µs".into(),
            series: lat,
        },
        Panel {
            title: "I/Os per second".into(),
            y_desc: "IOPS".into(),
            series: iops,
        },
    ];
    (panels, x_max)
}

fn disk_section(
    out: &mut String,
    _run: &RunRecord,
    disk: &Value,
    hist: &Histograms,
) -> Result<(), ReportError> {
    out.push_str("<h3>Disk</h3>\n");
    kv(
        out,
        vec![
            ("path", text_at(disk, &["path"])),
            ("pattern", text_at(disk, &["pattern"])),
            ("block size", text_at(disk, &["bs"])),
            ("queue depth", text_at(disk, &["iodepth"])),
            ("O_DIRECT", text_at(disk, &["direct"])),
            ("fdatasync", text_at(disk, &["fsync"])),
            ("engine", text_at(disk, &["engine"])),
        ],
    );
    let mut rows = Vec::new();
    let mut curves = Vec::new();
    for (i, dir) in ["read", "write", "fsync"].iter().enumerate() {
        let Some(d) = disk.get(dir).filter(|d| d.is_object()) else {
            continue;
        };
        let mut row = pct_row(dir, d.get("lat_us").unwrap_or(&Value::Null), "µs");
        row.push(
            num(d, &["iops"])
                .or_else(|| num(d, &["count"]))
                .map(|v| fmt_value(v, ""))
                .unwrap_or_default(),
        );
        row.push(
            num(d, &["bw_mib_s"])
                .map(|v| fmt_value(v, "MiB/s"))
                .unwrap_or_default(),
        );
        rows.push(row);
        let curve = match hist.totals.get(*dir) {
            Some(h) => hist_curve(h, 1e3),
            None => d.get("lat_us").map(summary_curve).unwrap_or_default(),
        };
        curves.push(Series::new(*dir, PALETTE[i], curve));
    }
    let mut header = pct_header("µs");
    header.extend(["IOPS (fsyncs)", "bandwidth"]);
    table(out, "disk", &header, &rows);
    let (panels, x_max) = disk_panels(hist);
    if panels.iter().any(|p| !p.series.is_empty()) {
        figure(out, &charts::time_panels(&panels, x_max)?);
    }
    if curves.iter().any(|c| !c.points.is_empty()) {
        figure(
            out,
            &charts::nines(&curves, "µs", "I/O latency by percentile")?,
        );
    }
    Ok(())
}
