//! Where a run's results go, checked: printed as text or JSON, saved or not, under
//! which label ([`OutputConfig`], every measuring command), streamed to Prometheus
//! while it runs (`--out`, [`OutConfig`]), and the server metrics scraped beside it
//! (`--watch`, [`watch`]).

use std::path::PathBuf;

use crate::cli::{OutArgs, OutputArgs, WatchArgs};
use crate::error::UsageError;
use crate::net::tls::TlsOptions;
use crate::output::{self, sender, series, Live, RunLabels};
use crate::watch::WatchSpec;

/// The flags about where a run's result goes (`--json`, `--label`, `--db`,
/// `--no-save`, `--no-tui`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputConfig {
    /// Print the JSON document instead of the text.
    pub json: bool,
    /// A name for the run.
    pub label: Option<String>,
    /// The run store's path (None: the default one).
    pub db: Option<PathBuf>,
    /// Do not save the run.
    pub no_save: bool,
    /// No full-screen live view: the one-line progress instead.
    pub no_tui: bool,
}

impl From<&OutputArgs> for OutputConfig {
    fn from(a: &OutputArgs) -> Self {
        OutputConfig {
            json: a.json,
            label: a.label.clone(),
            db: a.db.clone(),
            no_save: a.no_save,
            no_tui: a.no_tui,
        }
    }
}

/// The checked `--out` and `--out-label` flags.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutConfig {
    /// `--out prometheus=URL`: where remote writes go.
    pub prometheus: Vec<sender::Endpoint>,
    /// `--out-label` pairs, in the order given.
    pub labels: Vec<(String, String)>,
    /// How https endpoints' certificates are checked (the command's `--cacert`,
    /// `-k`).
    pub tls: TlsOptions,
}

impl OutConfig {
    /// Checks the flags (`tls`: the command's `--cacert` and `-k`); the error names
    /// the flag and what is wrong.
    pub fn from_args(args: &OutArgs, tls: TlsOptions) -> Result<OutConfig, UsageError> {
        let mut plan = OutConfig {
            tls,
            ..OutConfig::default()
        };
        let usage = |m: String| UsageError::new(m);
        for o in &args.out {
            let (kind, url) = o.split_once('=').ok_or_else(|| {
                usage(format!("--out '{o}': give KIND=URL, e.g. prometheus=http://127.0.0.1:9090/api/v1/write"))
            })?;
            match kind {
                "prometheus" => plan
                    .prometheus
                    .push(sender::Endpoint::parse(url).map_err(|e| usage(format!("--out {e}")))?),
                _ => {
                    return Err(usage(format!(
                        "--out '{kind}': unknown output (the one there is: prometheus=URL)"
                    )))
                }
            }
        }
        for l in &args.out_labels {
            let (name, value) = l
                .split_once('=')
                .ok_or_else(|| usage(format!("--out-label '{l}': give NAME=VALUE")))?;
            series::check_label(name).map_err(|e| usage(format!("--out-label {e}")))?;
            if plan.labels.iter().any(|(n, _)| n == name) {
                return Err(usage(format!("--out-label '{name}' is given twice")));
            }
            plan.labels.push((name.to_string(), value.to_string()));
        }
        if !plan.labels.is_empty() && plan.prometheus.is_empty() {
            return Err(usage(
                "--out-label labels what --out writes: give --out too".into(),
            ));
        }
        Ok(plan)
    }

    /// No output asked for.
    pub fn is_empty(&self) -> bool {
        self.prometheus.is_empty()
    }

    /// Starts the outputs of one run (see [`Live`]).
    pub fn start(&self, labels: &RunLabels) -> Live {
        Live::start(&self.prometheus, &self.labels, labels, &self.tls)
    }
}

/// The outputs of a command whose run has several load runs (diagnose's ramp):
/// what they write to and the run's own labels, the target set per URL.
#[derive(Debug, Clone)]
pub struct OutRun {
    pub out: OutConfig,
    /// The id the run will be stored under.
    pub run: String,
    pub label: Option<String>,
}

impl OutRun {
    /// Starts the outputs for one target.
    pub fn start(&self, target: &crate::net::Target) -> Live {
        self.out.start(&RunLabels {
            run: self.run.clone(),
            label: self.label.clone(),
            target: output::target_label(target),
            endpoints: Vec::new(),
        })
    }
}

/// The checked `--watch` and `--watch-metric` flags (None without `--watch`);
/// https endpoints are checked as `tls` (the command's `--cacert`, `-k`) says.
pub fn watch(args: &WatchArgs, tls: TlsOptions) -> Result<Option<WatchSpec>, UsageError> {
    let spec = WatchSpec::from_flags(&args.watch, &args.watch_metric).map_err(UsageError::new)?;
    Ok(spec.map(|s| WatchSpec { tls, ..s }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--out` and `--out-label` are checked, with errors naming the flag.
    #[test]
    fn out_flags_are_checked() {
        let args = |out: &[&str], labels: &[&str]| OutArgs {
            out: out.iter().map(|s| s.to_string()).collect(),
            out_labels: labels.iter().map(|s| s.to_string()).collect(),
        };
        let p = OutConfig::from_args(
            &args(
                &["prometheus=http://127.0.0.1:9090/api/v1/write"],
                &["env=ci", "team=a=b"],
            ),
            TlsOptions::default(),
        )
        .unwrap();
        assert_eq!(p.prometheus.len(), 1);
        assert_eq!(p.labels[1], ("team".to_string(), "a=b".to_string()));
        for (out, labels, want) in [
            (&["influx=http://x/"][..], &[][..], "unknown output"),
            (&["http://x/"][..], &[][..], "KIND=URL"),
            (&["prometheus=x"][..], &[][..], "--out"),
            (&["prometheus=http://x/"][..], &["env"][..], "NAME=VALUE"),
            (&["prometheus=http://x/"][..], &["run=1"][..], "sets itself"),
            (&["prometheus=http://x/"][..], &["a=1", "a=2"][..], "twice"),
            (&[][..], &["a=1"][..], "give --out too"),
        ] {
            let e = OutConfig::from_args(&args(out, labels), TlsOptions::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{out:?} {labels:?}: {e}");
        }
    }
}
