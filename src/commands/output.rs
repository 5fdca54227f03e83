//! Printing a finished run: its JSON document with `--json`, otherwise its text.

use std::io::Write;

/// Writes `doc` (pretty JSON and a newline) when `json`, else `text`, to stdout, and
/// flushes it before the caller goes on to save or report.
pub(crate) fn print(json: bool, doc: &impl serde::Serialize, text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, doc).map_err(std::io::Error::from)?;
        writeln!(out)?;
    } else {
        out.write_all(text.as_bytes())?;
    }
    out.flush()?;
    Ok(())
}
