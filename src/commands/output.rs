//! Printing a finished run: its JSON document with `--json`, otherwise its text.

use std::io::Write;

/// Writes `doc` (pretty JSON and a newline) when `json`, else `text`, to stdout, and
/// flushes it before the caller goes on to save or report. A closed stdout
/// (`latscope … | head`) is not an error: the run is still saved and its exit code
/// stands.
pub(crate) fn print(json: bool, doc: &impl serde::Serialize, text: &str) -> anyhow::Result<()> {
    let write = || -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        if json {
            serde_json::to_writer_pretty(&mut out, doc).map_err(std::io::Error::from)?;
            writeln!(out)?;
        } else {
            out.write_all(text.as_bytes())?;
        }
        out.flush()
    };
    match write() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Writes `text` to stdout as [`print`] does, for the lines a command adds around
/// its result ("saved as run …"): never `print!`, which panics on a closed pipe.
pub(crate) fn say(text: &str) -> anyhow::Result<()> {
    print(false, &(), text)
}
