//! A `latscope serve` check as a stored run: a probe run (or, for a diagnose check,
//! a diagnose run) — its document, findings and text, the changes it confirmed
//! written under the text and into its config. Data and text; the daemon's
//! [`Recorder`](super::Recorder) stores it.

use serde_json::Value;

use crate::config::serve::{Check, ServeTarget};
use crate::schema::{ProbeDoc, ProbeEntry, ProbeRun};

use super::{Change, Outcome};

/// What a check stores.
#[derive(Debug, Clone)]
pub struct CheckRun {
    /// "probe" or "diagnose".
    pub kind: &'static str,
    pub summary: Value,
    pub findings: Value,
    /// The check's text, then a `change: …` line per change it confirmed.
    pub text: String,
    /// `{serve: {target, check, interval_s, changes}}`.
    pub config: Value,
}

/// The stored run of `target`'s check `outcome`, which confirmed `changes`.
pub fn of(target: &ServeTarget, outcome: &Outcome, changes: &[Change]) -> CheckRun {
    let t = target;
    let mut text = String::new();
    let (kind, summary, findings) = match (&outcome.result, t.check) {
        (Ok(c), Check::Diagnose) if c.diagnosis.is_some() => {
            let d = c.diagnosis.as_deref().expect("checked");
            text.push_str(&d.text);
            (
                "diagnose",
                d.document.clone(),
                serde_json::to_value(&c.findings),
            )
        }
        (Ok(c), _) => {
            text.push_str(&crate::report::probe::render(
                &c.probe,
                &c.findings,
                c.summary.as_deref(),
            ));
            let doc = ProbeRun::of(
                vec![ProbeEntry::Measured(Box::new(ProbeDoc::new(
                    c.probe.clone(),
                    c.findings.clone(),
                )))],
                false,
            );
            (
                "probe",
                crate::schema::to_value(&doc),
                serde_json::to_value(&c.findings),
            )
        }
        (Err(e), _) => {
            text.push_str(&format!("{}: failed: {e}\n", t.target.url));
            let doc = ProbeRun::of(
                vec![ProbeEntry::Failed {
                    url: t.target.url.clone(),
                    error: e.clone(),
                }],
                false,
            );
            (
                "probe",
                crate::schema::to_value(&doc),
                Ok(Value::Array(Vec::new())),
            )
        }
    };
    for c in changes {
        text.push_str(&format!("change: {}\n", c.line()));
    }
    let changes: Vec<Value> = changes
        .iter()
        .map(|c| serde_json::json!({"what": c.what, "id": c.id, "detail": c.detail}))
        .collect();
    CheckRun {
        kind,
        summary,
        findings: findings.unwrap_or_default(),
        text,
        config: serde_json::json!({
            "serve": {
                "target": t.name,
                "check": t.check.name(),
                "interval_s": t.interval.as_secs_f64(),
                "changes": changes,
            }
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::serve::ServeConfig;
    use std::time::{Duration, SystemTime};

    /// A check that could not connect is stored as a probe run holding the failure;
    /// its confirmed change is a line of the text and an entry of the config.
    #[test]
    fn a_failed_check_is_a_probe_run_with_its_changes() {
        let c = ServeConfig::parse(
            "[[target]]\nurl = \"http://127.0.0.1:9/\"\nname = \"blog\"\n",
            std::path::Path::new("."),
        )
        .unwrap();
        let outcome = Outcome {
            at: SystemTime::now(),
            duration: Duration::from_millis(5),
            result: Err("connection refused".into()),
        };
        let change = Change {
            at: SystemTime::now(),
            target: "blog".into(),
            what: "probe_failing",
            id: String::new(),
            detail: "connection refused".into(),
        };
        let run = of(&c.targets[0], &outcome, &[change]);
        assert_eq!(run.kind, "probe");
        assert!(
            run.text.contains("failed: connection refused"),
            "{}",
            run.text
        );
        assert!(run.text.contains("change: "), "{}", run.text);
        assert_eq!(run.config["serve"]["target"], "blog");
        assert_eq!(run.config["serve"]["changes"][0]["what"], "probe_failing");
        assert_eq!(run.findings, serde_json::json!([]));
        let doc: ProbeRun = crate::schema::from_value(&run.summary).unwrap();
        assert_eq!(doc.measured().count(), 0, "a failure, nothing measured");
    }
}
