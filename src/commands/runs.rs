//! `latscope runs`, `show`, `export` and `import`: reading and moving stored runs.

use std::io::Write;

use anyhow::Context;

use crate::cli::{ExportArgs, ImportArgs, RunsArgs, ShowArgs};
use crate::error::{exit, UsageError};
use crate::store::{self, ExportFile, ListFilter, RunRecord, Store, StoreError};

use super::saving::db_path;

/// Opens the store to read it; one that cannot be written (a read-only mount) is
/// read as it is, and stderr says so.
pub(crate) fn open(db: &Option<std::path::PathBuf>) -> anyhow::Result<Store> {
    let store = Store::open_to_read(&db_path(db))?;
    if store.read_only() {
        eprintln!(
            "latscope: note: the run store {} is read-only: reading it as it is (runs cannot be saved there)",
            store.path()
        );
    }
    Ok(store)
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

/// `latscope runs`.
pub fn list(args: RunsArgs) -> anyhow::Result<u8> {
    let store = open(&args.db.db)?;
    let mut runs = store.list(&ListFilter {
        kind: args.kind,
        label: args.label,
        target: args.target,
        last: args.last,
    })?;
    for r in &mut runs {
        // Runs stored by an older latscope may hold secrets in their URL.
        r.target = store::redact_urls(&r.target);
    }
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
    write!(out, "{}", crate::report::runs::table(&runs))?;
    Ok(exit::OK)
}

/// `latscope show RUN`.
pub fn show(args: ShowArgs) -> anyhow::Result<u8> {
    let store = open(&args.db.db)?;
    let id = resolve(&store, &args.run)?;
    // Runs stored by an older latscope may hold secrets: redacted on the way out too.
    let mut run = store.load(&id)?;
    store::redact_record(&mut run, &[]);
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &run.summary)?;
        writeln!(out)?;
    } else {
        // The stored text may come from an imported file: no terminal escapes.
        write!(out, "{}", super::output::clean(&run.text))?;
    }
    Ok(exit::OK)
}

/// `latscope export RUN`.
pub fn export(args: ExportArgs) -> anyhow::Result<u8> {
    let store = open(&args.db.db)?;
    let id = resolve(&store, &args.run)?;
    // Runs stored by an older latscope may hold secrets: redacted on the way out too.
    let mut run = store.load(&id)?;
    store::redact_record(&mut run, &[]);
    let text = if args.format == "openmetrics" {
        let text = crate::output::openmetrics::run_text(&run).map_err(UsageError)?;
        text.trim_end().to_string()
    } else {
        serde_json::to_string_pretty(&ExportFile::new(run))?
    };
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

/// Writes `run` (secrets redacted) as an export file.
pub(crate) fn write_export(path: &std::path::Path, mut run: RunRecord) -> anyhow::Result<()> {
    store::redact_record(&mut run, &[]);
    let text = serde_json::to_string_pretty(&ExportFile::new(run))?;
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))
}

/// Reads and checks an export file, streaming (size-capped; every field checked
/// against its type and range, every histogram decoded): a bad file is a usage error
/// naming the field.
pub(crate) fn read_export(path: &std::path::Path) -> anyhow::Result<store::ImportedRun> {
    let shown = path.display();
    crate::input::check(path, store::export::MAX_FILE).map_err(|e| match e {
        crate::input::InputError::TooLarge { .. } => UsageError(format!(
            "{shown} is larger than an export can be ({} MiB)",
            store::export::MAX_FILE >> 20
        )),
        e => UsageError(format!("cannot read {shown}: {e}")),
    })?;
    let file =
        std::fs::File::open(path).map_err(|e| UsageError(format!("cannot read {shown}: {e}")))?;
    if file
        .metadata()
        .is_ok_and(|m| m.is_file() && m.len() > store::export::MAX_FILE)
    {
        return Err(UsageError(format!(
            "{shown} is larger than an export can be ({} MiB)",
            store::export::MAX_FILE >> 20
        ))
        .into());
    }
    Ok(store::export::read(file).map_err(|e| UsageError(format!("{shown}: {e}")))?)
}

/// `latscope import FILE`: checks every field and histogram (a bad file is refused
/// with exit 2 naming what is wrong), redacts secrets as a run of this latscope
/// would have been, then stores it.
pub fn import(args: ImportArgs) -> anyhow::Result<u8> {
    let mut run = read_export(&args.file)?;
    run.redact(&[]);
    let said = format!(
        "({} {}, made on {})",
        run.kind,
        super::output::clean(&run.target),
        super::output::clean(&run.env.hostname)
    );
    let mut store = Store::open(&db_path(&args.db.db))?;
    let id = store.save_imported(run)?;
    eprintln!("imported run {id} {said}");
    super::output::say(&format!("{id}\n"))?;
    Ok(exit::OK)
}
