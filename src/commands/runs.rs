//! `latscope runs`, `show`, `export` and `import`: reading and moving stored runs.

use std::io::Write;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::cli::{ExportArgs, ImportArgs, RunsArgs, ShowArgs};
use crate::error::{exit, UsageError};
use crate::report::table::{Align, Table};
use crate::store::{ListFilter, RunRecord, Store, StoreError, EXPORT_FORMAT};

use super::saving::db_path;

/// The portable file `latscope export` writes.
#[derive(Debug, Serialize, Deserialize)]
struct ExportFile {
    format: String,
    format_version: u32,
    run: RunRecord,
}

const FORMAT_NAME: &str = "latscope-run";

pub(crate) fn open(db: &Option<std::path::PathBuf>) -> anyhow::Result<Store> {
    Ok(Store::open(&db_path(db))?)
}

/// Turns "no such run" into a usage error (exit 2): the user named something wrong.
pub(crate) fn resolve(store: &Store, spec: &str) -> anyhow::Result<String> {
    store.resolve(spec).map_err(|e| match e {
        StoreError::NotFound(_) | StoreError::Ambiguous(..) => {
            anyhow::Error::new(UsageError(e.to_string()))
        }
        other => other.into(),
    })
}

/// A UTC time as `2026-11-23 06:40:12`.
pub(crate) fn when(ms: i64) -> String {
    let t = SystemTime::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_seconds(t)
        .to_string()
        .replace('T', " ")
        .trim_end_matches('Z')
        .to_string()
}

fn headline_text(h: &serde_json::Value) -> String {
    let Some(map) = h.as_object() else {
        return String::new();
    };
    map.iter()
        .filter_map(|(k, v)| v.as_f64().map(|x| (k, x)))
        .map(|(k, x)| {
            let shown = if x.fract() == 0.0 && x.abs() < 1e12 {
                format!("{x:.0}")
            } else if x.abs() < 1.0 {
                // A loopback min RTT is some µs.
                format!("{x:.3}")
            } else {
                format!("{x:.2}")
            };
            format!("{k}={shown}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `latscope runs`.
pub fn list(args: RunsArgs) -> anyhow::Result<u8> {
    let store = open(&args.db.db)?;
    let runs = store.list(&ListFilter {
        kind: args.kind,
        label: args.label,
        target: args.target,
        last: args.last,
    })?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &runs)?;
        writeln!(out)?;
        return Ok(exit::OK);
    }
    if runs.is_empty() {
        writeln!(
            out,
            "no runs stored yet in {}",
            db_path(&args.db.db).display()
        )?;
        return Ok(exit::OK);
    }
    let mut t = Table::new(["id", "label", "kind", "target", "when (UTC)", "headline"])
        .align(1, Align::Left)
        .align(2, Align::Left)
        .align(3, Align::Left)
        .align(4, Align::Left)
        .align(5, Align::Left);
    for r in &runs {
        t.row([
            r.id.clone(),
            r.label.clone().unwrap_or_default(),
            r.kind.clone(),
            r.target.clone(),
            when(r.started_at_ms),
            headline_text(&r.headline),
        ]);
    }
    write!(out, "{}", t.render(0))?;
    Ok(exit::OK)
}

/// `latscope show RUN`.
pub fn show(args: ShowArgs) -> anyhow::Result<u8> {
    let store = open(&args.db.db)?;
    let id = resolve(&store, &args.run)?;
    let run = store.load(&id)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &run.summary)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", run.text)?;
    }
    Ok(exit::OK)
}

/// `latscope export RUN`.
pub fn export(args: ExportArgs) -> anyhow::Result<u8> {
    let store = open(&args.db.db)?;
    let id = resolve(&store, &args.run)?;
    let run = store.load(&id)?;
    let file = ExportFile {
        format: FORMAT_NAME.into(),
        format_version: EXPORT_FORMAT,
        run,
    };
    let text = serde_json::to_string_pretty(&file)?;
    match &args.output {
        Some(path) => std::fs::write(path, text + "\n")
            .with_context(|| format!("writing {}", path.display()))?,
        None => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{text}")?;
        }
    }
    Ok(exit::OK)
}

/// `latscope import FILE`.
pub fn import(args: ImportArgs) -> anyhow::Result<u8> {
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", args.file.display())))?;
    let file: ExportFile = serde_json::from_str(&text).map_err(|e| {
        UsageError(format!(
            "{} is not a latscope export (line {}): {e}",
            args.file.display(),
            e.line()
        ))
    })?;
    if file.format != FORMAT_NAME {
        return Err(UsageError(format!(
            "{} is not a latscope export (format '{}')",
            args.file.display(),
            file.format
        ))
        .into());
    }
    if file.format_version > EXPORT_FORMAT {
        return Err(UsageError(format!(
            "{} was exported by a newer latscope (format {}, this one reads up to {EXPORT_FORMAT})",
            args.file.display(),
            file.format_version
        ))
        .into());
    }
    let mut store = open(&args.db.db)?;
    let id = store.save(&file.run)?;
    eprintln!(
        "imported run {id} ({} {}, made on {})",
        file.run.kind, file.run.target, file.run.env.hostname
    );
    super::output::say(&format!("{id}\n"))?;
    Ok(exit::OK)
}
