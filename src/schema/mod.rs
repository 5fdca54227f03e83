//! The JSON documents of every kind of run, typed: what `--json` prints, what the
//! store keeps as a run's summary (and config and timeline), what `export` writes and
//! `import` checks (DESIGN.md, "Storage and outputs": a contract — extended, never
//! renamed).
//!
//! Results convert into these types (`LoadDoc::from(&LoadResult)`, …) and every
//! reader — store, report, compare, merge, import — reads them back instead of
//! looking up string keys. Every document carries [`SCHEMA_VERSION`]; a field a
//! document gained later is `#[serde(default)]`, so a run stored by an older latscope
//! (without it) still reads, shows, compares and reports.
//!
//! One document type may serve several kinds: a `--find-max` search and a merge of
//! shards are load runs ([`LoadDoc`] with `steps`/`capacity` or `merged`). This module
//! is data and conversions; it never prints, measures or touches the store.

pub mod capacity;
pub(crate) mod de;
pub mod diagnose;
pub mod disk;
pub mod load;
pub mod page;
pub mod plan;
pub mod probe;
pub mod redact;
pub mod run;
pub mod shards;
pub mod validate;

pub use capacity::{CapacityDoc, StepDoc};
pub use diagnose::{DiagnoseDoc, DiagnoseEntry, DiagnoseRun, RampDoc};
pub use disk::{DiskConfigDoc, DiskDoc};
pub use load::{LoadDoc, TimelineRow};
pub use page::{PageDoc, PageOrigin, PageSummary};
pub use plan::PlanDoc;
pub use probe::{ProbeDoc, ProbeEntry, ProbeRun};

use serde::de::DeserializeOwned;
use serde_json::Value;

/// The version of the documents this latscope writes. Runs stored before documents
/// carried a version read as 0.
pub const SCHEMA_VERSION: u32 = 1;

/// The kinds of run (`RunRecord.kind`).
pub const KINDS: &[&str] = &["probe", "load", "disk", "diagnose", "page"];

/// A document that does not fit its schema.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct SchemaError {
    /// Where, as `summary.timeline[3].requests`.
    pub path: String,
    pub reason: String,
}

impl SchemaError {
    pub fn new(path: impl Into<String>, reason: impl Into<String>) -> SchemaError {
        SchemaError {
            path: path.into(),
            reason: reason.into(),
        }
    }

    /// The same error under `prefix` (`summary` + `requests` → `summary.requests`).
    pub fn under(mut self, prefix: &str) -> SchemaError {
        self.path = if self.path.is_empty() || self.path == "." {
            prefix.to_string()
        } else if self.path.starts_with('[') {
            format!("{prefix}{}", self.path)
        } else {
            format!("{prefix}.{}", self.path)
        };
        self
    }
}

/// The one JSON deserializer every typed read goes through — the store's values,
/// an import's file streamed, a serve check's answer — with the field's path
/// tracked for the error. Each document type's reading code is generated per
/// deserializer type: one type, not one per source, keeps it generated once (a
/// second, over `&Value`, was ~0.5 MB of the binary; bench/RESULTS.md, issue 36).
pub type Json<'r> = serde_json::Deserializer<serde_json::de::IoRead<&'r mut dyn std::io::Read>>;

/// `seed` read from `de`, the error with the path of the field it is about ("." or
/// empty: none); the input must end after the value (whitespace aside).
pub fn read_tracked<'de, S>(
    de: &mut Json<'_>,
    seed: S,
) -> Result<S::Value, (String, serde_json::Error)>
where
    S: serde::de::DeserializeSeed<'de>,
{
    let mut track = serde_path_to_error::Track::new();
    let v = seed
        .deserialize(serde_path_to_error::Deserializer::new(&mut *de, &mut track))
        .and_then(|v| de.end().map(|()| v));
    v.map_err(|e| (track.path().to_string(), e))
}

/// [`read_tracked`] as a [`SchemaError`], without serde_json's "at line 1 column N":
/// the text read is latscope's own (a value written out), so its position names
/// nothing the user has; the path does.
pub fn read_seed<'de, S>(de: &mut Json<'_>, seed: S) -> Result<S::Value, SchemaError>
where
    S: serde::de::DeserializeSeed<'de>,
{
    read_tracked(de, seed).map_err(|(path, e)| {
        let text = e.to_string();
        let at = format!(" at line {} column {}", e.line(), e.column());
        SchemaError::new(path, text.strip_suffix(&at).unwrap_or(&text))
    })
}

/// Reads a `T` from JSON text in `r` (see [`Json`]).
pub fn from_reader<T: DeserializeOwned>(r: &mut dyn std::io::Read) -> Result<T, SchemaError> {
    read_seed(
        &mut serde_json::Deserializer::from_reader(r),
        std::marker::PhantomData::<T>,
    )
}

/// Reads a `T` from a JSON value, the error naming the field's path.
pub fn from_value<T: DeserializeOwned>(v: &Value) -> Result<T, SchemaError> {
    seed_from_value(std::marker::PhantomData::<T>, v)
}

/// `seed` read from a JSON value, written out and read through [`Json`] (these are
/// stored runs, never a request's path).
pub fn seed_from_value<'de, S>(seed: S, v: &Value) -> Result<S::Value, SchemaError>
where
    S: serde::de::DeserializeSeed<'de>,
{
    let text = serde_json::to_vec(v).map_err(|e| SchemaError::new(".", e.to_string()))?;
    read_seed(
        &mut serde_json::Deserializer::from_reader(&mut text.as_slice()),
        seed,
    )
}

/// A document as JSON (sorted keys, as `serde_json::Value` keeps them: what the
/// store and `--json` have always written).
pub fn to_value<T: serde::Serialize>(doc: &T) -> Value {
    serde_json::to_value(doc).unwrap_or(Value::Null)
}

/// A run's summary, typed by its kind (written as the document itself).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum Summary {
    Probe(ProbeRun),
    Load(Box<LoadDoc>),
    Disk(Box<DiskDoc>),
    Diagnose(DiagnoseRun),
    Page(Box<PageDoc>),
}

impl Summary {
    /// Reads the summary of a run of `kind`.
    pub fn parse(kind: &str, summary: &Value) -> Result<Summary, SchemaError> {
        Ok(match kind {
            "probe" => Summary::Probe(from_value(summary)?),
            "load" => Summary::Load(Box::new(from_value(summary)?)),
            "disk" => Summary::Disk(Box::new(from_value(summary)?)),
            "diagnose" => Summary::Diagnose(from_value(summary)?),
            "page" => Summary::Page(Box::new(from_value(summary)?)),
            other => {
                return Err(SchemaError::new(
                    "kind",
                    format!(
                        "'{}' is not one of {}",
                        other.escape_default(),
                        KINDS.join(", ")
                    ),
                ))
            }
        })
    }

    /// The load part: a load run's document, or a diagnose run's ramp (the first
    /// diagnosis that ran one).
    pub fn load(&self) -> Option<LoadPart<'_>> {
        match self {
            Summary::Load(l) => Some(LoadPart::Run(l)),
            Summary::Diagnose(d) => d
                .diagnoses()
                .into_iter()
                .find_map(|d| d.load.as_ref())
                .map(LoadPart::Ramp),
            _ => None,
        }
    }

    /// The probe results: one per measured URL (a diagnose run's, one per diagnosis).
    pub fn probes(&self) -> Vec<&crate::probe::ProbeResult> {
        match self {
            Summary::Probe(p) => p.measured().map(|d| &d.result).collect(),
            Summary::Diagnose(d) => d.diagnoses().into_iter().map(|d| &d.probe).collect(),
            _ => Vec::new(),
        }
    }

    /// The probe results, to change (as [`Summary::probes`]).
    pub fn probes_mut(&mut self) -> Vec<&mut crate::probe::ProbeResult> {
        match self {
            Summary::Probe(ProbeRun::One(d)) => vec![&mut d.result],
            Summary::Probe(ProbeRun::Several { results, .. }) => results
                .iter_mut()
                .filter_map(|e| match e {
                    ProbeEntry::Measured(d) => Some(&mut d.result),
                    ProbeEntry::Failed { .. } => None,
                })
                .collect(),
            Summary::Diagnose(DiagnoseRun::One(d)) => vec![&mut d.probe],
            Summary::Diagnose(DiagnoseRun::Several(s)) => s
                .results
                .iter_mut()
                .filter_map(|e| match e {
                    DiagnoseEntry::Diagnosed(d) => Some(&mut d.probe),
                    DiagnoseEntry::Failed { .. } => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The disk document.
    pub fn disk(&self) -> Option<&DiskDoc> {
        match self {
            Summary::Disk(d) => Some(d),
            _ => None,
        }
    }

    /// The page document.
    pub fn page(&self) -> Option<&PageDoc> {
        match self {
            Summary::Page(p) => Some(p),
            _ => None,
        }
    }

    /// The findings the summary holds (every URL's, in order).
    pub fn findings(&self) -> Vec<&crate::diagnose::Finding> {
        match self {
            Summary::Probe(p) => p.measured().flat_map(|d| &d.findings).collect(),
            Summary::Load(l) => l.findings.iter().collect(),
            Summary::Disk(d) => d.findings.iter().collect(),
            Summary::Page(p) => p.findings.iter().collect(),
            Summary::Diagnose(d) => match d {
                DiagnoseRun::One(one) => one.findings.iter().collect(),
                DiagnoseRun::Several(s) => match &s.findings {
                    Some(f) => f.iter().collect(),
                    None => s
                        .diagnoses()
                        .into_iter()
                        .flat_map(|d| &d.findings)
                        .collect(),
                },
            },
        }
    }

    /// The headline numbers `latscope runs` shows (e.g. p50/p99/rps).
    pub fn headline(&self) -> Value {
        if let Summary::Page(p) = self {
            return Value::Object(p.headline());
        }
        let mut h = serde_json::Map::new();
        let mut put = |k: &str, v: Option<f64>| {
            if let Some(v) = v.filter(|v| v.is_finite()) {
                h.insert(k.to_string(), serde_json::json!(v));
            }
        };
        match self {
            Summary::Load(l) => {
                put("rps", Some(l.rps));
                put("p50_ms", Some(l.latency_ms.p50));
                put("p99_ms", Some(l.latency_ms.p99));
                put("requests", Some(l.requests as f64));
                // A --find-max run: its answer.
                put("capacity", l.capacity.as_ref().and_then(|c| c.level));
            }
            Summary::Disk(d) => {
                put("read_iops", Some(d.read.iops));
                put("write_iops", Some(d.write.iops));
                put("read_p99_us", Some(d.read.lat_us.p99));
                put("write_p99_us", Some(d.write.lat_us.p99));
            }
            Summary::Page(_) => {}
            Summary::Probe(_) | Summary::Diagnose(_) => {
                // Several URLs: the first that was measured.
                if let Some(p) = self.probes().first() {
                    let p50 =
                        |s: Option<&crate::probe::SeriesSummary>| s.map(|s| s.phases_ms.ttfb.p50);
                    put("fresh_ttfb_p50_ms", p50(Some(&p.fresh)));
                    put("reused_ttfb_p50_ms", p50(p.reused.as_ref()));
                    // The kernel's smoothed RTT on loopback is delayed-ACK noise
                    // (8–26 ms), not distance: the headline shows its min RTT, or
                    // else the connect p50.
                    match p.tcp.map(|t| t.min_rtt_ms).filter(|v| *v > 0.0) {
                        Some(v) => put("min_rtt_ms", Some(v)),
                        None => put("connect_p50_ms", Some(p.fresh.phases_ms.connect.p50)),
                    }
                }
            }
        }
        Value::Object(h)
    }
}

/// The load part of a run: a load document or a diagnose ramp.
#[derive(Debug, Clone, Copy)]
pub enum LoadPart<'a> {
    Run(&'a LoadDoc),
    Ramp(&'a RampDoc),
}

impl<'a> LoadPart<'a> {
    /// Its per-second timeline.
    pub fn timeline(self) -> &'a [TimelineRow] {
        match self {
            LoadPart::Run(l) => &l.timeline,
            LoadPart::Ramp(r) => &r.timeline,
        }
    }

    /// Completed requests.
    pub fn requests(self) -> u64 {
        match self {
            LoadPart::Run(l) => l.requests,
            LoadPart::Ramp(r) => r.requests,
        }
    }

    /// Errors of all kinds.
    pub fn errors(self) -> u64 {
        let e = match self {
            LoadPart::Run(l) => &l.errors,
            LoadPart::Ramp(r) => &r.errors,
        };
        e.values().fold(0u64, |a, n| a.saturating_add(*n))
    }

    /// The load document (None for a ramp).
    pub fn run(self) -> Option<&'a LoadDoc> {
        match self {
            LoadPart::Run(l) => Some(l),
            LoadPart::Ramp(_) => None,
        }
    }

    /// The ramp (None for a load run).
    pub fn ramp(self) -> Option<&'a RampDoc> {
        match self {
            LoadPart::Ramp(r) => Some(r),
            LoadPart::Run(_) => None,
        }
    }
}

/// The headline of a stored summary (empty when it does not read).
pub fn headline(kind: &str, summary: &Value) -> Value {
    Summary::parse(kind, summary)
        .map(|s| s.headline())
        .unwrap_or_else(|_| Value::Object(Default::default()))
}

#[cfg(test)]
mod tests;
