//! The portable export file (`latscope export`, `import`, and the file a run is
//! written to when the store cannot take it) and the checks an imported file must
//! pass before it is stored: every field in range, every histogram decoded within a
//! size cap, secrets redacted. This module checks; it never prints.

use serde::{Deserialize, Serialize};

use super::{v2, RunRecord, EXPORT_FORMAT};

/// The `format` field of an export file.
pub const FORMAT_NAME: &str = "latscope-run";

/// The largest export file `import` reads: 256 MiB.
pub const MAX_FILE: u64 = 256 << 20;
/// The most histograms one run may hold (a 10,000-endpoint run holds ~10,000 plus its
/// per-second ones).
pub const MAX_HISTOGRAMS: usize = 200_000;

/// The kinds of run.
pub const KINDS: &[&str] = &["probe", "load", "disk", "diagnose"];

/// The portable file `latscope export` writes.
#[derive(Debug, Serialize, Deserialize)]
pub struct ExportFile {
    pub format: String,
    pub format_version: u32,
    pub run: RunRecord,
}

impl ExportFile {
    /// The export of `run`.
    pub fn new(run: RunRecord) -> ExportFile {
        ExportFile {
            format: FORMAT_NAME.into(),
            format_version: EXPORT_FORMAT,
            run,
        }
    }

    /// Parses and checks an export file's text; the error names what is wrong.
    pub fn parse(text: &str) -> Result<ExportFile, String> {
        let file: ExportFile = serde_json::from_str(text)
            .map_err(|e| format!("not a latscope export (line {}): {e}", e.line()))?;
        if file.format != FORMAT_NAME {
            return Err(format!("not a latscope export (format '{}')", file.format));
        }
        if file.format_version > EXPORT_FORMAT {
            return Err(format!(
                "exported by a newer latscope (format {}, this one reads up to {EXPORT_FORMAT})",
                file.format_version
            ));
        }
        check(&file.run)?;
        Ok(file)
    }
}

/// Checks every field of an imported run.
pub fn check(run: &RunRecord) -> Result<(), String> {
    let id_ok = run.id.len() <= 64
        && run
            .id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !id_ok {
        return Err(format!(
            "run.id '{}' is not an id (letters, digits, '-' and '_', at most 64)",
            run.id.escape_default()
        ));
    }
    if !KINDS.contains(&run.kind.as_str()) {
        return Err(format!(
            "run.kind '{}' is not one of {}",
            run.kind.escape_default(),
            KINDS.join(", ")
        ));
    }
    if run.started_at_ms < 0 {
        return Err(format!(
            "run.started_at_ms {} is negative",
            run.started_at_ms
        ));
    }
    if !(run.duration_s.is_finite() && run.duration_s >= 0.0) {
        return Err(format!(
            "run.duration_s {} is not a duration",
            run.duration_s
        ));
    }
    if !run.summary.is_object() {
        return Err("run.summary is not an object".into());
    }
    if !(run.config.is_object() || run.config.is_null()) {
        return Err("run.config is not an object".into());
    }
    if !(run.timeline.is_array() || run.timeline.is_null() || run.timeline.is_object()) {
        return Err("run.timeline is neither a list nor null".into());
    }
    if !(run.findings.is_array() || run.findings.is_null()) {
        return Err("run.findings is not a list".into());
    }
    if run.histograms.len() > MAX_HISTOGRAMS {
        return Err(format!(
            "run.histograms holds {} histograms (at most {MAX_HISTOGRAMS})",
            run.histograms.len()
        ));
    }
    for (i, h) in run.histograms.iter().enumerate() {
        if h.name.is_empty() || h.name.len() > 4096 {
            return Err(format!(
                "run.histograms[{i}] has no name or one over 4096 bytes"
            ));
        }
        v2::decode(&h.v2).map_err(|e| {
            let second = h.second.map(|s| format!(" second {s}")).unwrap_or_default();
            format!(
                "run.histograms[{i}] ('{}'{second}) is not a valid histogram: {e}",
                h.name.escape_default()
            )
        })?;
    }
    Ok(())
}
