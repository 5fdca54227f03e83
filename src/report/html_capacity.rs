//! The HTML report's part for a `--find-max` run: the answer, the chart of the
//! objective's percentile against the load level (objective line, bracket shaded,
//! each step marked pass or fail) and the table of steps — all read from the run's
//! `steps` and `capacity` (`schema::capacity`).

use super::charts::{self, CapacityChart, LevelSeries};
use super::html::{esc, figure, table, ReportError};
use crate::load::steps::fmt_level;
use crate::schema::{LoadDoc, StepDoc};
use crate::stats::Percentiles;
use crate::units::fmt_ms;

/// The percentile key an objective expression judges ("p99<1s" → "p99"), when it is
/// one the step JSON keeps.
fn percentile_key(expr: &str) -> Option<&'static str> {
    let t = crate::load::threshold::parse(expr).ok()?;
    match t.metric {
        crate::load::threshold::Metric::Quantile(q) => match q {
            500_000 => Some("p50"),
            900_000 => Some("p90"),
            990_000 => Some("p99"),
            999_000 => Some("p999"),
            999_900 => Some("p9999"),
            _ => None,
        },
        crate::load::threshold::Metric::Max => Some("max"),
        crate::load::threshold::Metric::Mean => Some("mean"),
        _ => None,
    }
    .filter(|_| t.limit > 0.0)
}

/// The percentile `key` (as [`percentile_key`] names it) of `p`.
fn percentile(p: &Percentiles, key: &str) -> f64 {
    match key {
        "p50" => p.p50,
        "p90" => p.p90,
        "p999" => p.p999,
        "p9999" => p.p9999,
        "max" => p.max,
        "mean" => p.mean,
        _ => p.p99,
    }
}

/// Appends the capacity part when `load` has one.
pub fn section(out: &mut String, load: &LoadDoc) -> Result<(), ReportError> {
    let Some(cap) = &load.capacity else {
        return Ok(());
    };
    let steps: &[StepDoc] = load.steps.as_deref().unwrap_or_default();
    out.push_str("<h4>Capacity</h4>\n");
    if !cap.answer.is_empty() {
        out.push_str(&format!(
            "<p class=\"summary\"><b>{}</b></p>\n",
            esc(&cap.answer)
        ));
    }
    let exprs = &cap.objective;
    // The percentile drawn: the first latency objective's, else p99.
    let key = exprs
        .iter()
        .find_map(|e| percentile_key(e))
        .unwrap_or("p99");
    let objectives: Vec<(String, f64)> = exprs
        .iter()
        .filter(|e| percentile_key(e) == Some(key))
        .filter_map(|e| {
            let t = crate::load::threshold::parse(e).ok()?;
            Some((e.clone(), t.limit))
        })
        .collect();
    let mut names: Vec<&String> = Vec::new();
    for s in steps {
        for n in s.endpoints.keys() {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    let series: Vec<LevelSeries> = names
        .iter()
        .map(|n| LevelSeries {
            label: (*n).clone(),
            points: steps
                .iter()
                .filter_map(|s| {
                    let v = percentile(&s.endpoints.get(*n)?.latency_ms, key);
                    Some((s.level, v, s.pass))
                })
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    let end = |i: usize| cap.bracket.get(i).copied().flatten();
    let unit = if cap.unit.is_empty() {
        "req/s".to_string()
    } else {
        cap.unit.clone()
    };
    if !series.is_empty() {
        figure(
            out,
            &charts::capacity(&CapacityChart {
                metric: key.to_string(),
                unit: unit.clone(),
                series,
                objectives,
                bracket: (end(0), end(1)),
            })?,
        );
    }
    let mut ordered: Vec<&StepDoc> = steps.iter().collect();
    ordered.sort_by(|a, b| a.level.total_cmp(&b.level));
    let mut rows = Vec::new();
    for s in ordered {
        let level = Some(fmt_level(s.level));
        let achieved = Some(format!("{:.1}/s", s.achieved));
        let result = match (s.pass, &s.failed_objective) {
            (true, _) => "pass".to_string(),
            (false, Some(o)) => format!("FAIL {o}"),
            (false, None) => format!("FAIL rate ({})", s.limited_by.as_deref().unwrap_or("?")),
        };
        // A step ended once its failure was decided says when.
        let result = match &s.early_stop {
            Some(e) => format!(
                "{result} (stopped early at {} of {} s: {})",
                e.scored_s, e.planned_s, e.reason
            ),
            None => result,
        };
        for (j, (name, e)) in s.endpoints.iter().enumerate() {
            let first = j == 0;
            let cell = |v: Option<String>| {
                if first {
                    v.unwrap_or_default()
                } else {
                    String::new()
                }
            };
            rows.push(vec![
                cell(level.clone()),
                cell(achieved.clone()),
                name.clone(),
                fmt_ms(e.p50_ms),
                fmt_ms(e.p90_ms),
                fmt_ms(e.p99_ms),
                cell(Some(result.clone())),
            ]);
        }
    }
    let level_header = format!("level ({unit})");
    table(
        out,
        "steps",
        &[
            &level_header,
            "achieved",
            "endpoint",
            "p50",
            "p90",
            "p99",
            "result",
        ],
        &rows,
    );
    if let Some(e) = &cap.limiting_endpoint {
        out.push_str(&format!("<p>Limiting endpoint: <b>{}</b></p>\n", esc(e)));
    }
    Ok(())
}
