//! One URL's diagnosis as data: what was measured (probe, cache audit, origin probe,
//! load ramp) and what the rules concluded. Built by the diagnose command, rendered by
//! `report::diagnose`, stored as the diagnose JSON.

use serde_json::Value;

use crate::probe::audit::CacheObservation;
use crate::probe::ProbeResult;
use crate::store::StoredHistogram;

use super::facts::{Facts, LoadFacts, LoadStep};
use super::finding::Finding;

/// The short load ramp of a diagnosis.
#[derive(Debug, Clone)]
pub struct Ramp {
    /// One row per concurrency step.
    pub steps: Vec<LoadStep>,
    /// Why the ramp stopped before its last step, if it did.
    pub stopped_early: Option<String>,
    /// Cache hit ratio the responses reported, when they said.
    pub hit_ratio: Option<f64>,
    /// The facts the load rules read (steps and the joined timeline).
    pub facts: LoadFacts,
    /// The `load` object of the diagnose JSON.
    pub json: Value,
    /// Histograms to store with the run.
    pub histograms: Vec<StoredHistogram>,
    /// Each step's wall-clock start, its seconds, and where they sit on the joined
    /// timeline (`offset`, and `whole`: its last whole second takes the extra one),
    /// to join `--watch` scrapes after the ramp.
    pub spans: Vec<(std::time::SystemTime, usize, u32, u32)>,
}

/// Everything measured and concluded about one URL.
#[derive(Debug, Clone)]
pub struct Diagnosis {
    pub target: String,
    pub probe: ProbeResult,
    pub cache: Option<CacheObservation>,
    pub cache_error: Option<String>,
    pub origin: Option<ProbeResult>,
    pub ramp: Option<Ramp>,
    /// Why the ramp did not run.
    pub skipped: Option<String>,
    pub facts: Facts,
    pub findings: Vec<Finding>,
    pub summary: Option<String>,
}
