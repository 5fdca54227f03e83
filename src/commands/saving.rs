//! Saving a finished run in the store, for every measuring command: honours
//! `--no-save` and `--db`, redacts secrets, and never loses a measured run: when the
//! store cannot take it, the run is written to an export file (stderr says where)
//! and the command exits 1.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::config::OutputConfig;
use crate::store::{self, Environment, ExportFile, RunRecord, Store, StoredHistogram};

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

/// What became of a finished run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Saved {
    /// `--no-save`.
    Skipped,
    /// In the store, under this id.
    Stored(String),
    /// The store could not take it (said on stderr, with where the run went instead).
    Failed,
}

impl Saved {
    /// The stored run's id.
    pub fn id(&self) -> Option<&str> {
        match self {
            Saved::Stored(id) => Some(id),
            _ => None,
        }
    }

    /// The exit code with the save folded in: a measured run the store could not take
    /// exits 1 (unless the run already exits non-zero for its own reason).
    pub fn exit_code(&self, code: u8) -> u8 {
        match self {
            Saved::Failed if code == crate::error::exit::OK => crate::error::exit::RUN_FAILED,
            _ => code,
        }
    }
}

/// Saves the run unless `--no-save`. Called before the run is printed, so a stdout
/// that cannot be written (`> /dev/full`) does not lose it.
pub(crate) fn save(output: &OutputConfig, run: NewRun) -> Saved {
    if output.no_save {
        return Saved::Skipped;
    }
    save_record(output, &record(output, run))
}

/// The record a run is stored as (secrets redacted; no id yet).
pub(crate) fn record(output: &OutputConfig, run: NewRun) -> RunRecord {
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
    store::redact_record(&mut record, &run.secret_headers);
    record
}

/// Saves a record unless `--no-save`. When the store cannot take it the run is
/// written as an export file (beside the store, else in the working directory, else
/// in the temp directory) and stderr says where and how to import it.
pub(crate) fn save_record(output: &OutputConfig, record: &RunRecord) -> Saved {
    if output.no_save {
        return Saved::Skipped;
    }
    let path = db_path(&output.db);
    let result = Store::open(&path).and_then(|mut s| s.save(record));
    match result {
        Ok(id) => Saved::Stored(id),
        Err(e) => {
            let mut record = record.clone();
            if record.id.is_empty() {
                record.id = store::new_id();
            }
            match write_fallback(&path, &record) {
                Ok(file) => eprintln!(
                    "latscope: error: the run was not saved: {e}
                       it was written to {} instead; `latscope import {}` adds it to a store",
                    file.display(),
                    file.display()
                ),
                Err(why) => eprintln!(
                    "latscope: error: the run was not saved: {e}
                       and it could not be written to a file either ({why})"
                ),
            }
            Saved::Failed
        }
    }
}

/// Writes `record` as an export file named after its id in the first directory that
/// takes it: the store's own (unless the store path is a device such as /dev/null),
/// the working directory, the temp directory. Never overwrites a file.
fn write_fallback(db: &Path, record: &RunRecord) -> Result<PathBuf, String> {
    let mut dirs = Vec::new();
    let plain = std::fs::metadata(db).map_or(true, |m| m.is_file() || m.is_dir());
    if plain {
        if let Some(dir) = db.parent() {
            dirs.push(if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir.to_path_buf()
            });
        }
    }
    if let Ok(cwd) = std::env::current_dir() {
        dirs.push(cwd);
    }
    dirs.push(std::env::temp_dir());
    let text = serde_json::to_string_pretty(&ExportFile::new(record.clone()))
        .map_err(|e| e.to_string())?
        + "\n";
    let mut last = String::from("no directory to write to");
    for dir in dirs {
        let file = dir.join(format!("latscope-run-{}.json", record.id));
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&file);
        let written = created.and_then(|mut f| {
            let w = f.write_all(text.as_bytes()).and_then(|_| f.sync_all());
            if w.is_err() {
                // Ours (create_new): a half-written file would not import.
                let _ = std::fs::remove_file(&file);
            }
            w
        });
        match written {
            Ok(()) => return Ok(file),
            Err(e) => last = format!("{}: {e}", file.display()),
        }
    }
    Err(last)
}
