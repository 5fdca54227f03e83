//! `latscope compare`: stored runs side by side. For every percentile, throughput
//! and error count: each run's value, its ratio to the first run, and whether the
//! difference from the first run is statistically meaningful.
//!
//! Significance is judged per DESIGN.md on blocks, never on raw requests: load and
//! disk runs contribute one value per full second (that second's p99 from its stored
//! histogram, its request or I/O count, its errors); probe runs contribute their
//! samples, which are independent sequential requests. The test is
//! [`crate::stats::compare::mann_whitney_u`]. Sections (probe fresh/reused, load
//! overall and per endpoint, disk read/write/fsync) are matched across runs by name,
//! so a probe of the proxy compares with a probe of the origin, and a disk run made
//! on another host with this one.

use serde::Serialize;

use crate::record::RunRecord;
use crate::schema::{LoadPart, Summary};
use crate::stats::compare::{ALPHA, MIN_SAMPLES, TEST_NAME};
use crate::stats::Percentiles;

use super::compare_diagnose::{diagnose_sections, findings_changes, FindingsChange};
use super::compare_tail::{test, TailData, TAIL_FROM};
use super::compare_verdict::matters;
use super::html_probe::{series as probe_series, stat};
use super::rundata::{self, Histograms, RunDataError, PHASES};

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
}

/// A run, as the comparison names it.
#[derive(Debug, Clone, Serialize)]
pub struct RunRef {
    pub id: String,
    pub label: Option<String>,
    pub kind: String,
    pub target: String,
    pub started_at_ms: i64,
    pub duration_s: f64,
    pub hostname: String,
    /// A merged run: how many shards from which hosts (`latscope merge`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged: Option<String>,
}

/// The significance test of one run against the first, for one metric.
#[derive(Debug, Clone, Serialize)]
pub struct Test {
    /// What was tested, e.g. "per-second p99" or "probe samples".
    pub basis: String,
    /// Blocks or samples of the first run and of this one.
    pub n: [usize; 2],
    /// Two-sided p value; `None` when there were too few blocks.
    pub p_value: Option<f64>,
    /// p < alpha and the difference is not negligible; `None` when no verdict was
    /// possible.
    pub significant: Option<bool>,
    /// The medians differ by less than a difference that matters (5 % and 0.1 ms, or
    /// 5 µs for disk latencies): even a "significant" p does not make it a difference.
    pub negligible: bool,
    /// The blocks shifted significantly, but the row's value moved the other way (e.g.
    /// a p99 that fell while the samples shifted up): the test does not speak for
    /// this row.
    pub against_test: bool,
    /// Not significant (or no verdict) although the value moved by 2× or more: the
    /// test cannot tell, which is not "no difference".
    pub inconclusive: bool,
    /// Tail rows (p99 and up of load and disk runs): values over the threshold in
    /// the baseline and in this run ([`super::compare_tail`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub over: Option<[u64; 2]>,
    /// Tail rows: all values of the baseline and of this run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub of: Option<[u64; 2]>,
    /// Tail rows: the threshold, in the row's unit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// Tail rows: how much the exceedances bunch into seconds (1: not at all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dispersion: Option<f64>,
}

/// Whether a ratio is large enough (2× either way) that "not significant" must not
/// read as "no difference".
pub fn large_ratio(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) if a > 0.0 && b > 0.0 => b / a >= 2.0 || a / b >= 2.0,
        (Some(a), Some(b)) => (a == 0.0) != (b == 0.0),
        _ => false,
    }
}

/// Whether the row's change from `a` to `b` goes the way the test found the blocks
/// shift (`prob_b_greater` above ½: up, below: down). A row that did not move, or
/// moved against the shift, is not made significant by the test of the blocks.
pub fn moved_with_test(a: Option<f64>, b: Option<f64>, prob_b_greater: f64) -> bool {
    match (a, b) {
        (Some(a), Some(b)) if b > a => prob_b_greater > 0.5,
        (Some(a), Some(b)) if b < a => prob_b_greater < 0.5,
        (Some(_), Some(_)) => false,
        // No row value to check against: the test's verdict stands.
        _ => true,
    }
}

/// Whether the change from `a` to `b` is too small to matter, whatever the test says.
pub fn negligible(a: Option<f64>, b: Option<f64>, unit: &str) -> bool {
    let (Some(a), Some(b)) = (a, b) else {
        return false;
    };
    let floor = match unit {
        "ms" => 0.1,
        "µs" | "us" => 5.0,
        _ => 0.0,
    };
    let d = (a - b).abs();
    d < floor || d < 0.05 * a.abs().max(b.abs())
}

/// One metric across the runs.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub metric: String,
    pub unit: String,
    pub better: Better,
    /// One per run; `None` when the run lacks it.
    pub values: Vec<Option<f64>>,
    /// value / the baseline run's value; `None` for the baseline or when undefined.
    pub ratios: Vec<Option<f64>>,
    /// The test against the baseline; `None` for the baseline or when either run
    /// has no blocks or samples for this metric.
    pub tests: Vec<Option<Test>>,
    /// Per run: whether its change from the baseline matters (significant, 2× or
    /// more, or a clear move of an untested row; [`super::compare_verdict::matters`]).
    /// The text shows only rows where one run's does, unless `--all`.
    pub notable: Vec<bool>,
}

/// A group of metrics: "load: all endpoints", "probe: fresh connections", "disk: read".
#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub name: String,
    /// Index of the run the others are compared with: the first run that has this
    /// section (run 0 unless it lacks the section, as a load run lacks a probe's).
    pub baseline: usize,
    /// Indices of the runs that have this section.
    pub present: Vec<usize>,
    pub rows: Vec<Row>,
}

/// The whole comparison (`latscope compare --json`).
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub runs: Vec<RunRef>,
    /// The significance test and on what it runs.
    pub test: String,
    pub alpha: f64,
    pub min_blocks: usize,
    pub sections: Vec<Section>,
    /// Each run's findings against the first run's: appeared, gone, kept.
    pub findings: Vec<FindingsChange>,
}

/// What one run says about one metric: its value and the blocks to test on.
#[derive(Debug, Clone, Default)]
pub(super) struct Metric {
    name: String,
    unit: &'static str,
    better: Option<Better>,
    value: Option<f64>,
    /// (basis, values) for the test.
    pub(super) blocks: Option<(String, Vec<f64>)>,
    /// (quantile, per-second histograms): tested on exceedances (tail rows; the
    /// ramp's steps).
    pub(super) tail: Option<(f64, TailData)>,
}

pub(super) fn metric(name: &str, unit: &'static str, better: Better, value: Option<f64>) -> Metric {
    Metric {
        name: name.to_string(),
        unit,
        better: Some(better),
        value,
        blocks: None,
        tail: None,
    }
}

impl Metric {
    pub(super) fn blocks(mut self, basis: impl Into<String>, values: Vec<f64>) -> Metric {
        if !values.is_empty() {
            self.blocks = Some((basis.into(), values));
        }
        self
    }
}

/// One run's sections: (section name, metrics).
pub(super) type RunSections = Vec<(String, Vec<Metric>)>;

/// The percentiles compared for latencies: (name, summary value, quantile).
type Pick = fn(&Percentiles) -> f64;
const PERCENTILES: [(&str, Pick, f64); 6] = [
    ("p50", |p| p.p50, 0.50),
    ("p90", |p| p.p90, 0.90),
    ("p99", |p| p.p99, 0.99),
    ("p99.9", |p| p.p999, 0.999),
    ("p99.99", |p| p.p9999, 0.9999),
    ("max", |p| p.max, 1.0),
];

/// Builds the comparison of `runs` (the first that has a section is its baseline).
pub fn compare(runs: &[RunRecord]) -> Result<Comparison, RunDataError> {
    let mut per_run: Vec<RunSections> = Vec::with_capacity(runs.len());
    for run in runs {
        let hist = Histograms::decode(run)?;
        let mut sections = Vec::new();
        if let Some(doc) = rundata::doc(run) {
            sections.extend(probe_sections(&doc));
            match &doc {
                // A diagnose run's load is a ramp: compared step by step.
                Summary::Diagnose(d) => sections.extend(diagnose_sections(run, d, &hist)),
                _ => sections.extend(load_sections(run, &doc, &hist)),
            }
            sections.extend(disk_sections(run, &doc, &hist));
        }
        if run.kind == "page" {
            sections.extend(super::compare_page::page_sections(run));
        }
        per_run.push(sections);
    }
    Ok(Comparison {
        runs: runs
            .iter()
            .map(|r| RunRef {
                id: r.id.clone(),
                label: r.label.clone(),
                kind: r.kind.clone(),
                target: r.target.clone(),
                started_at_ms: r.started_at_ms,
                duration_s: r.duration_s,
                hostname: r.env.hostname.clone(),
                merged: super::rundata::merged_from(r),
            })
            .collect(),
        test: format!(
            "{TEST_NAME} against the first run that has the section, on per-second blocks for load and disk \
             runs (each full second's percentile, request or I/O count, errors) and on \
             the probe's samples (independent sequential requests); never on raw requests. \
             Tail rows (p99 and up) with per-second histograms: exceedance counts over \
             the geometric midpoint of the runs' values, binomial split by run size, variance scaled by the \
             per-second dispersion"
        ),
        alpha: ALPHA,
        min_blocks: MIN_SAMPLES,
        sections: align(&per_run),
        findings: findings_changes(runs),
    })
}

/// Matches sections and metrics by name across runs, in order of first appearance.
fn align(per_run: &[RunSections]) -> Vec<Section> {
    let mut names: Vec<String> = Vec::new();
    for run in per_run {
        for (s, _) in run {
            if !names.contains(s) {
                names.push(s.clone());
            }
        }
    }
    let mut sections = Vec::new();
    for name in names {
        let of_run: Vec<Option<&Vec<Metric>>> = per_run
            .iter()
            .map(|r| r.iter().find(|(s, _)| *s == name).map(|(_, m)| m))
            .collect();
        let present: Vec<usize> = (0..of_run.len()).filter(|i| of_run[*i].is_some()).collect();
        let baseline = present.first().copied().unwrap_or(0);
        let mut metrics: Vec<(String, &'static str, Better)> = Vec::new();
        for m in of_run.iter().flatten().flat_map(|ms| ms.iter()) {
            if !metrics.iter().any(|(n, _, _)| *n == m.name) {
                metrics.push((m.name.clone(), m.unit, m.better.unwrap_or(Better::Lower)));
            }
        }
        let mut rows = Vec::new();
        for (metric, unit, better) in metrics {
            let cells: Vec<Option<&Metric>> = of_run
                .iter()
                .map(|ms| ms.and_then(|ms| ms.iter().find(|m| m.name == metric)))
                .collect();
            // `+ 0.0` turns a negative zero (an empty float sum is -0.0) into 0.
            let values: Vec<Option<f64>> = cells
                .iter()
                .map(|c| c.and_then(|m| m.value).map(|v| v + 0.0))
                .collect();
            // A latency that is zero or missing everywhere (dns on reused
            // connections) says nothing; zero errors do.
            let zero_says_nothing = better == Better::Lower && !unit.is_empty();
            if values
                .iter()
                .all(|v| v.is_none_or(|x| zero_says_nothing && x == 0.0))
            {
                continue;
            }
            let base = values[baseline];
            let ratios = values
                .iter()
                .enumerate()
                .map(|(i, v)| match (base, v) {
                    _ if i == baseline => None,
                    (Some(b), Some(v)) if b != 0.0 => Some(v / b),
                    _ => None,
                })
                .collect();
            let tests: Vec<Option<Test>> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if i == baseline {
                        return None;
                    }
                    let (a, b) = (cells[baseline]?, (*c)?);
                    test(&metric, a, b, values[baseline], values[i], unit)
                })
                .collect();
            let notable = (0..values.len())
                .map(|i| {
                    let t: &Option<Test> = &tests[i];
                    s_present(&of_run, i) && matters(&values, t.as_ref(), unit, baseline, i)
                })
                .collect();
            rows.push(Row {
                metric,
                unit: unit.to_string(),
                better,
                values,
                ratios,
                tests,
                notable,
            });
        }
        if !rows.is_empty() {
            sections.push(Section {
                name,
                baseline,
                present,
                rows,
            });
        }
    }
    sections
}

/// Whether run `i` has the section at all.
fn s_present(of_run: &[Option<&Vec<Metric>>], i: usize) -> bool {
    of_run.get(i).is_some_and(Option::is_some)
}

fn probe_sections(doc: &Summary) -> RunSections {
    let results = doc.probes();
    let many = results.len() > 1;
    let mut out = Vec::new();
    for (i, result) in results.iter().enumerate() {
        for (series, title) in [
            ("fresh", "fresh connections"),
            ("resumed", "new connections resuming TLS sessions"),
            ("reused", "reused connection"),
        ] {
            let s = probe_series(result, series);
            // A probe without a kept-alive series stores `reused: null`: its section
            // is there, empty (a run without TLS resumption has no `resumed` at all).
            if s.is_none() && series != "reused" {
                continue;
            }
            let mut metrics = Vec::new();
            for phase in PHASES {
                let samples = rundata::samples(result, series, phase);
                for name in ["p50", "p90", "p99"] {
                    metrics.push(
                        metric(
                            &format!("{phase} {name}"),
                            "ms",
                            Better::Lower,
                            s.map(|s| stat(s.phases_ms.get(phase), name)),
                        )
                        .blocks(format!("probe samples of {phase}"), samples.clone()),
                    );
                }
            }
            let name = if many {
                format!("probe URL {}: {title}", i + 1)
            } else {
                format!("probe: {title}")
            };
            out.push((name, metrics));
        }
    }
    out
}

/// Per-second values of one quantile (1.0 = max) in `unit_ns` units.
fn per_second_quantile(
    seconds: &[(u32, &hdrhistogram::Histogram<u64>)],
    q: f64,
    unit_ns: f64,
) -> Vec<f64> {
    seconds
        .iter()
        .filter(|(_, h)| !h.is_empty())
        .map(|(_, h)| {
            let v = if q >= 1.0 {
                h.max()
            } else {
                h.value_at_quantile(q)
            };
            v as f64 / unit_ns
        })
        .collect()
}

/// Keeps only full seconds: a last second cut short by the end of the run would look
/// like a drop in throughput.
pub(super) fn full_seconds<T>(rows: Vec<(u32, T)>, duration_s: f64) -> Vec<(u32, T)> {
    let full = duration_s.floor();
    if full < 1.0 {
        return rows;
    }
    rows.into_iter()
        .filter(|(t, _)| (*t as f64) < full)
        .collect()
}

/// The seconds a comparison uses: a `--find-max` run's capacity window, else the
/// run's full seconds.
fn keep_seconds<T>(
    rows: Vec<(u32, T)>,
    window: Option<(u32, u32)>,
    duration_s: f64,
) -> Vec<(u32, T)> {
    match window {
        Some(w) => rundata::in_window(rows, w),
        None => full_seconds(rows, duration_s),
    }
}

/// The percentile rows of one latency: per-second blocks for all, and the
/// per-second histograms for the tail rows (p99 and up) to test on exceedances.
fn latency_metrics(
    summary: &Percentiles,
    unit: &'static str,
    seconds: &[(u32, &hdrhistogram::Histogram<u64>)],
    unit_ns: f64,
    items: &'static str,
) -> Vec<Metric> {
    let tail = (!seconds.is_empty()).then(|| TailData {
        seconds: std::rc::Rc::new(seconds.iter().map(|(_, h)| (*h).clone()).collect()),
        unit_ns,
        items,
    });
    PERCENTILES
        .iter()
        .map(|(name, pick, q)| {
            let mut m = metric(name, unit, Better::Lower, Some(pick(summary))).blocks(
                format!("per-second {name}"),
                per_second_quantile(seconds, *q, unit_ns),
            );
            if *q >= TAIL_FROM {
                m.tail = tail.clone().map(|t| (*q, t));
            }
            m
        })
        .collect()
}

fn load_sections(run: &RunRecord, doc: &Summary, hist: &Histograms) -> RunSections {
    let Some(load) = doc.load().and_then(LoadPart::run) else {
        return Vec::new();
    };
    let duration = Some(load.duration_s)
        .filter(|d| *d > 0.0)
        .unwrap_or(run.duration_s);
    let timeline: Vec<(u32, rundata::Second)> = rundata::timeline(run)
        .into_iter()
        .map(|s| (s.t, s))
        .collect();
    // A --find-max run's numbers are its capacity step's: so are its blocks.
    let window = load.capacity_window();
    let timeline = keep_seconds(timeline, window, duration);
    let seconds = keep_seconds(hist.per_second("latency"), window, duration);
    let mut all = latency_metrics(&load.latency_ms, "ms", &seconds, 1e6, "requests");
    if seconds.is_empty() {
        // No per-second histograms: fall back on the timeline's percentiles.
        for m in all.iter_mut() {
            let pick: Option<fn(&rundata::Second) -> Option<f64>> = match m.name.as_str() {
                "p50" => Some(|s| s.p50_ms),
                "p90" => Some(|s| s.p90_ms),
                "p99" => Some(|s| s.p99_ms),
                "max" => Some(|s| s.max_ms),
                _ => None,
            };
            if let Some(pick) = pick {
                let v: Vec<f64> = timeline.iter().filter_map(|(_, s)| pick(s)).collect();
                *m = std::mem::take(m).blocks(format!("per-second {} (timeline)", m.name), v);
            }
        }
    }
    let rps_blocks: Vec<f64> = if timeline.iter().any(|(_, s)| s.requests.is_some()) {
        timeline.iter().filter_map(|(_, s)| s.requests).collect()
    } else {
        seconds.iter().map(|(_, h)| h.len() as f64).collect()
    };
    all.push(
        metric("requests/s", "req/s", Better::Higher, Some(load.rps))
            .blocks("per-second requests", rps_blocks),
    );
    let errors = Some(load.error_count() as f64);
    let err_blocks: Vec<f64> = timeline.iter().filter_map(|(_, s)| s.errors).collect();
    all.push(metric("errors", "", Better::Lower, errors).blocks("per-second errors", err_blocks));
    // What the responses said about a cache: the row that explains a throughput that
    // went up a thousandfold when a cache was switched on (absent when no response
    // said anything about a cache).
    all.push(metric(
        "cache hit ratio",
        "share",
        Better::Higher,
        load.cache.hit_ratio,
    ));
    // A scenario's checks (absent without any).
    let share = |c: &crate::schema::load::ChecksDoc| c.passed as f64 / c.total.max(1) as f64;
    all.push(metric(
        "checks passed",
        "share",
        Better::Higher,
        load.checks.as_ref().map(share),
    ));
    if let Some(cap) = &load.capacity {
        // Rates and connections are different answers: one row each.
        let (name, unit) = match cap.unit.as_str() {
            "connections" => ("capacity (closed)", "connections"),
            _ => ("capacity (open)", "req/s"),
        };
        all.push(metric(name, unit, Better::Higher, cap.level));
    }
    let mut out = vec![("load: all endpoints".to_string(), all)];
    let single = load.endpoints.len() == 1;
    for ep in &load.endpoints {
        let name = &ep.name;
        // Per-endpoint seconds are stored with two or more endpoints; a single
        // endpoint's seconds are the run's.
        let hname = if single {
            "latency".to_string()
        } else {
            format!("latency:{name}")
        };
        let seconds = keep_seconds(hist.per_second(&hname), window, duration);
        let mut metrics = latency_metrics(&ep.latency_ms, "ms", &seconds, 1e6, "requests");
        let requests = ep.requests as f64;
        let rps = Some(requests)
            .filter(|_| duration > 0.0)
            .map(|r| r / duration);
        metrics.push(metric("requests/s", "req/s", Better::Higher, rps).blocks(
            "per-second requests",
            seconds.iter().map(|(_, h)| h.len() as f64).collect(),
        ));
        let errors = Some((requests - ep.ok as f64).max(0.0));
        metrics.push(metric("errors", "", Better::Lower, errors));
        metrics.push(metric(
            "checks passed",
            "share",
            Better::Higher,
            ep.checks.as_ref().map(share),
        ));
        out.push((format!("load endpoint: {name}"), metrics));
    }
    out
}

fn disk_sections(run: &RunRecord, doc: &Summary, hist: &Histograms) -> RunSections {
    let Some(disk) = doc.disk() else {
        return Vec::new();
    };
    let duration = Some(disk.duration_s)
        .filter(|d| *d > 0.0)
        .unwrap_or(run.duration_s);
    let mut out = Vec::new();
    let mut dirs = vec![("read", &disk.read.lat_us), ("write", &disk.write.lat_us)];
    let fsync = disk.fsync.measured();
    if let Some((_, lat)) = fsync {
        dirs.push(("fsync", lat));
    }
    for (dir, lat) in dirs {
        let seconds = full_seconds(hist.per_second(dir), duration);
        let mut metrics = latency_metrics(lat, "µs", &seconds, 1e3, "I/Os");
        let counts: Vec<f64> = seconds.iter().map(|(_, h)| h.len() as f64).collect();
        let d = if dir == "read" {
            &disk.read
        } else {
            &disk.write
        };
        match fsync.filter(|_| dir == "fsync") {
            Some((count, _)) => {
                metrics.push(metric("count", "", Better::Higher, Some(count as f64)));
            }
            None => {
                metrics.push(
                    metric("IOPS", "IOPS", Better::Higher, Some(d.iops))
                        .blocks("per-second I/Os", counts),
                );
                metrics.push(metric(
                    "bandwidth",
                    "MiB/s",
                    Better::Higher,
                    Some(d.bw_mib_s),
                ));
            }
        }
        out.push((format!("disk: {dir}"), metrics));
    }
    out
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
