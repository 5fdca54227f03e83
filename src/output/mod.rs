//! Outputs: a run's per-second series written where the user's monitoring already
//! lives. `--out prometheus=URL` streams them while the run goes (Prometheus
//! remote write 1.0: [`remote_write`] encodes, [`sender`] sends from a thread of its
//! own so a slow or absent Prometheus never slows the run); [`openmetrics`] writes a
//! stored run's timeline as OpenMetrics text for `promtool tsdb
//! create-blocks-from openmetrics`. [`series`] names the series (a contract). This
//! module measures nothing and prints nothing.

pub mod openmetrics;
pub mod remote_write;
pub mod sender;
pub mod series;

use std::time::SystemTime;

use hdrhistogram::Histogram;

use crate::load::result::SecondResult;
pub use series::METRIC_NAMES;

pub use crate::record::OutputReport;

/// The notes of the reports that had failures (see [`OutputReport::note`]); the
/// command prints them.
pub fn notes(reports: &[OutputReport]) -> Vec<String> {
    reports.iter().filter_map(OutputReport::note).collect()
}

/// What every series of a run is labelled with.
#[derive(Debug, Clone)]
pub struct RunLabels {
    /// The id the run will be stored under.
    pub run: String,
    pub label: Option<String>,
    /// host:port.
    pub target: String,
    /// The plan's endpoint names.
    pub endpoints: Vec<String>,
}

/// The `target` label of a run: host:port (IPv6 in brackets), never a path or query.
pub fn target_label(t: &crate::net::Target) -> String {
    if t.host.contains(':') {
        format!("[{}]:{}", t.host, t.port)
    } else {
        format!("{}:{}", t.host, t.port)
    }
}

/// The outputs of a run while it goes.
pub struct Live {
    senders: Vec<(String, sender::Sender)>,
    counters: series::Counters,
    run: String,
}

impl Live {
    /// Starts one sender per remote-write endpoint; every series carries `labels`
    /// and the `extra` (`--out-label`) pairs; https certificates are checked as
    /// `tls` says.
    pub fn start(
        prometheus: &[sender::Endpoint],
        extra: &[(String, String)],
        labels: &RunLabels,
        tls: &crate::net::tls::TlsOptions,
    ) -> Live {
        let series = series::Series::new(
            &labels.run,
            labels.label.as_deref(),
            &labels.target,
            extra,
            labels.endpoints.clone(),
        );
        Live {
            senders: prometheus
                .iter()
                .map(|e| {
                    (
                        e.shown.clone(),
                        sender::Sender::start(e.clone(), series.clone(), tls),
                    )
                })
                .collect(),
            counters: series::Counters::default(),
            run: labels.run.clone(),
        }
    }

    /// Feeds the seconds completed since the last call (of a run whose second 0
    /// began at `started`): one write per call, queued, never blocking.
    pub fn feed<'a>(
        &mut self,
        started: SystemTime,
        seconds: impl IntoIterator<Item = (&'a SecondResult, Option<&'a Histogram<u64>>)>,
    ) {
        if self.senders.is_empty() {
            return;
        }
        let started_ms = started
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        let snaps: Vec<series::Snapshot> = seconds
            .into_iter()
            .map(|(s, service)| self.counters.add(s, started_ms, service))
            .collect();
        if snaps.is_empty() {
            return;
        }
        for (_, s) in &mut self.senders {
            s.send(snaps.clone());
        }
    }

    /// Feeds what one call of the load engine's progress callback carries.
    pub fn progress(&mut self, p: &crate::load::Progress) {
        self.feed(
            p.started,
            p.seconds.iter().map(|s| (&s.second, s.service.as_ref())),
        );
    }

    /// Ends every output (bounded: see [`sender::Sender::finish`]).
    pub fn finish(mut self) -> Vec<OutputReport> {
        // One drain time for all outputs together.
        let deadline = std::time::Instant::now() + sender::DRAIN;
        for (_, s) in &mut self.senders {
            s.close(deadline);
        }
        let run = self.run;
        self.senders
            .into_iter()
            .map(|(url, s)| {
                let t = s.finish(deadline);
                let failed = t.writes - t.ok.min(t.writes);
                OutputReport {
                    kind: "prometheus",
                    url,
                    run: run.clone(),
                    writes: t.writes,
                    failed,
                    unsent: t.unsent.min(failed),
                    last_error: if failed > 0 { t.last_error } else { None },
                }
            })
            .collect()
    }
}

/// `--out` as a run's observer: every second is written out.
impl crate::observe::Observer<crate::load::Progress> for Live {
    fn second(&mut self, p: &crate::load::Progress) {
        self.progress(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every PromQL text in a JSON document: `expr` of panel targets, and the
    /// `definition` / `query` of template variables.
    fn queries(v: &serde_json::Value, out: &mut Vec<(String, String)>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("expr" | "definition" | "query", serde_json::Value::String(s)) => {
                            out.push((k.clone(), s.clone()))
                        }
                        _ => queries(v, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| queries(v, out)),
            _ => {}
        }
    }

    /// The identifiers of a PromQL text that start with `latscope_`.
    fn latscope_names(q: &str) -> Vec<&str> {
        q.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .filter(|w| w.starts_with("latscope_"))
            .collect()
    }

    /// docs/grafana/latscope.json is valid JSON, every panel query names at least one
    /// latscope series, and every series name in any query (panels and template
    /// variables) is one latscope writes ([`METRIC_NAMES`]); every label matched on
    /// is one latscope sets.
    #[test]
    fn the_grafana_dashboard_queries_only_series_latscope_writes() {
        let text = include_str!("../../docs/grafana/latscope.json");
        let doc: serde_json::Value = serde_json::from_str(text).expect("valid JSON");
        assert!(doc["panels"].as_array().is_some_and(|p| p.len() >= 5));
        let mut qs = Vec::new();
        queries(&doc, &mut qs);
        let exprs = qs.iter().filter(|(k, _)| k == "expr").count();
        assert!(exprs >= 7, "{qs:?}");
        for (key, q) in &qs {
            let names = latscope_names(q);
            if key == "expr" {
                assert!(
                    !names.is_empty(),
                    "panel query without a latscope series: {q}"
                );
            }
            for n in names {
                assert!(
                    METRIC_NAMES.contains(&n),
                    "{n} (in {q}) is not a series latscope writes"
                );
            }
            // Label matchers: `name=`, `name=~`, `name!=` inside braces.
            for inside in q.split('{').skip(1).filter_map(|s| s.split('}').next()) {
                for m in inside.split(',') {
                    let name = m.split(['=', '!']).next().unwrap_or("").trim();
                    assert!(
                        series::OWN_LABELS.contains(&name),
                        "label '{name}' (in {q}) is not one latscope sets"
                    );
                }
            }
        }
        for name in [
            series::LATENCY,
            series::REQUESTS,
            series::ERRORS,
            series::ACTIVE,
        ] {
            assert!(
                qs.iter().any(|(_, q)| q.contains(name)),
                "no panel shows {name}"
            );
        }
    }
}
