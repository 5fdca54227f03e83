//! The HTML report's overlay of several runs: every run in its own colour on the
//! same axes — load latency (p99 solid, p50 dashed) and requests per second over
//! time, latency by percentile; probe phase bars and sample distributions; disk
//! I/O latency by percentile and IOPS over time.

use crate::record::RunRecord;
use crate::schema::Summary;

use super::charts::{self, run_color, Panel, Series};
use super::compare_text::letter;
use super::html::{figure, ReportError};
use super::html_runs::{hist_curve, phase_bar, phase_curve, sample_curve, summary_curve};
use super::rundata::{self, run_name, Histograms};

/// Appends the overlay charts of `runs`.
pub fn overlay(out: &mut String, runs: &[RunRecord]) -> Result<(), ReportError> {
    let decoded: Vec<Histograms> = runs
        .iter()
        .map(Histograms::decode)
        .collect::<Result<_, _>>()?;
    let name = |i: usize| format!("{} {}", letter(i), run_name(&runs[i]));
    load(out, runs, &decoded, &name)?;
    probe(out, runs, &name)?;
    disk(out, runs, &decoded, &name)?;
    Ok(())
}

fn load(
    out: &mut String,
    runs: &[RunRecord],
    hists: &[Histograms],
    name: &dyn Fn(usize) -> String,
) -> Result<(), ReportError> {
    let mut lat = Vec::new();
    let mut rps = Vec::new();
    let mut errs = Vec::new();
    let mut curves = Vec::new();
    let mut x_max: f64 = 1.0;
    for (i, run) in runs.iter().enumerate() {
        let doc = rundata::doc(run);
        let Some(load) = doc.as_ref().and_then(Summary::load) else {
            continue;
        };
        let (panels, xm) = super::html_runs::load_panels(run, &hists[i]);
        x_max = x_max.max(xm);
        let color = run_color(i);
        let points = |p: usize, s: usize| {
            panels
                .get(p)
                .and_then(|p| p.series.get(s))
                .map(|s| s.points.clone())
                .unwrap_or_default()
        };
        lat.push(Series::new(format!("{} p99", name(i)), color, points(0, 2)));
        lat.push(Series::new(format!("{} p50", name(i)), color, points(0, 0)).dashed());
        rps.push(Series::new(name(i), color, points(1, 0)));
        errs.push(Series::new(name(i), color, points(2, 0)));
        let curve = match hists[i].totals.get("latency") {
            Some(h) => hist_curve(h, 1e6),
            None => load
                .run()
                .map(|l| summary_curve(&l.latency_ms))
                .unwrap_or_default(),
        };
        curves.push(Series::new(name(i), color, curve));
    }
    if curves.is_empty() {
        return Ok(());
    }
    let panels = vec![
        Panel {
            title: "Latency per second (p99 solid, p50 dashed)".into(),
            y_desc: "ms".into(),
            series: lat,
        },
        Panel {
            title: "Requests per second".into(),
            y_desc: "req/s".into(),
            series: rps,
        },
        Panel {
            title: "Errors per second".into(),
            y_desc: "errors/s".into(),
            series: errs,
        },
    ];
    figure(out, &charts::time_panels(&panels, x_max)?);
    figure(
        out,
        &charts::nines(&curves, "ms", "Load latency by percentile, all runs")?,
    );
    Ok(())
}

fn probe(
    out: &mut String,
    runs: &[RunRecord],
    name: &dyn Fn(usize) -> String,
) -> Result<(), ReportError> {
    let mut bars = Vec::new();
    let mut curves = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let doc = rundata::doc(run);
        let results = doc.as_ref().map(Summary::probes).unwrap_or_default();
        let Some(first) = results.first() else {
            continue;
        };
        for series in ["fresh", "resumed", "reused"] {
            if let Some(b) = phase_bar(first, series, "p50", format!("{} {series} p50", name(i))) {
                bars.push(b);
            }
        }
        let samples = rundata::samples(first, "fresh", "ttfb");
        let mut curve = sample_curve(&samples);
        if curve.is_empty() {
            curve = phase_curve(&first.fresh.phases_ms.ttfb);
        }
        curves.push(Series::new(
            format!("{} fresh ttfb", name(i)),
            run_color(i),
            curve,
        ));
    }
    if !bars.is_empty() {
        figure(out, &charts::phase_bars(&bars)?);
    }
    if curves.iter().any(|c| !c.points.is_empty()) {
        figure(
            out,
            &charts::nines(&curves, "ms", "Probe TTFB by percentile, all runs")?,
        );
    }
    Ok(())
}

fn disk(
    out: &mut String,
    runs: &[RunRecord],
    hists: &[Histograms],
    name: &dyn Fn(usize) -> String,
) -> Result<(), ReportError> {
    let mut curves = Vec::new();
    let mut iops = Vec::new();
    let mut x_max: f64 = 1.0;
    for (i, run) in runs.iter().enumerate() {
        let doc = rundata::doc(run);
        let Some(disk) = doc.as_ref().and_then(Summary::disk) else {
            continue;
        };
        for (dir, d) in [("read", &disk.read), ("write", &disk.write)] {
            let curve = match hists[i].totals.get(dir) {
                Some(h) => hist_curve(h, 1e3),
                None => summary_curve(&d.lat_us),
            };
            let s = Series::new(format!("{} {dir}", name(i)), run_color(i), curve);
            curves.push(if dir == "write" { s.dashed() } else { s });
            let secs = hists[i].per_second(dir);
            let pts: Vec<(f64, f64)> = secs
                .iter()
                .map(|(t, h)| (f64::from(*t), h.len() as f64))
                .collect();
            x_max = x_max.max(pts.iter().map(|p| p.0 + 1.0).fold(0.0, f64::max));
            let s = Series::new(format!("{} {dir}", name(i)), run_color(i), pts);
            iops.push(if dir == "write" { s.dashed() } else { s });
        }
    }
    if curves.is_empty() {
        return Ok(());
    }
    if iops.iter().any(|s| !s.points.is_empty()) {
        let panel = Panel {
            title: "I/Os per second".into(),
            y_desc: "IOPS".into(),
            series: iops,
        };
        figure(out, &charts::time_panels(&[panel], x_max)?);
    }
    figure(
        out,
        &charts::nines(&curves, "µs", "I/O latency by percentile, all runs")?,
    );
    Ok(())
}
