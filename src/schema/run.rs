//! The parts of a stored run other than its summary, typed by the run's kind: its
//! configuration and its per-second timeline (what `import` reads and checks).

use serde::de::DeserializeSeed;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::disk::{DiskConfigDoc, DiskSecondDoc};
use super::probe::{ProbeConfigDoc, ProbeRun};
use super::{DiagnoseRun, DiskDoc, LoadDoc, PageDoc, PlanDoc, SchemaError, Summary, TimelineRow};

/// The configuration a diagnose run is stored with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DiagnoseConfigDoc {
    pub urls: Vec<String>,
}

/// A run's configuration, by kind (null in runs that stored none).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Config {
    Load(Box<PlanDoc>),
    Probe(ProbeConfigDoc),
    Disk(DiskConfigDoc),
    Diagnose(DiagnoseConfigDoc),
    Page(PageConfigDoc),
    None,
}

/// A page run's configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PageConfigDoc {
    pub visits: u32,
    pub max_time_s: f64,
    pub allow_origins: Vec<String>,
    /// The browser that ran.
    pub chromium: String,
}

/// A run's per-second timeline, by kind (null for a probe).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Timeline {
    Load(Vec<TimelineRow>),
    Disk(Vec<DiskSecondDoc>),
    None,
}

/// Reads a run's summary, config or timeline as its kind says.
#[derive(Debug, Clone, Copy)]
pub enum Part {
    Summary,
    Config,
    Timeline,
}

/// One part of a run of `kind`, read from a deserializer (see [`Part`]).
pub struct PartSeed<'k> {
    pub kind: &'k str,
    pub part: Part,
}

/// A part read by [`PartSeed`].
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Summary(Summary),
    Config(Config),
    Timeline(Timeline),
}

impl<'de> DeserializeSeed<'de> for PartSeed<'_> {
    type Value = Parsed;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Parsed, D::Error> {
        let kind = self.kind;
        Ok(match self.part {
            Part::Summary => Parsed::Summary(match kind {
                "probe" => Summary::Probe(ProbeRun::deserialize(d)?),
                "load" => Summary::Load(Box::new(LoadDoc::deserialize(d)?)),
                "disk" => Summary::Disk(Box::new(DiskDoc::deserialize(d)?)),
                "page" => Summary::Page(Box::new(PageDoc::deserialize(d)?)),
                _ => Summary::Diagnose(DiagnoseRun::deserialize(d)?),
            }),
            Part::Config => Parsed::Config(
                match kind {
                    "load" => Option::<PlanDoc>::deserialize(d)?.map(|p| Config::Load(Box::new(p))),
                    "probe" => Option::deserialize(d)?.map(Config::Probe),
                    "disk" => Option::deserialize(d)?.map(Config::Disk),
                    "page" => Option::deserialize(d)?.map(Config::Page),
                    _ => Option::deserialize(d)?.map(Config::Diagnose),
                }
                .unwrap_or(Config::None),
            ),
            Part::Timeline => Parsed::Timeline(
                match kind {
                    "disk" => Option::deserialize(d)?.map(Timeline::Disk),
                    "probe" => {
                        // A probe keeps no timeline; whatever stands there is dropped.
                        serde::de::IgnoredAny::deserialize(d)?;
                        None
                    }
                    _ => Option::deserialize(d)?.map(Timeline::Load),
                }
                .unwrap_or(Timeline::None),
            ),
        })
    }
}

impl PartSeed<'_> {
    /// The same part read from a JSON value (a file whose `kind` came after it).
    pub fn from_value(self, v: &Value) -> Result<Parsed, SchemaError> {
        super::seed_from_value(self, v)
    }
}
