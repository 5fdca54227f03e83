//! `latscope report --csv FILE`: the per-second timeline of the runs as one long CSV
//! table, one row per run, series and second. Load runs give series `all` from their
//! timeline (percentiles from the per-second histograms where the timeline lacks
//! them; `server_*` from `--watch`); disk runs give one series per direction (`read`, `write`, `fsync`) from
//! their per-second histograms, with `requests` = I/Os. Latencies are in ms.

use crate::record::RunRecord;

use super::rundata::{self, Histograms, RunDataError};

/// The CSV header.
pub const HEADER: &str = "run_id,label,kind,series,t,requests,ok,errors,bytes,\
p50_ms,p90_ms,p99_ms,max_ms,active,cache_hits,retrans,server_cpu_pct,server_retrans";

/// Quotes a text field when it needs it; a leading `=`, `+`, `-` or `@` is
/// prefixed with `'` so spreadsheets do not run it as a formula.
fn text(s: &str) -> String {
    let s = crate::visible::visible(s);
    let s = if s.starts_with(['=', '+', '-', '@']) {
        format!("'{s}")
    } else {
        s.to_string()
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

fn opt(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => {
            if x.fract() == 0.0 && x.abs() < 1e15 {
                format!("{x:.0}")
            } else {
                format!("{x:.3}")
            }
        }
        _ => String::new(),
    }
}

/// The timeline CSV of `runs`.
pub fn timeline_csv(runs: &[RunRecord]) -> Result<String, RunDataError> {
    let mut out = String::from(HEADER);
    out.push('\n');
    for run in runs {
        let hist = Histograms::decode(run)?;
        let head = format!(
            "{},{},{}",
            text(&run.id),
            text(run.label.as_deref().unwrap_or("")),
            text(&run.kind)
        );
        if rundata::has_load(run) {
            let secs = hist.per_second("latency");
            let q = |t: u32, q: f64| {
                secs.iter()
                    .find(|(s, h)| *s == t && !h.is_empty())
                    .map(|(_, h)| {
                        let v = if q >= 1.0 {
                            h.max()
                        } else {
                            h.value_at_quantile(q)
                        };
                        v as f64 / 1e6
                    })
            };
            let mut rows = rundata::timeline(run);
            if rows.is_empty() {
                rows = secs
                    .iter()
                    .map(|(t, h)| rundata::Second {
                        t: *t,
                        requests: Some(h.len() as f64),
                        ..Default::default()
                    })
                    .collect();
            }
            for s in rows {
                let cells = [
                    opt(s.requests),
                    opt(s.ok),
                    opt(s.errors),
                    opt(s.bytes),
                    opt(s.p50_ms.or_else(|| q(s.t, 0.5))),
                    opt(s.p90_ms.or_else(|| q(s.t, 0.9))),
                    opt(s.p99_ms.or_else(|| q(s.t, 0.99))),
                    opt(s.max_ms.or_else(|| q(s.t, 1.0))),
                    opt(s.active),
                    opt(s.cache_hits),
                    opt(s.retrans),
                    opt(s.server_cpu_pct),
                    opt(s.server_retrans),
                ];
                out.push_str(&format!("{head},all,{},{}\n", s.t, cells.join(",")));
            }
        }
        if run.kind == "disk" {
            for dir in ["read", "write", "fsync"] {
                for (t, h) in hist.per_second(dir) {
                    let ms = |v: u64| opt(Some(v as f64 / 1e6));
                    let (p50, p90, p99, max) = if h.is_empty() {
                        Default::default()
                    } else {
                        (
                            ms(h.value_at_quantile(0.5)),
                            ms(h.value_at_quantile(0.9)),
                            ms(h.value_at_quantile(0.99)),
                            ms(h.max()),
                        )
                    };
                    out.push_str(&format!(
                        "{head},{dir},{t},{},,,,{p50},{p90},{p99},{max},,,,,\n",
                        h.len()
                    ));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_fields_are_quoted_and_defused() {
        assert_eq!(text("plain"), "plain");
        assert_eq!(text("a,b"), "\"a,b\"");
        assert_eq!(text("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(text("=cmd()"), "'=cmd()");
        assert_eq!(opt(Some(3.0)), "3");
        assert_eq!(opt(Some(2.5)), "2.500");
        assert_eq!(opt(None), "");
    }
}
