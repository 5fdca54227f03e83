//! How an output (`--out prometheus=URL`) did during a run: part of the run's record
//! (`outputs` in its JSON), filled by `output` and carried by a diagnosis. Data only.

use serde::Serialize;

/// How one output did, for the run's JSON (`outputs`) and the note at the end.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutputReport {
    /// `prometheus`.
    pub kind: &'static str,
    /// Where it went (no credentials).
    pub url: String,
    /// Writes made (one a second, the last one at the end).
    pub writes: u64,
    /// The `run` label the series carry (the id the run is stored under).
    pub run: String,
    /// Writes not accepted: refused, timed out, an HTTP error, never sent, or not
    /// answered before latscope exited.
    pub failed: u64,
    /// Of the failed, those never sent: dropped because `output::sender::QUEUE` writes
    /// were already waiting, or still queued when the run ended and the drain time
    /// was up (Prometheus was behind).
    pub unsent: u64,
    /// The last error a write met (null when none was answered with one).
    pub last_error: Option<String>,
}

impl OutputReport {
    /// "12 of 60 writes to Prometheus at URL failed (last: …)", or None when all
    /// went through.
    pub fn note(&self) -> Option<String> {
        if self.failed == 0 {
            return None;
        }
        let mut why = Vec::new();
        if self.unsent > 0 {
            why.push(format!("{} not sent: Prometheus was behind", self.unsent));
        }
        if let Some(e) = &self.last_error {
            why.push(format!("last error: {e}"));
        }
        if why.is_empty() {
            why.push("not answered before latscope exited".into());
        }
        Some(format!(
            "{} of {} writes to Prometheus at {} failed ({})",
            self.failed,
            self.writes,
            self.url,
            why.join("; ")
        ))
    }
}
