//! `latscope serve`'s [`Recorder`]: each confirmed change and each line for the
//! operator on stderr (redacted, control characters made visible), each check to the
//! store's own thread, saved as a run labelled `serve:NAME` (a probe run, or a
//! diagnose run) with the changes it confirmed, the label's runs older than
//! `--retention` pruned as it goes.

use std::sync::{mpsc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::cli::ServeArgs;
use crate::commands::saving::{self, NewRun};
use crate::config::serve::ServeTarget;
use crate::config::OutputConfig;
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
    /// newest kept), and the oldest checks while the store is past
    /// `--retention-size`. The thread ends, with the count saved, once the log is dropped.
    pub(super) fn start(args: &ServeArgs) -> (Log, std::thread::JoinHandle<usize>) {
        let (tx, rx) = mpsc::channel::<Stored>();
        let output = OutputConfig {
            json: false,
            label: None,
            db: args.db.clone(),
            no_save: args.no_save,
            no_tui: true,
        };
        let (retention, size_cap) = (args.retention, args.retention_size);
        let handle = std::thread::spawn(move || {
            let mut saved = 0;
            let mut store = None;
            let mut over_cap_said = false;
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
                match cap_size(st, size_cap) {
                    Ok(true) => {}
                    Ok(false) if !over_cap_said => {
                        over_cap_said = true;
                        eprintln!(
                            "latscope serve: warning: the store is past --retention-size with only each target's newest check left: the rest is runs serve does not own"
                        );
                    }
                    Ok(false) => {}
                    Err(e) => {
                        eprintln!("latscope serve: error: the store was not kept to its size: {e}")
                    }
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

/// Stored checks deleted, the oldest first, while the store holds more than `cap`
/// bytes (each target's newest check stays); whether it is within the cap after.
fn cap_size(st: &mut Store, cap: u64) -> Result<bool, crate::store::StoreError> {
    while st.used_bytes()? > cap {
        if st.prune_oldest("serve:", 50)? == 0 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A check as a stored run (serve::stored makes its documents and text).
fn new_run(s: &Stored) -> NewRun {
    let run = crate::serve::stored::of(&s.target, &s.outcome, &s.changes);
    NewRun {
        kind: run.kind,
        target: s.target.target.url.clone(),
        started: s.outcome.at,
        duration_s: s.outcome.duration.as_secs_f64(),
        config: run.config,
        summary: run.summary,
        timeline: serde_json::Value::Null,
        findings: run.findings,
        text: run.text,
        histograms: Vec::new(),
        secret_headers: Vec::new(),
    }
}
