//! `--raw FILE`: one CSV row per request for users who want every point. Each worker
//! thread buffers rows and appends whole buffers to the shared file (opened with
//! O_APPEND, so buffers never interleave mid-row); rows are in completion order per
//! thread, not globally sorted.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::recorder::Outcome;

/// The CSV header.
pub const HEADER: &str =
    "start_us,endpoint,status,error,connect_us,tls_us,ttfb_us,latency_us,service_us,bytes\n";

const FLUSH_AT: usize = 64 * 1024;

/// Creates (truncates) the raw file and writes the header; returns it opened for
/// appending.
pub fn create(path: &Path) -> std::io::Result<Arc<File>> {
    std::fs::write(path, HEADER)?;
    Ok(Arc::new(
        std::fs::OpenOptions::new().append(true).open(path)?,
    ))
}

/// One thread's writer.
pub struct RawSink {
    file: Arc<File>,
    buf: Vec<u8>,
    names: Arc<Vec<String>>,
    /// The first write error, kept to report at the end.
    pub error: Option<std::io::Error>,
}

impl RawSink {
    /// A writer appending to `file`; `names` are the endpoint names.
    pub fn new(file: Arc<File>, names: Arc<Vec<String>>) -> RawSink {
        RawSink {
            file,
            buf: Vec::with_capacity(FLUSH_AT + 256),
            names,
            error: None,
        }
    }

    /// Adds a row.
    pub fn row(
        &mut self,
        start: Instant,
        endpoint: usize,
        intended: Instant,
        sent: Instant,
        end: Instant,
        o: &Outcome,
    ) {
        let us = |a: Instant, b: Instant| b.saturating_duration_since(a).as_micros();
        let opt = |d: Option<std::time::Duration>| {
            d.map(|d| d.as_micros().to_string()).unwrap_or_default()
        };
        let _ = writeln!(
            self.buf,
            "{},{},{},{},{},{},{},{},{},{}",
            us(start, intended),
            self.names[endpoint],
            o.status,
            o.error.map(|k| k.name()).unwrap_or(""),
            opt(o.connect),
            opt(o.tls),
            o.first_byte
                .map(|f| us(sent, f).to_string())
                .unwrap_or_default(),
            us(intended, end),
            us(sent, end),
            o.bytes
        );
        if self.buf.len() >= FLUSH_AT {
            self.flush();
        }
    }

    /// Writes out the buffered rows.
    pub fn flush(&mut self) {
        if !self.buf.is_empty() && self.error.is_none() {
            if let Err(e) = (&*self.file).write_all(&self.buf) {
                self.error = Some(e);
            }
        }
        self.buf.clear();
    }
}
