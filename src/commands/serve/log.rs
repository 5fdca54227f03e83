//! `latscope serve`'s [`Recorder`]: each confirmed change and each line for the
//! operator on stderr (redacted, control characters made visible), each check to the
//! store's own thread, saved as a run labelled `serve:NAME` (a probe run, or a
//! diagnose run) with the changes it confirmed, the label's runs older than
//! `--retention` pruned as it goes.

use std::sync::{mpsc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::cli::ServeArgs;
use crate::commands::saving::{self, NewRun};
use crate::config::serve::{Check, ServeTarget};
use crate::config::OutputConfig;
use crate::schema::{DiagnoseDoc, DiagnoseEntry, DiagnoseRun, ProbeDoc, ProbeEntry, ProbeRun};
use crate::serve::{Change, Outcome, Recorder};
use crate::store::Store;

/// The daemon's [`Recorder`]: lines on stderr (redacted, control characters shown),
/// checks to the store's thread.
pub(super) struct Log {
    saver: Mutex<mpsc::Sender<Stored>>,
}

impl Recorder for Log {
    fn outcome(&self, target: &ServeTarget, outcome: &Outcome, changes: &[Change]) {
        let _ = self.saver.lock().unwrap().send(Stored {
            target: target.clone(),
            outcome: outcome.clone(),
            changes: changes.to_vec(),
        });
    }

    fn say(&self, line: &str) {
        eprintln!(
            "latscope serve: {}",
            crate::commands::output::clean(&crate::redact::for_output(line))
        );
    }
}

/// A check on its way to the store.
struct Stored {
    target: ServeTarget,
    outcome: Outcome,
    changes: Vec<Change>,
}

impl Log {
    /// The log, and the store's own thread: each check saved as a run labelled
    /// `serve:NAME`, the label's runs older than `--retention` pruned as it goes (the
    /// newest kept). The thread ends, with the count saved, once the log is dropped.
    pub(super) fn start(args: &ServeArgs) -> (Log, std::thread::JoinHandle<usize>) {
        let (tx, rx) = mpsc::channel::<Stored>();
        let output = OutputConfig {
            json: false,
            label: None,
            db: args.db.clone(),
            no_save: args.no_save,
            no_tui: true,
        };
        let retention = args.retention;
        let handle = std::thread::spawn(move || {
            let mut saved = 0;
            let mut store = None;
            for s in rx {
                if output.no_save {
                    continue;
                }
                let label = format!("serve:{}", s.target.name);
                let record = saving::record(
                    &OutputConfig {
                        label: Some(label.clone()),
                        ..output.clone()
                    },
                    new_run(&s),
                );
                if store.is_none() {
                    match Store::open(&saving::db_path(&output.db)) {
                        Ok(st) => store = Some(st),
                        Err(e) => {
                            eprintln!("latscope serve: error: checks are not stored: {e}");
                            continue;
                        }
                    }
                }
                let Some(st) = store.as_mut() else { continue };
                match st.save(&record) {
                    Ok(_) => saved += 1,
                    Err(e) => eprintln!("latscope serve: error: a check was not stored: {e}"),
                }
                let before = SystemTime::now()
                    .checked_sub(retention)
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_millis() as i64);
                if let Err(e) = st.prune(&label, before, 1) {
                    eprintln!("latscope serve: error: old checks were not pruned: {e}");
                }
            }
            saved
        });
        (
            Log {
                saver: Mutex::new(tx),
            },
            handle,
        )
    }
}

/// A check as a stored run: a probe run (or a diagnose run), its text with the
/// changes it confirmed.
fn new_run(s: &Stored) -> NewRun {
    let o = &s.outcome;
    let t = &s.target;
    let mut text = String::new();
    let (kind, summary, findings) = match (&o.result, t.check) {
        (Ok(c), Check::Diagnose) if c.diagnosis.is_some() => {
            let d = c.diagnosis.as_deref().expect("checked");
            text.push_str(&crate::report::diagnose::render(d));
            let doc = DiagnoseRun::of(
                vec![DiagnoseEntry::Diagnosed(Box::new(DiagnoseDoc::from(d)))],
                false,
            );
            (
                "diagnose",
                crate::schema::to_value(&doc),
                serde_json::to_value(&d.findings),
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
                Ok(serde_json::Value::Array(Vec::new())),
            )
        }
    };
    for c in &s.changes {
        text.push_str(&format!("change: {}\n", c.line()));
    }
    NewRun {
        kind,
        target: t.target.url.clone(),
        started: o.at,
        duration_s: o.duration.as_secs_f64(),
        config: serde_json::json!({
            "serve": {
                "target": t.name,
                "check": t.check.name(),
                "interval_s": t.interval.as_secs_f64(),
                "changes": s.changes.iter().map(|c| serde_json::json!({"what": c.what, "id": c.id, "detail": c.detail})).collect::<Vec<_>>(),
            }
        }),
        summary,
        timeline: serde_json::Value::Null,
        findings: findings.unwrap_or_default(),
        text,
        histograms: Vec::new(),
        secret_headers: Vec::new(),
    }
}
