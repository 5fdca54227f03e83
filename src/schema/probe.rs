//! The probe document (`latscope probe --json`, the stored summary of a probe run):
//! the typed [`ProbeResult`] with the findings beside it; several URLs make
//! `{kind, results: […]}`, a URL that was not measured being `{url, error}` in its
//! place. Also the configuration a probe run is stored with.

use serde::de::MapAccess;
use serde::{Deserialize, Deserializer, Serialize};

use super::de::{self, Sidecar};
use crate::diagnose::Finding;
use crate::probe::ProbeResult;

/// One URL's probe: the result, and the findings the rules drew from it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProbeDoc {
    #[serde(flatten)]
    pub result: ProbeResult,
    pub schema_version: u32,
    pub findings: Vec<Finding>,
}

impl ProbeDoc {
    /// The document of one probe.
    pub fn new(result: ProbeResult, findings: Vec<Finding>) -> ProbeDoc {
        ProbeDoc {
            result,
            schema_version: super::SCHEMA_VERSION,
            findings,
        }
    }
}

/// An entry of a several-URL run: measured, or `{url, error}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ProbeEntry {
    Measured(Box<ProbeDoc>),
    Failed { url: String, error: String },
}

/// A probe run's summary: one URL's document, or several.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ProbeRun {
    One(Box<ProbeDoc>),
    Several {
        kind: String,
        schema_version: u32,
        results: Vec<ProbeEntry>,
    },
}

impl ProbeRun {
    /// The run of these entries: one URL's document, or `{kind, results}`.
    pub fn of(mut entries: Vec<ProbeEntry>, several: bool) -> ProbeRun {
        match entries.pop() {
            Some(ProbeEntry::Measured(doc)) if !several && entries.is_empty() => ProbeRun::One(doc),
            last => {
                entries.extend(last);
                ProbeRun::Several {
                    kind: "probe".into(),
                    schema_version: super::SCHEMA_VERSION,
                    results: entries,
                }
            }
        }
    }

    /// Every entry, in order.
    pub fn entries(&self) -> Vec<EntryRef<'_>> {
        match self {
            ProbeRun::One(d) => vec![EntryRef::Measured(d)],
            ProbeRun::Several { results, .. } => results
                .iter()
                .map(|e| match e {
                    ProbeEntry::Measured(d) => EntryRef::Measured(d),
                    ProbeEntry::Failed { url, error } => EntryRef::Failed { url, error },
                })
                .collect(),
        }
    }

    /// The measured URLs' documents.
    pub fn measured(&self) -> impl Iterator<Item = &ProbeDoc> {
        self.entries().into_iter().filter_map(|e| match e {
            EntryRef::Measured(d) => Some(d),
            EntryRef::Failed { .. } => None,
        })
    }
}

/// An entry, borrowed.
#[derive(Debug, Clone, Copy)]
pub enum EntryRef<'a> {
    Measured(&'a ProbeDoc),
    Failed { url: &'a str, error: &'a str },
}

/// What a probe document keeps beside its result (and a several-URL run's fields).
#[derive(Default)]
struct Side {
    schema_version: Option<u32>,
    findings: Option<Vec<Finding>>,
    url: Option<String>,
    error: Option<String>,
    results: Option<Vec<ProbeEntry>>,
}

impl<'de> Sidecar<'de> for Side {
    fn takes(key: &str) -> bool {
        matches!(
            key,
            "schema_version" | "findings" | "url" | "error" | "results"
        )
    }

    fn read<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "schema_version" => self.schema_version = map.next_value()?,
            "findings" => self.findings = map.next_value()?,
            "url" => self.url = map.next_value()?,
            "error" => self.error = map.next_value()?,
            _ => self.results = map.next_value()?,
        }
        Ok(())
    }
}

impl Side {
    fn doc(self, result: ProbeResult) -> ProbeDoc {
        ProbeDoc {
            result,
            schema_version: self.schema_version.unwrap_or(0),
            findings: self.findings.unwrap_or_default(),
        }
    }
}

impl<'de> Deserialize<'de> for ProbeDoc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ProbeDoc, D::Error> {
        let (result, side): (ProbeResult, Side) = de::split(d)?;
        Ok(side.doc(result))
    }
}

impl<'de> Deserialize<'de> for ProbeEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ProbeEntry, D::Error> {
        let (result, mut side): (ProbeResult, Side) = de::split(d)?;
        Ok(match side.error.take() {
            Some(error) => ProbeEntry::Failed {
                url: side.url.take().unwrap_or_default(),
                error,
            },
            None => ProbeEntry::Measured(Box::new(side.doc(result))),
        })
    }
}

impl<'de> Deserialize<'de> for ProbeRun {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ProbeRun, D::Error> {
        let (result, mut side): (ProbeResult, Side) = de::split(d)?;
        Ok(match side.results.take() {
            Some(results) => ProbeRun::Several {
                kind: result.kind,
                schema_version: side.schema_version.unwrap_or(0),
                results,
            },
            None => ProbeRun::One(Box::new(side.doc(result))),
        })
    }
}

/// The configuration a probe run is stored with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProbeConfigDoc {
    pub urls: Vec<String>,
    pub count: u32,
    pub method: String,
    /// `-H` as given (`Name: value`).
    pub headers: Vec<String>,
    pub timeout_s: f64,
    pub insecure: bool,
    /// "Auto", "Http1" or "Http2".
    pub http_version: String,
    pub http3: bool,
}
