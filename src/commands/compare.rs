//! `latscope compare A B [C...]`: stored runs side by side, with ratios to the first
//! and a significance test on per-second blocks or probe samples. The text leads with
//! each run's verdict and shows the rows that matter (`--all`: every row;
//! `--explain`: the legend); the JSON has every row, each with its `notable` flags.

use std::io::Write;

use crate::cli::CompareArgs;
use crate::error::exit;
use crate::report::{compare, compare_text};
use crate::store::RunRecord;

use super::runs::{open, resolve};

/// Loads the runs the user named, in order; the same run twice is a usage error.
pub(crate) fn load_runs(
    db: &Option<std::path::PathBuf>,
    specs: &[String],
) -> anyhow::Result<Vec<RunRecord>> {
    let store = open(db)?;
    let mut runs: Vec<RunRecord> = Vec::with_capacity(specs.len());
    for spec in specs {
        let id = resolve(&store, spec)?;
        if runs.iter().any(|r| r.id == id) {
            return Err(crate::usage!(
                "'{spec}' names run {id}, which is already given"
            ));
        }
        runs.push(store.load(&id)?);
    }
    Ok(runs)
}

/// `latscope compare`.
pub fn run(args: CompareArgs) -> anyhow::Result<u8> {
    let runs = load_runs(&args.db.db, &args.runs)?;
    let cmp = compare::compare(&runs)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &cmp)?;
        writeln!(out)?;
    } else {
        // Labels and targets may come from an imported file: no terminal escapes.
        let view = compare_text::View {
            all: args.all,
            explain: args.explain,
        };
        write!(
            out,
            "{}",
            super::output::clean(&compare_text::render(&cmp, view))
        )?;
    }
    Ok(exit::OK)
}
