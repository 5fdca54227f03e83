//! One check of one target: a probe (bounded: exactly `samples` rounds, no adaptive
//! extension — a monitor's cost is the same every time) or a diagnosis (probe,
//! cache audit, HTTP/3, the stack; the load ramp only with `load = true`).

use std::time::{Duration, Instant, SystemTime};

use crate::config::serve::{Check, Requesting, ServeTarget};
use crate::config::{DiagnoseConfig, RampPlan};
use crate::diagnose::diagnosis::Diagnosis;
use crate::diagnose::Finding;
use crate::load::Progress;
use crate::net::Target;
use crate::observe::Nobody;
use crate::pipeline::probe::Rounds;
use crate::pipeline::{self, Halt};
use crate::probe::{ProbeConfig, ProbeResult, Stop};

/// What one check measured.
#[derive(Debug, Clone)]
pub struct Checked {
    pub probe: ProbeResult,
    pub findings: Vec<Finding>,
    /// "Where the time goes".
    pub summary: Option<String>,
    /// The whole diagnosis, for a diagnose check.
    pub diagnosis: Option<Box<Diagnosis>>,
}

/// One check's outcome: when, how long, and what it measured or why it failed.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub at: SystemTime,
    pub duration: Duration,
    pub result: Result<Checked, String>,
}

impl Outcome {
    /// Whether the target answered as a monitor expects: a 2xx or 3xx (what
    /// blackbox_exporter's default `valid_status_codes` and Uptime Kuma accept, less
    /// 3xx for blackbox).
    pub fn success(&self) -> bool {
        self.result
            .as_ref()
            .is_ok_and(|c| c.probe.status.is_some_and(|s| (200..400).contains(&s)))
    }
}

/// The probe `target` gets from `requesting`: `samples` rounds exactly.
pub fn probe_config(target: &Target, r: &Requesting) -> ProbeConfig {
    ProbeConfig {
        target: target.clone(),
        count: r.samples,
        request: r.request.clone(),
        client: r.client.clone(),
        secret_headers: r.secret_headers.clone(),
    }
}

/// Probes `target` as `r` says.
pub async fn probe(target: &Target, r: &Requesting, stop: &Stop) -> Outcome {
    let at = SystemTime::now();
    let started = Instant::now();
    let config = probe_config(target, r);
    let result = pipeline::probe::run(&config, Rounds::Fixed, None, stop)
        .await
        .map(|p| Checked {
            probe: p.result,
            findings: p.findings,
            summary: p.summary,
            diagnosis: None,
        })
        .map_err(|e| e.to_string());
    Outcome {
        at,
        duration: started.elapsed(),
        result,
    }
}

/// Diagnoses `t` (blocking: run it off the async threads). Its probes block on a
/// runtime of the check's own.
pub fn diagnose(t: &ServeTarget, halt: &Halt) -> Outcome {
    let at = SystemTime::now();
    let started = Instant::now();
    let r = &t.requesting;
    let plan = DiagnoseConfig {
        force_load: t.load,
        no_load: (!t.load)
            .then(|| "latscope serve runs no load unless the target says load = true".into()),
        secret_headers: r.secret_headers.clone(),
        ..DiagnoseConfig::new(
            r.samples,
            r.request.clone(),
            r.client.clone(),
            RampPlan {
                max_connections: 8,
                step: Duration::from_secs(1),
            },
        )
    };
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime for the check: {e}"))
        .and_then(|rt| {
            pipeline::diagnose::run(
                &rt,
                &t.target,
                &plan,
                halt,
                &mut Nobody as &mut dyn crate::observe::Observer<Progress>,
            )
            .map_err(|e| e.to_string())
        })
        .map(|d| Checked {
            probe: d.probe.clone(),
            findings: d.findings.clone(),
            summary: d.summary.clone(),
            diagnosis: Some(Box::new(d)),
        });
    Outcome {
        at,
        duration: started.elapsed(),
        result,
    }
}

/// The check `t` asks for. `permit` (its place under `--max-concurrent`) is held
/// until the work ends: a diagnosis runs on a blocking thread that outlives this future
/// when the future is dropped (a reload, the time limit), so the permit goes with it.
pub async fn run(
    t: &ServeTarget,
    halt: &Halt,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> Outcome {
    match t.check {
        Check::Probe => {
            let _permit = permit;
            probe(&t.target, &t.requesting, &halt.stop).await
        }
        Check::Diagnose => {
            let (t, h) = (t.clone(), halt.clone());
            tokio::task::spawn_blocking(move || {
                let _permit = permit;
                diagnose(&t, &h)
            })
            .await
            .unwrap_or_else(|e| Outcome {
                at: SystemTime::now(),
                duration: Duration::ZERO,
                result: Err(format!("the check ended abnormally: {e}")),
            })
        }
    }
}
