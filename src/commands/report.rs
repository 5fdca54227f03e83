//! `latscope report RUN... -o report.html`: the HTML report, CSV timeline and
//! HdrHistogram interval log of stored runs.

use std::path::Path;

use anyhow::Context;

use crate::cli::ReportArgs;
use crate::error::exit;
use crate::report::{csv, hdrlog, html};

use super::compare::load_runs;

fn write(path: &Path, bytes: &[u8], what: &str) -> anyhow::Result<()> {
    std::fs::write(path, bytes)
        .with_context(|| format!("writing the {what} to {}", path.display()))?;
    eprintln!("wrote {what}: {}", path.display());
    Ok(())
}

/// `latscope report`.
pub fn run(args: ReportArgs) -> anyhow::Result<u8> {
    if args.output.is_none() && args.csv.is_none() && args.hdr_log.is_none() {
        return Err(crate::usage!(
            "say where to write: -o report.html, --csv FILE or --hdr-log FILE"
        ));
    }
    if let Some(name) = &args.serve {
        return serve_report(&args, name);
    }
    let runs = load_runs(&args.db.db, &args.runs)?;
    if let Some(path) = &args.hdr_log {
        let log = hdrlog::interval_log(&runs).map_err(|e| match e {
            hdrlog::HdrLogError::Empty => crate::usage!("--hdr-log: {e}"),
            other => other.into(),
        })?;
        write(path, &log, "HdrHistogram interval log")?;
    }
    if let Some(path) = &args.csv {
        write(path, csv::timeline_csv(&runs)?.as_bytes(), "CSV timeline")?;
    }
    if let Some(path) = &args.output {
        write(path, html::render(&runs)?.as_bytes(), "HTML report")?;
    }
    Ok(exit::OK)
}

/// The checks kept of one target at most (the newest).
const SERVE_CHECKS: usize = 5000;

/// `latscope report --serve NAME -o F`: the target's stored checks over time.
fn serve_report(args: &ReportArgs, name: &str) -> anyhow::Result<u8> {
    let Some(path) = &args.output else {
        return Err(crate::usage!(
            "--serve writes HTML: say where with -o report.html"
        ));
    };
    let store = crate::store::Store::open_to_read(&super::saving::db_path(&args.db.db))?;
    let label = format!("serve:{name}");
    let listed = store.list(&crate::store::ListFilter {
        label: Some(label.clone()),
        last: Some(SERVE_CHECKS),
        ..Default::default()
    })?;
    if listed.is_empty() {
        return Err(crate::usage!(
            "no stored checks labelled {label} (`latscope runs` lists the labels; a target's checks are stored by `latscope serve`)"
        ));
    }
    let runs = listed
        .iter()
        .map(|l| store.load(&l.id))
        .collect::<Result<Vec<_>, _>>()?;
    write(
        path,
        crate::report::html_serve::render(name, &runs).as_bytes(),
        "HTML report",
    )?;
    Ok(exit::OK)
}
