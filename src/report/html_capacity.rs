//! The HTML report's part for a `--find-max` run: the answer, the chart of the
//! objective's percentile against the load level (objective line, bracket shaded,
//! each step marked pass or fail) and the table of steps — all read from the run's
//! `steps` and `capacity` JSON.

use serde_json::Value;

use super::charts::{self, CapacityChart, LevelSeries};
use super::html::{esc, figure, table, ReportError};
use crate::load::steps::fmt_level;
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

/// Appends the capacity part when `load` has one.
pub fn section(out: &mut String, load: &Value) -> Result<(), ReportError> {
    let Some(cap) = load.get("capacity").filter(|c| c.is_object()) else {
        return Ok(());
    };
    let steps: Vec<&Value> = load
        .get("steps")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    out.push_str("<h4>Capacity</h4>\n");
    if let Some(a) = cap.get("answer").and_then(Value::as_str) {
        out.push_str(&format!("<p class=\"summary\"><b>{}</b></p>\n", esc(a)));
    }
    let exprs: Vec<String> = cap
        .get("objective")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
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
    let mut names: Vec<String> = Vec::new();
    for s in &steps {
        if let Some(eps) = s.get("endpoints").and_then(Value::as_object) {
            for n in eps.keys() {
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
    }
    let series: Vec<LevelSeries> = names
        .iter()
        .map(|n| LevelSeries {
            label: n.clone(),
            points: steps
                .iter()
                .filter_map(|s| {
                    let level = s.get("level")?.as_f64()?;
                    let v = s
                        .get("endpoints")?
                        .get(n)?
                        .get("latency_ms")?
                        .get(key)?
                        .as_f64()?;
                    let pass = s.get("pass")?.as_bool()?;
                    Some((level, v, pass))
                })
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    let bracket = cap.get("bracket").and_then(Value::as_array);
    let end = |i: usize| bracket.and_then(|b| b.get(i)).and_then(Value::as_f64);
    let unit = cap
        .get("unit")
        .and_then(Value::as_str)
        .unwrap_or("req/s")
        .to_string();
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
    let mut ordered = steps.clone();
    ordered.sort_by(|a, b| {
        let l = |s: &Value| s.get("level").and_then(Value::as_f64).unwrap_or(0.0);
        l(a).total_cmp(&l(b))
    });
    let mut rows = Vec::new();
    for s in ordered {
        let level = s.get("level").and_then(Value::as_f64).map(fmt_level);
        let achieved = s
            .get("achieved")
            .and_then(Value::as_f64)
            .map(|v| format!("{v:.1}/s"));
        let result = match s.get("pass").and_then(Value::as_bool) {
            Some(true) => "pass".to_string(),
            _ => match s.get("failed_objective").and_then(Value::as_str) {
                Some(o) => format!("FAIL {o}"),
                None => format!(
                    "FAIL rate ({})",
                    s.get("limited_by").and_then(Value::as_str).unwrap_or("?")
                ),
            },
        };
        // A step ended once its failure was decided says when.
        let result = match s.get("early_stop").filter(|e| !e.is_null()) {
            Some(e) => format!(
                "{result} (stopped early at {} of {} s: {})",
                e.get("scored_s").and_then(Value::as_f64).unwrap_or(0.0),
                e.get("planned_s").and_then(Value::as_f64).unwrap_or(0.0),
                e.get("reason").and_then(Value::as_str).unwrap_or("")
            ),
            None => result,
        };
        let Some(eps) = s.get("endpoints").and_then(Value::as_object) else {
            continue;
        };
        for (j, (name, e)) in eps.iter().enumerate() {
            let f = |k: &str| {
                e.get(k)
                    .and_then(Value::as_f64)
                    .map(fmt_ms)
                    .unwrap_or_default()
            };
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
                f("p50_ms"),
                f("p90_ms"),
                f("p99_ms"),
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
    if let Some(e) = cap.get("limiting_endpoint").and_then(Value::as_str) {
        out.push_str(&format!("<p>Limiting endpoint: <b>{}</b></p>\n", esc(e)));
    }
    Ok(())
}
