//! A run as it is stored, exported and read back: its metadata, the configuration it
//! ran with, the [`Environment`] it ran in, its JSON documents, its text and its
//! histograms. The store persists it; reports, merges and outputs read it. This
//! module holds data; it never prints.

mod env;
mod output;

use serde::{Deserialize, Serialize};

pub use env::Environment;
pub use output::OutputReport;

use crate::stats::StoredHistogram;

/// One run, as stored and as exported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Short unique id (hex), assigned by [`Store::save`] when empty.
    pub id: String,
    /// `probe`, `load`, `disk`, `diagnose` or `page`.
    pub kind: String,
    pub label: Option<String>,
    /// URL or path the run measured.
    pub target: String,
    /// Start, Unix milliseconds.
    pub started_at_ms: i64,
    pub duration_s: f64,
    /// latscope version that made the run.
    pub version: String,
    /// The configuration the run used (flags after validation).
    pub config: serde_json::Value,
    pub env: Environment,
    /// The kind's `--json` document.
    pub summary: serde_json::Value,
    /// Per-second timeline (may be `null`).
    pub timeline: serde_json::Value,
    /// Findings (may be an empty array).
    pub findings: serde_json::Value,
    /// The terminal output exactly as it was printed.
    pub text: String,
    pub histograms: Vec<StoredHistogram>,
}

/// Whether an entry of a several-URL `results` was measured: a URL that failed, or
/// was not reached, is `{url, error}`.
pub fn measured(entry: &serde_json::Value) -> bool {
    entry.get("error").is_none()
}

/// A row of `latscope runs`: a stored run's metadata and headline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunListing {
    pub id: String,
    pub kind: String,
    pub label: Option<String>,
    pub target: String,
    pub started_at_ms: i64,
    pub duration_s: f64,
    /// The run's headline numbers (e.g. p50/p99/rps), from its summary.
    pub headline: serde_json::Value,
}
