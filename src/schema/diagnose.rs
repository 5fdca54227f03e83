//! The diagnose document (`latscope diagnose --json`, the stored summary of a
//! diagnose run): the probe, the cache audit, the load ramp (or why it was
//! skipped), the origin and HTTP/3 probes, "where the time goes" and the findings;
//! several URLs (and the demo) make `{kind, results: […]}`. Built from
//! [`Diagnosis`], read back by report and compare.

use std::collections::BTreeMap;

use serde::de::MapAccess;
use serde::{Deserialize, Deserializer, Serialize};

use super::de::{self, Sidecar};
use super::load::{CacheCounts, OutputDoc, TimelineRow};
use crate::diagnose::diagnosis::{Diagnosis, ProtocolRow, Ramp};
use crate::diagnose::Finding;
use crate::probe::audit::Hop;
use crate::probe::ProbeResult;
use crate::watch::WatchSummary;

/// One URL's diagnosis.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DiagnoseDoc {
    pub kind: String,
    pub schema_version: u32,
    pub target: String,
    pub probe: ProbeResult,
    pub cache: CacheSection,
    /// "Where the time goes".
    pub summary: Option<String>,
    pub findings: Vec<Finding>,
    /// The load ramp.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<RampDoc>,
    /// Why the ramp did not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// `--origin`: the origin probed directly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<ProbeResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http3: Option<Http3Doc>,
    /// h1/h2/h3 side by side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocols: Option<Vec<ProtocolRow>>,
    /// The recognised stack (server, proxy, cache, CDN, app, framework) and the
    /// evidence for each guess (issue 32); absent in runs stored before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack: Option<crate::diagnose::stack::Stack>,
}

/// The cache audit: its verdict, redirects and final URL; or why it failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum CacheSection {
    Audited {
        #[serde(flatten)]
        audit: Box<CacheDoc>,
        redirects: Vec<Hop>,
        url: String,
        /// Secret headers not sent again after a redirect to another origin.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        dropped_headers: Vec<String>,
    },
    Failed {
        error: Option<String>,
    },
}

impl Default for CacheSection {
    fn default() -> CacheSection {
        CacheSection::Failed { error: None }
    }
}

impl CacheSection {
    /// The audit, when it ran.
    pub fn audit(&self) -> Option<&CacheDoc> {
        match self {
            CacheSection::Audited { audit, .. } => Some(audit),
            CacheSection::Failed { .. } => None,
        }
    }
}

/// The cache audit's verdict (`diagnose::audit::CacheAudit` as its JSON reads).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheDoc {
    pub status: u16,
    pub cache_control: CacheControlDoc,
    pub freshness_s: Option<i64>,
    pub freshness_source: String,
    pub age_s: Option<u64>,
    pub expires: Option<String>,
    pub vary: Option<String>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub validators: bool,
    pub set_cookie: bool,
    pub shared_cacheable: bool,
    pub unstorable: Vec<String>,
    pub shared_cache: SharedCacheDoc,
    pub default_caches: BTreeMap<String, String>,
    pub default_caches_why: BTreeMap<String, String>,
    pub default_caches_ttl_s: BTreeMap<String, Option<i64>>,
    pub freshness_note: Option<String>,
    pub if_none_match: Option<ConditionalDoc>,
    pub if_modified_since: Option<ConditionalDoc>,
    pub proxy: Option<String>,
    pub edge: Option<String>,
    pub repeats: Vec<crate::cache::CacheState>,
    pub hits: u64,
    pub misses: u64,
    pub cache: Option<String>,
    pub cache_detail: Option<String>,
    pub load_hit_ratio: Option<f64>,
}

/// Parsed Cache-Control.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheControlDoc {
    pub max_age: Option<u64>,
    pub s_maxage: Option<u64>,
    pub public: bool,
    pub private: bool,
    pub no_store: bool,
    pub no_cache: bool,
    pub must_revalidate: bool,
    pub proxy_revalidate: bool,
    pub immutable: bool,
    pub no_transform: bool,
    pub stale_while_revalidate: Option<u64>,
    pub stale_if_error: Option<u64>,
    pub other: Vec<String>,
    pub bad: Vec<String>,
}

/// What RFC 9111 lets a shared cache do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SharedCacheDoc {
    pub rfc_storable: bool,
    pub fresh_for_s: Option<i64>,
    pub heuristic: bool,
    pub revalidate_every_use: bool,
    pub reasons: Vec<String>,
}

/// A conditional GET's outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConditionalDoc {
    pub status: u16,
    pub body_bytes: u64,
    pub time_ms: f64,
    pub ok: bool,
    pub excess_body: bool,
}

/// The load ramp (the diagnose document's `load`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RampDoc {
    pub kind: String,
    pub model: String,
    pub ramp: Vec<RampStepDoc>,
    pub requests: u64,
    /// Errors by kind over every step.
    pub errors: BTreeMap<String, u64>,
    pub client_cpu_pct: Option<f64>,
    pub client_cpu_wait_pct: Option<f64>,
    pub cache_hit_ratio: Option<f64>,
    pub cache: CacheCounts,
    pub stopped_early: Option<String>,
    /// The steps' seconds back to back (rows carry `concurrency`).
    pub timeline: Vec<TimelineRow>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outputs: Option<Vec<OutputDoc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watch: Option<WatchSummary>,
}

/// One step of the ramp.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RampStepDoc {
    pub connections: u32,
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub requests: u64,
    pub errors: u64,
}

/// HTTP/3 discovery and probe.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Http3Doc {
    pub alt_svc: Option<String>,
    pub https_rr: Option<String>,
    pub https_rr_checked: bool,
    pub https_rr_error: Option<String>,
    pub offered: bool,
    pub offered_by: Option<String>,
    pub port: Option<u16>,
    pub probe: Option<ProbeResult>,
    pub client_cpu_wait_ms: Option<f64>,
    pub error: Option<String>,
}

/// An entry of a several-URL diagnose run: diagnosed, or `{url, error}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum DiagnoseEntry {
    Diagnosed(Box<DiagnoseDoc>),
    Failed { url: String, error: String },
}

/// A diagnose run's summary: one URL's document, or several (the demo adds its
/// `planted`, `missing`, `unexpected` and all the findings).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum DiagnoseRun {
    One(Box<DiagnoseDoc>),
    Several(Several),
}

/// Several URLs diagnosed (or the demo).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Several {
    pub kind: String,
    pub schema_version: u32,
    pub results: Vec<DiagnoseEntry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demo: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planted: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unexpected: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub findings: Option<Vec<Finding>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wire_skipped: Option<String>,
}

impl Several {
    /// The diagnosed URLs' documents.
    pub fn diagnoses(&self) -> Vec<&DiagnoseDoc> {
        self.results
            .iter()
            .filter_map(|e| match e {
                DiagnoseEntry::Diagnosed(d) => Some(&**d),
                DiagnoseEntry::Failed { .. } => None,
            })
            .collect()
    }
}

impl DiagnoseRun {
    /// The run of these entries: one URL's document, or `{kind, results}`.
    pub fn of(mut entries: Vec<DiagnoseEntry>, several: bool) -> DiagnoseRun {
        match entries.pop() {
            Some(DiagnoseEntry::Diagnosed(d)) if !several && entries.is_empty() => {
                DiagnoseRun::One(d)
            }
            last => {
                entries.extend(last);
                DiagnoseRun::Several(Several {
                    kind: "diagnose".into(),
                    schema_version: super::SCHEMA_VERSION,
                    results: entries,
                    ..Several::default()
                })
            }
        }
    }

    /// The diagnosed URLs' documents.
    pub fn diagnoses(&self) -> Vec<&DiagnoseDoc> {
        match self {
            DiagnoseRun::One(d) => vec![d],
            DiagnoseRun::Several(s) => s.diagnoses(),
        }
    }
}

impl<'de> Deserialize<'de> for DiagnoseEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<DiagnoseEntry, D::Error> {
        let (doc, side): (DiagnoseDoc, Failure) = de::split(d)?;
        Ok(match side.error {
            Some(error) => DiagnoseEntry::Failed {
                url: side.url.unwrap_or_default(),
                error,
            },
            None => DiagnoseEntry::Diagnosed(Box::new(doc)),
        })
    }
}

/// A failed entry's `{url, error}`.
#[derive(Default)]
struct Failure {
    url: Option<String>,
    error: Option<String>,
}

impl<'de> Sidecar<'de> for Failure {
    fn takes(key: &str) -> bool {
        matches!(key, "url" | "error")
    }

    fn read<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "url" => self.url = map.next_value()?,
            _ => self.error = map.next_value()?,
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for DiagnoseRun {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<DiagnoseRun, D::Error> {
        let (doc, side): (DiagnoseDoc, SeveralSide) = de::split(d)?;
        Ok(match side.results {
            Some(results) => DiagnoseRun::Several(Several {
                kind: doc.kind,
                schema_version: doc.schema_version,
                results,
                demo: side.demo,
                planted: side.planted,
                missing: side.missing,
                unexpected: side.unexpected,
                findings: Some(doc.findings)
                    .filter(|f| !f.is_empty())
                    .or(side.findings),
                wire_skipped: side.wire_skipped,
            }),
            None => DiagnoseRun::One(Box::new(doc)),
        })
    }
}

/// A several-URL run's fields.
#[derive(Default)]
struct SeveralSide {
    results: Option<Vec<DiagnoseEntry>>,
    demo: Option<bool>,
    planted: Option<Vec<String>>,
    missing: Option<Vec<String>>,
    unexpected: Option<Vec<String>>,
    findings: Option<Vec<Finding>>,
    wire_skipped: Option<String>,
}

impl<'de> Sidecar<'de> for SeveralSide {
    fn takes(key: &str) -> bool {
        matches!(
            key,
            "results" | "demo" | "planted" | "missing" | "unexpected" | "wire_skipped"
        )
    }

    fn read<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "results" => self.results = map.next_value()?,
            "demo" => self.demo = map.next_value()?,
            "planted" => self.planted = map.next_value()?,
            "missing" => self.missing = map.next_value()?,
            "unexpected" => self.unexpected = map.next_value()?,
            _ => self.wire_skipped = map.next_value()?,
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for CacheSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<CacheSection, D::Error> {
        let (audit, side): (CacheDoc, AuditSide) = de::split(d)?;
        Ok(match (side.url, side.error) {
            (Some(url), None) => CacheSection::Audited {
                audit: Box::new(audit),
                redirects: side.redirects.unwrap_or_default(),
                url,
                dropped_headers: side.dropped_headers.unwrap_or_default(),
            },
            (_, error) => CacheSection::Failed { error },
        })
    }
}

/// The cache section's fields beside the audit.
#[derive(Default)]
struct AuditSide {
    redirects: Option<Vec<Hop>>,
    dropped_headers: Option<Vec<String>>,
    url: Option<String>,
    error: Option<String>,
}

impl<'de> Sidecar<'de> for AuditSide {
    fn takes(key: &str) -> bool {
        matches!(key, "redirects" | "url" | "error" | "dropped_headers")
    }

    fn read<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "redirects" => self.redirects = map.next_value()?,
            "url" => self.url = map.next_value()?,
            "dropped_headers" => self.dropped_headers = map.next_value()?,
            _ => self.error = map.next_value()?,
        }
        Ok(())
    }
}

impl From<&Ramp> for RampDoc {
    fn from(r: &Ramp) -> RampDoc {
        RampDoc {
            kind: "load".into(),
            model: "closed".into(),
            ramp: r
                .steps
                .iter()
                .map(|s| RampStepDoc {
                    connections: s.concurrency,
                    rps: s.rps,
                    p50_ms: s.p50_ms,
                    p99_ms: s.p99_ms,
                    requests: s.requests,
                    errors: s.errors,
                })
                .collect(),
            requests: r.facts.requests,
            errors: r.facts.errors_by_kind.clone(),
            client_cpu_pct: r.facts.client_cpu_pct,
            client_cpu_wait_pct: r.facts.client_wait_pct,
            cache_hit_ratio: r.hit_ratio,
            cache: CacheCounts {
                hits: r.cache.hits,
                misses: r.cache.misses,
                unknown: r
                    .cache
                    .answered
                    .saturating_sub(r.cache.hits + r.cache.misses),
                hit_ratio: r.hit_ratio,
                cache: r.cache.kind.map(|k| k.as_str().to_string()),
            },
            stopped_early: r.stopped_early.clone(),
            timeline: super::capacity::joined_rows(&r.timeline),
            outputs: (!r.outputs.is_empty()).then(|| r.outputs.iter().map(Into::into).collect()),
            watch: r.watch.clone(),
        }
    }
}

impl From<&Diagnosis> for DiagnoseDoc {
    fn from(d: &Diagnosis) -> DiagnoseDoc {
        let cache = match (&d.facts.cache, &d.cache) {
            (Some(facts), Some(obs)) => CacheSection::Audited {
                // The audit's own JSON read as owned data (its fields are `&'static
                // str`s where this reads Strings).
                audit: Box::new(
                    super::from_value(&super::to_value(&crate::diagnose::audit::audit(facts)))
                        .unwrap_or_default(),
                ),
                redirects: obs.redirects.clone(),
                url: obs.url.clone(),
                dropped_headers: obs.dropped_headers.clone(),
            },
            _ => CacheSection::Failed {
                error: d.cache_error.clone(),
            },
        };
        let http3 = d.http3.as_ref().map(|h| Http3Doc {
            alt_svc: h.alt_svc.clone(),
            https_rr: h.https_rr.clone(),
            https_rr_checked: h.https_rr_checked,
            https_rr_error: h.https_rr_error.clone(),
            offered: h.offered_by.is_some(),
            offered_by: h.offered_by.map(String::from),
            port: h.port,
            probe: h.h3.clone(),
            client_cpu_wait_ms: h.client_cpu_wait_ms.map(|v| (v * 1000.0).round() / 1000.0),
            error: h.error.clone(),
        });
        let protocols = d
            .http3
            .as_ref()
            .map(|_| d.protocol_rows())
            .filter(|rows| !rows.is_empty());
        DiagnoseDoc {
            kind: "diagnose".into(),
            schema_version: super::SCHEMA_VERSION,
            target: d.target.clone(),
            probe: d.probe.clone(),
            cache,
            summary: d.summary.clone(),
            findings: d.findings.clone(),
            load: d.ramp.as_ref().map(RampDoc::from),
            skipped: match &d.ramp {
                Some(_) => None,
                None => d.skipped.clone(),
            },
            origin: d.origin.clone(),
            http3,
            protocols,
            stack: d.stack.clone(),
        }
    }
}
