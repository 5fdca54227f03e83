//! `latscope report -o report.html`: one self-contained HTML file. Charts are inline
//! SVG drawn by `plotters` (see `charts`), styles are inline, there is no script and
//! nothing is fetched; a Content-Security-Policy forbids scripts and outside loads on
//! top of that.
//!
//! Everything that came from a server or a run (headers, targets, labels, finding
//! text, evidence) goes through [`esc`]; only markup written here is unescaped.

use serde_json::Value;

use crate::record::RunRecord;

use super::charts::ChartError;
use super::compare::{self, Comparison};
use super::compare_text::{grid, letter};
use super::html_runs;
use super::html_verdict;
use super::rundata::{run_name, RunDataError};
use crate::units::utc as when;

/// The report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    RunData(#[from] RunDataError),
    #[error(transparent)]
    Chart(#[from] ChartError),
}

/// Escapes text for HTML element content and attribute values.
/// Control characters (an imported run's label, a server's header) are shown as
/// `\xNN` first (`crate::visible`).
pub fn esc(s: &str) -> String {
    let s = crate::visible::visible(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Appends a table; every header and cell is escaped.
pub fn table<S: AsRef<str>>(out: &mut String, class: &str, header: &[&str], rows: &[Vec<S>]) {
    out.push_str(&format!("<table class=\"{}\">", esc(class)));
    if header.iter().any(|h| !h.is_empty()) {
        out.push_str("<thead><tr>");
        for h in header {
            out.push_str(&format!("<th>{}</th>", esc(h)));
        }
        out.push_str("</tr></thead>");
    }
    out.push_str("<tbody>\n");
    for r in rows {
        out.push_str("<tr>");
        for c in r {
            out.push_str(&format!("<td>{}</td>", esc(c.as_ref())));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
}

/// Appends a chart (an SVG string from `charts`) in a figure.
pub fn figure(out: &mut String, svg: &str) {
    out.push_str("<figure class=\"chart\">");
    out.push_str(svg);
    out.push_str("</figure>\n");
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;\
margin:1em auto;max-width:1000px;color:#222;padding:0 1em}\
h1{font-size:1.6em;margin:.3em 0}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:1.2em}\
h3{margin-top:1.5em}table{border-collapse:collapse;margin:.6em 0;font-size:.9em}\
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right;vertical-align:top}\
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}\
table.kv td{text-align:left}table.headers td{text-align:left;font-family:monospace;\
word-break:break-all}figure.chart{margin:1em 0}figure.chart svg{max-width:100%;height:auto}\
.finding{border-left:5px solid #999;padding:.3em .8em;margin:.8em 0;background:#fafafa}\
.finding.crit{border-color:#c62828}.finding.warn{border-color:#ef6c00}\
.finding.info{border-color:#1565c0}.finding .sev{font-weight:bold;text-transform:uppercase;\
font-size:.8em}.finding .id{color:#666;font-family:monospace}.yes{font-weight:bold}\
.note{color:#555;font-size:.9em}.finding .saving{font-weight:bold;color:#2e7d32;margin-left:.4em}\
.finding p{margin:.3em 0}.finding .title{font-weight:500}.saving-of{color:#2e7d32;font-size:.9em}\
.where .bar{display:flex;height:1.6em;border:1px solid #ccc;background:#fff;max-width:100%}\
.where .bar span{display:block;height:100%;min-width:1px}.legend{list-style:none;padding:0;\
margin:.4em 0;font-size:.9em}.legend li{display:inline-block;margin-right:1.2em}\
.swatch{display:inline-block;width:.8em;height:.8em;margin-right:.3em;vertical-align:middle}\
nav.toc h2{font-size:1.1em;margin:.6em 0 .2em}nav.toc ol{margin:.1em 0}h4{margin:.8em 0 .3em}.where .note{margin:.2em 0}section.url h3{margin-top:1em}.where .summary{margin:.3em 0}\
details summary{cursor:pointer;color:#555;font-size:.9em}";

/// Renders the report for `runs`: each run's section, its verdict first; then, for
/// several, their overlay and the comparison with the first.
pub fn render(runs: &[RunRecord]) -> Result<String, ReportError> {
    let names: Vec<String> = runs.iter().map(run_name).collect();
    let mut out = String::with_capacity(256 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:\">\n",
    );
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!(
        "<title>latscope report: {}</title>\n<style>{STYLE}</style></head><body>\n",
        esc(&names.join(" vs "))
    ));
    out.push_str("<h1>latscope report</h1>\n");
    run_list(&mut out, runs);
    if html_verdict::wants_toc(runs) {
        html_verdict::toc(&mut out, runs);
    }
    for (i, run) in runs.iter().enumerate() {
        out.push_str(&format!(
            "<section class=\"run\" id=\"{}\"><h2>{} · {} · {} {}</h2>\n",
            esc(&html_verdict::run_anchor(run)),
            letter(i),
            esc(&run_name(run)),
            esc(&run.kind),
            esc(&html_verdict::run_heading_target(run))
        ));
        html_runs::run_section(&mut out, run)?;
        out.push_str("</section>\n");
    }
    // After the runs, each of which leads with its verdict (issue 17: the verdict
    // first).
    if runs.len() > 1 {
        out.push_str("<section id=\"overlay\"><h2>All runs overlaid</h2>\n");
        html_runs::overlay(&mut out, runs)?;
        comparison(&mut out, &compare::compare(runs)?);
        out.push_str("</section>\n");
    }
    out.push_str(&format!(
        "<p class=\"note\">Made by latscope {} from the run store. Charts are SVG drawn \
         by plotters; this file loads nothing from the network.</p>\n</body></html>\n",
        esc(env!("CARGO_PKG_VERSION"))
    ));
    Ok(out)
}

fn run_list(out: &mut String, runs: &[RunRecord]) {
    let rows: Vec<Vec<String>> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            vec![
                letter(i),
                r.id.clone(),
                r.label.clone().unwrap_or_default(),
                r.kind.clone(),
                r.target.clone(),
                when(r.started_at_ms),
                format!("{:.1} s", r.duration_s),
                host(r),
                r.version.clone(),
            ]
        })
        .collect();
    table(
        out,
        "runs",
        &[
            "",
            "id",
            "label",
            "kind",
            "target",
            "started (UTC)",
            "duration",
            "host",
            "latscope",
        ],
        &rows,
    );
}

/// "host (2 cores, Linux 6.1)", leaving out what the run did not record.
fn host(r: &RunRecord) -> String {
    let mut extra = Vec::new();
    if r.env.cores > 0 {
        extra.push(format!("{} cores", r.env.cores));
    }
    if !r.env.kernel.is_empty() {
        extra.push(r.env.kernel.clone());
    }
    let host = if extra.is_empty() {
        r.env.hostname.clone()
    } else {
        format!("{} ({})", r.env.hostname, extra.join(", "))
    };
    match super::rundata::merged_from(r) {
        Some(m) => format!("{host}; merged from {m}"),
        None => host,
    }
}

/// The comparison table of `latscope compare`, as HTML.
fn comparison(out: &mut String, c: &Comparison) {
    out.push_str("<h3>Side by side</h3>\n");
    out.push_str(&format!(
        "<p class=\"note\">Ratios are to the first run in each table. Differs?: {}; yes when p &lt; {} and the values differ by at least 5 % (and 0.1 ms, or 5 µs for disk latencies).</p>\n",
        esc(&c.test),
        c.alpha
    ));
    for s in &c.sections {
        out.push_str(&format!("<h4>{}</h4>\n", esc(&s.name)));
        let (header, rows) = grid(s);
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        table(out, "compare", &header, &rows);
    }
}

/// A JSON value as short text for an evidence table.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(x) if x.fract() != 0.0 => format!("{x:.3}"),
            _ => n.to_string(),
        },
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }

    /// The probe's percentile chart reaches its slowest sample: a 1.58 s cold start
    /// among 19 samples under 90 ms is on the (then logarithmic) axis.
    #[test]
    fn probe_chart_axis_reaches_the_cold_start() {
        let mut ttfb: Vec<f64> = (0..19).map(|i| 5.0 + 4.5 * i as f64).collect();
        ttfb.insert(0, 1580.0);
        let samples: Vec<Value> = ttfb
            .iter()
            .map(|t| serde_json::json!({"series": "fresh", "phases_ms": {"ttfb": t, "total": t}}))
            .collect();
        let curve = super::super::html_runs::sample_curve(&ttfb);
        assert_eq!(curve.last().unwrap().1, 1580.0);
        let mut out = String::new();
        super::super::html_probe::probe(
            &mut out,
            &serde_json::from_value(serde_json::json!({"kind": "probe",
                "target": "http://127.0.0.1:1/", "samples": samples}))
            .unwrap(),
        )
        .unwrap();
        assert!(out.contains("Probe samples by percentile"), "{out}");
        assert!(out.contains("ms (log scale)"), "{out}");
        // y labels one a decade, up to 1000 ms (the 1.58 s sample is above it).
        let labels: Vec<&str> = out
            .split("</text>")
            .filter_map(|t| Some(t.rsplit_once('>')?.1.trim()))
            .collect();
        assert!(labels.contains(&"1000"), "{labels:?}");
    }
}
