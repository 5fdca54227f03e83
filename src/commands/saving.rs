//! Saving a finished run in the store, for every measuring command: honours
//! `--no-save` and `--db`, redacts secrets, and never turns a good measurement into a
//! failure (a store problem is a warning).

use std::path::PathBuf;
use std::time::SystemTime;

use crate::cli::OutputArgs;
use crate::store::{self, Environment, RunRecord, Store, StoredHistogram};

/// What a command hands over to be saved.
pub(crate) struct NewRun {
    pub kind: &'static str,
    pub target: String,
    pub started: SystemTime,
    pub duration_s: f64,
    pub config: serde_json::Value,
    pub summary: serde_json::Value,
    pub timeline: serde_json::Value,
    pub findings: serde_json::Value,
    pub text: String,
    pub histograms: Vec<StoredHistogram>,
    /// Header names the user marked secret, redacted besides the built-in ones.
    pub secret_headers: Vec<String>,
}

/// The store path for these flags.
pub(crate) fn db_path(db: &Option<PathBuf>) -> PathBuf {
    db.clone().unwrap_or_else(store::default_path)
}

/// Saves the run unless `--no-save`; returns its id. Problems are printed as a
/// warning on stderr and give `None`.
pub(crate) fn save(output: &OutputArgs, run: NewRun) -> Option<String> {
    if output.no_save {
        return None;
    }
    save_record(output, &record(output, run))
}

/// The record a run is stored as (secrets redacted; no id yet).
pub(crate) fn record(output: &OutputArgs, run: NewRun) -> RunRecord {
    let mut record = RunRecord {
        id: String::new(),
        kind: run.kind.to_string(),
        label: output.label.clone(),
        target: run.target,
        started_at_ms: run
            .started
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0),
        duration_s: run.duration_s,
        version: env!("CARGO_PKG_VERSION").to_string(),
        config: run.config,
        env: Environment::capture(),
        summary: run.summary,
        timeline: run.timeline,
        findings: run.findings,
        text: run.text,
        histograms: run.histograms,
    };
    for doc in [
        &mut record.config,
        &mut record.summary,
        &mut record.timeline,
        &mut record.findings,
    ] {
        store::redact_json(doc, &run.secret_headers);
    }
    record
}

/// Saves a record unless `--no-save`; returns its id, or `None` with a warning.
pub(crate) fn save_record(output: &OutputArgs, record: &RunRecord) -> Option<String> {
    if output.no_save {
        return None;
    }
    let path = db_path(&output.db);
    let result = Store::open(&path).and_then(|mut s| s.save(record));
    match result {
        Ok(id) => Some(id),
        Err(e) => {
            eprintln!("latscope: warning: the run was not saved: {e}");
            None
        }
    }
}
