//! The HTML report's section for one run, by kind: load (timeline panels, percentile
//! distribution, per-endpoint table), probe (phase bars and table, sample
//! distribution, response headers), disk (per-direction tables, per-second panels,
//! distribution), each after the run's findings. A diagnose run has a section per URL,
//! verdict first (`html_diagnose`).

use hdrhistogram::Histogram;
use serde_json::Value;

use crate::diagnose::Finding;
use crate::record::RunRecord;
use crate::schema::disk::DirDoc;
use crate::schema::{DiskDoc, LoadPart, Summary};
use crate::stats::Percentiles;

use super::charts::{self, Panel, Series, PALETTE};
use super::compare_text::fmt_value;
use super::html::{esc, figure, table, value_text, ReportError};
use super::html_verdict;
use super::rundata::{self, Histograms};

pub use super::html_overlay::overlay;
pub use super::html_probe::phase_bar;

/// One percentile of a summary.
type Pick = fn(&Percentiles) -> f64;

/// Latency summary columns shown in tables: (header, value).
const PCT: [(&str, Pick); 8] = [
    ("min", |p| p.min),
    ("mean", |p| p.mean),
    ("p50", |p| p.p50),
    ("p90", |p| p.p90),
    ("p99", |p| p.p99),
    ("p99.9", |p| p.p999),
    ("p99.99", |p| p.p9999),
    ("max", |p| p.max),
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
pub fn summary_curve(p: &Percentiles) -> Vec<(f64, f64)> {
    vec![
        (0.0, p.min),
        (0.301, p.p50),
        (1.0, p.p90),
        (2.0, p.p99),
        (3.0, p.p999),
        (4.0, p.p9999),
    ]
}

/// A curve from a probe phase's statistics (min, p50, p90, p99).
pub fn phase_curve(p: &crate::probe::sample::PhaseStats) -> Vec<(f64, f64)> {
    vec![(0.0, p.min), (0.301, p.p50), (1.0, p.p90), (2.0, p.p99)]
}

/// A `min … max` table row from percentiles.
pub(super) fn pct_row(name: &str, p: &Percentiles, unit: &str) -> Vec<String> {
    let mut row = vec![name.to_string()];
    for (_, v) in PCT {
        row.push(fmt_value(v(p), unit));
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

/// A typed field as the report shows it: as its JSON reads (strings as they are,
/// fractions to 3 places, lists joined); None for null.
pub(super) fn text<T: serde::Serialize>(v: &T) -> Option<String> {
    shown(&crate::schema::to_value(v))
}

fn shown(v: &Value) -> Option<String> {
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
    let doc = rundata::doc(run);
    // `run.findings` is the record's own copy; a run stored without it keeps them in
    // its summary.
    if let Some(page) = doc.as_ref().and_then(Summary::page) {
        super::html_page::verdict(out, page);
    }
    let list: Vec<Finding> = crate::schema::from_value(&run.findings)
        .ok()
        .filter(|f: &Vec<Finding>| !f.is_empty())
        .or_else(|| Some(doc.as_ref()?.findings().into_iter().cloned().collect()))
        .unwrap_or_default();
    html_verdict::findings(
        out,
        &list,
        &format!("{}-findings", html_verdict::run_anchor(run)),
    );
    let results = doc.as_ref().map(Summary::probes).unwrap_or_default();
    for (i, result) in results.iter().enumerate() {
        if results.len() > 1 {
            let url = match result.target.as_str() {
                "" => format!("URL {}", i + 1),
                t => t.to_string(),
            };
            out.push_str(&format!("<h3>Probe {}</h3>\n", esc(&url)));
        } else {
            out.push_str("<h3>Probe</h3>\n");
        }
        super::html_probe::probe(out, result)?;
    }
    if let Some(load) = doc.as_ref().and_then(Summary::load) {
        load_section(out, run, load, &hist)?;
    }
    if let Some(disk) = doc.as_ref().and_then(Summary::disk) {
        disk_section(out, disk, &hist)?;
    }
    if let Some(page) = doc.as_ref().and_then(Summary::page) {
        super::html_page::details(out, page);
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
    load: LoadPart<'_>,
    hist: &Histograms,
) -> Result<(), ReportError> {
    out.push_str("<h3>Load</h3>\n");
    if let Some(ramp) = load.ramp() {
        super::html_diagnose::ramp_table(out, ramp);
    }
    let n = |v: u64| Some(fmt_value(v as f64, ""));
    let l = load.run();
    let (model, cpu, errors) = match load {
        LoadPart::Run(l) => (&l.model, Some(l.client_cpu_pct), &l.errors),
        LoadPart::Ramp(r) => (&r.model, r.client_cpu_pct, &r.errors),
    };
    kv(
        out,
        vec![
            ("model", text(model)),
            ("requests", n(load.requests())),
            ("ok", l.and_then(|l| n(l.ok))),
            ("errors", n(load.errors())),
            ("dropped", l.and_then(|l| n(l.dropped))),
            ("incomplete", l.and_then(|l| n(l.incomplete))),
            ("duration", l.map(|l| format!("{:.1} s", l.duration_s))),
            ("throughput", l.map(|l| fmt_value(l.rps, "req/s"))),
            ("bytes", l.and_then(|l| n(l.bytes))),
            ("client CPU", cpu.map(|v| format!("{v:.0}%"))),
        ],
    );
    if let Some(l) = l {
        super::html_capacity::section(out, l)?;
    }
    let mut rows = Vec::new();
    if let Some(l) = l {
        for (name, p) in [
            ("latency", Some(&l.latency_ms)),
            ("service time", l.service_time_ms.as_ref()),
            ("connect", Some(&l.connect_ms)),
        ] {
            if let Some(p) = p {
                rows.push(pct_row(name, p, "ms"));
            }
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
        None => l.map(|l| summary_curve(&l.latency_ms)).unwrap_or_default(),
    };
    curves.push(Series::new("all endpoints", PALETTE[0], overall));
    let endpoints = l.map(|l| l.endpoints.as_slice()).unwrap_or_default();
    for (i, ep) in endpoints.iter().enumerate() {
        let curve = match hist.totals.get(&format!("latency:{}", ep.name)) {
            Some(h) => hist_curve(h, 1e6),
            None => summary_curve(&ep.latency_ms),
        };
        curves.push(Series::new(ep.name.clone(), PALETTE[(i + 1) % PALETTE.len()], curve).dashed());
    }
    if curves.iter().any(|c| !c.points.is_empty()) {
        figure(out, &charts::nines(&curves, "ms", "Latency by percentile")?);
    }
    if !endpoints.is_empty() {
        out.push_str("<h4>Per endpoint</h4>\n");
        // A scenario's checks: passed of judged, per endpoint.
        let checks = endpoints.iter().any(|ep| ep.checks.is_some());
        let rows: Vec<Vec<String>> = endpoints
            .iter()
            .map(|ep| {
                let mut r = vec![ep.name.clone(), ep.requests.to_string(), ep.ok.to_string()];
                if checks {
                    r.push(ep.checks.as_ref().map_or("—".into(), |c| {
                        format!("{:.1} % of {}", c.passed_pct, c.total)
                    }));
                }
                r.extend(pct_row("", &ep.latency_ms, "ms").into_iter().skip(1));
                r
            })
            .collect();
        let mut header = vec!["endpoint", "requests", "ok"];
        if checks {
            header.push("checks passed");
        }
        header.extend(PCT.iter().map(|(n, _)| *n));
        table(out, "endpoints", &header, &rows);
    }
    let rows: Vec<Vec<String>> = errors
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| vec![k.clone(), v.to_string()])
        .collect();
    if !rows.is_empty() {
        table(out, "errors", &["error", "count"], &rows);
    }
    let rows: Vec<Vec<String>> = l
        .map(|l| l.thresholds.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|t| {
            vec![
                t.expr.clone(),
                if t.ok { "pass" } else { "FAIL" }.into(),
                text(&t.value).unwrap_or_default(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        table(out, "thresholds", &["threshold", "result", "value"], &rows);
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

/// A disk run's directions as the report shows them: (name, latency µs, IOPS or
/// fdatasyncs, MiB/s).
fn disk_dirs(disk: &DiskDoc) -> Vec<(&'static str, &Percentiles, f64, Option<f64>)> {
    fn dir<'a>(
        name: &'static str,
        d: &'a DirDoc,
    ) -> (&'static str, &'a Percentiles, f64, Option<f64>) {
        (name, &d.lat_us, d.iops, Some(d.bw_mib_s))
    }
    let mut v = vec![dir("read", &disk.read), dir("write", &disk.write)];
    if let Some((count, lat)) = disk.fsync.measured() {
        v.push(("fsync", lat, count as f64, None));
    }
    v
}

fn disk_section(out: &mut String, disk: &DiskDoc, hist: &Histograms) -> Result<(), ReportError> {
    out.push_str("<h3>Disk</h3>\n");
    kv(
        out,
        vec![
            ("path", text(&disk.path)),
            ("pattern", text(&disk.pattern)),
            ("block size", text(&disk.bs)),
            ("queue depth", text(&disk.iodepth)),
            ("O_DIRECT", text(&disk.direct)),
            ("fdatasync", text(&disk.fsync)),
            ("engine", text(&disk.engine)),
        ],
    );
    let mut rows = Vec::new();
    let mut curves = Vec::new();
    for (i, (dir, lat, ios, bw)) in disk_dirs(disk).into_iter().enumerate() {
        let mut row = pct_row(dir, lat, "µs");
        row.push(fmt_value(ios, ""));
        row.push(bw.map(|v| fmt_value(v, "MiB/s")).unwrap_or_default());
        rows.push(row);
        let curve = match hist.totals.get(dir) {
            Some(h) => hist_curve(h, 1e3),
            None => summary_curve(lat),
        };
        curves.push(Series::new(dir, PALETTE[i], curve));
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
