//! The portable export file (`latscope export`, `import`, and the file a run is
//! written to when the store cannot take it) and the reading of one: streamed from
//! the file into the run's typed documents (`schema`), never held as one JSON tree,
//! so a file takes at most about twice its size in memory; every field checked
//! against its type and range, every histogram decoded within a size cap. This module
//! checks; it never prints.

use std::fmt;
use std::io::Read;

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::{v2, Environment, RunRecord, StoredHistogram, EXPORT_FORMAT};
use crate::diagnose::Finding;
use crate::schema::run::{Config, Parsed, Part, PartSeed, Timeline};
use crate::schema::{self, validate, Summary, KINDS};

/// The `format` field of an export file.
pub const FORMAT_NAME: &str = "latscope-run";

/// The largest export file `import` reads: 256 MiB.
pub const MAX_FILE: u64 = 256 << 20;
/// The most histograms one run may hold (a 10,000-endpoint run holds ~10,000 plus its
/// per-second ones).
pub const MAX_HISTOGRAMS: usize = 200_000;

/// The portable file `latscope export` writes.
#[derive(Debug, Serialize, Deserialize)]
pub struct ExportFile {
    pub format: String,
    pub format_version: u32,
    pub run: RunRecord,
}

impl ExportFile {
    /// The export of `run`.
    pub fn new(run: RunRecord) -> ExportFile {
        ExportFile {
            format: FORMAT_NAME.into(),
            format_version: EXPORT_FORMAT,
            run,
        }
    }
}

/// A run read from an export file: its documents typed and checked.
#[derive(Debug, Clone)]
pub struct ImportedRun {
    pub id: String,
    pub kind: String,
    pub label: Option<String>,
    pub target: String,
    pub started_at_ms: i64,
    pub duration_s: f64,
    pub version: String,
    pub config: Config,
    pub env: Environment,
    pub summary: Summary,
    pub timeline: Timeline,
    pub findings: Vec<Finding>,
    pub text: String,
    pub histograms: Vec<StoredHistogram>,
}

/// Reads and checks an export file from `reader` (at most [`MAX_FILE`] bytes are
/// read); the error names what is wrong, and where.
pub fn read(reader: impl Read) -> Result<ImportedRun, String> {
    let mut limited = Limited {
        inner: reader,
        left: MAX_FILE,
        over: false,
    };
    let outcome = {
        let mut buffered = std::io::BufReader::with_capacity(64 << 10, &mut limited);
        schema::read_tracked(
            &mut serde_json::Deserializer::from_reader(&mut buffered as &mut dyn Read),
            std::marker::PhantomData::<File>,
        )
    };
    if limited.over {
        return Err(format!(
            "larger than an export can be ({} MiB)",
            MAX_FILE >> 20
        ));
    }
    let file = outcome.map_err(|(path, e)| {
        if path.is_empty() || path == "." {
            format!("not a latscope export (line {}): {e}", e.line())
        } else {
            format!("not a latscope export: {path}: {e}")
        }
    })?;
    if file.format != FORMAT_NAME {
        return Err(format!(
            "not a latscope export (format '{}')",
            file.format.escape_default()
        ));
    }
    if file.format_version > EXPORT_FORMAT {
        return Err(format!(
            "exported by a newer latscope (format {}, this one reads up to {EXPORT_FORMAT})",
            file.format_version
        ));
    }
    let mut run = file.run.ok_or("not a latscope export: no run")?;
    check(&mut run)?;
    Ok(run)
}

/// A reader that stops after `left` bytes and remembers that there was more.
struct Limited<R> {
    inner: R,
    left: u64,
    over: bool,
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            let mut one = [0u8; 1];
            if self.inner.read(&mut one)? > 0 {
                self.over = true;
                return Err(std::io::Error::other("the file is too large"));
            }
            return Ok(0);
        }
        let max = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..max])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// An export file as read.
#[derive(Deserialize)]
struct File {
    format: String,
    format_version: u32,
    run: Option<ImportedRun>,
}

impl<'de> Deserialize<'de> for ImportedRun {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ImportedRun, D::Error> {
        d.deserialize_map(RunVisitor)
    }
}

struct RunVisitor;

impl<'de> Visitor<'de> for RunVisitor {
    type Value = ImportedRun;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a run")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ImportedRun, A::Error> {
        let mut id = None;
        let mut kind: Option<String> = None;
        let mut label = None;
        let mut target = None;
        let mut started_at_ms = None;
        let mut duration_s = None;
        let mut version = None;
        let mut env = None;
        let mut text = None;
        let mut findings = None;
        let mut histograms = None;
        let (mut config, mut summary, mut timeline) = (None, None, None);
        // Parts that came before `kind` (a file written with sorted keys): read as
        // JSON, typed once the kind is known.
        let mut early: Vec<(Part, Value)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let part = match key.as_str() {
                "config" => Part::Config,
                "summary" => Part::Summary,
                "timeline" => Part::Timeline,
                _ => {
                    match key.as_str() {
                        "id" => id = Some(map.next_value::<String>()?),
                        "kind" => kind = Some(map.next_value::<Kind>()?.0),
                        "label" => label = map.next_value::<Option<String>>()?,
                        "target" => target = Some(map.next_value::<String>()?),
                        "started_at_ms" => started_at_ms = Some(map.next_value::<i64>()?),
                        "duration_s" => duration_s = Some(map.next_value::<f64>()?),
                        "version" => version = Some(map.next_value::<String>()?),
                        "env" => env = Some(map.next_value::<Environment>()?),
                        "text" => text = Some(map.next_value::<String>()?),
                        "findings" => {
                            findings = map.next_value::<Option<Vec<Finding>>>()?;
                        }
                        "histograms" => {
                            histograms = Some(map.next_value::<Vec<StoredHistogram>>()?);
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                    continue;
                }
            };
            let parsed = match &kind {
                Some(k) => map.next_value_seed(PartSeed { kind: k, part })?,
                None => {
                    early.push((part, map.next_value::<Value>()?));
                    continue;
                }
            };
            put(parsed, &mut config, &mut summary, &mut timeline);
        }
        let missing = |f: &'static str| de::Error::missing_field(f);
        let kind = kind.ok_or_else(|| missing("kind"))?;
        for (part, v) in early {
            let name = match part {
                Part::Summary => "summary",
                Part::Config => "config",
                Part::Timeline => "timeline",
            };
            let parsed = PartSeed { kind: &kind, part }
                .from_value(&v)
                .map_err(|e| de::Error::custom(e.under(name)))?;
            put(parsed, &mut config, &mut summary, &mut timeline);
        }
        Ok(ImportedRun {
            id: id.ok_or_else(|| missing("id"))?,
            kind,
            label,
            target: target.ok_or_else(|| missing("target"))?,
            started_at_ms: started_at_ms.ok_or_else(|| missing("started_at_ms"))?,
            duration_s: duration_s.ok_or_else(|| missing("duration_s"))?,
            version: version.ok_or_else(|| missing("version"))?,
            config: config.unwrap_or(Config::None),
            env: env.ok_or_else(|| missing("env"))?,
            summary: summary.ok_or_else(|| missing("summary"))?,
            timeline: timeline.unwrap_or(Timeline::None),
            findings: findings.unwrap_or_default(),
            text: text.unwrap_or_default(),
            histograms: histograms.unwrap_or_default(),
        })
    }
}

/// A run's kind, one of [`KINDS`] (refused as the value is read, so the error's
/// path is `run.kind`).
struct Kind(String);

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Kind, D::Error> {
        let k = String::deserialize(d)?;
        if !KINDS.contains(&k.as_str()) {
            return Err(de::Error::custom(format!(
                "'{}' is not one of {}",
                k.escape_default(),
                KINDS.join(", ")
            )));
        }
        Ok(Kind(k))
    }
}

fn put(
    parsed: Parsed,
    config: &mut Option<Config>,
    summary: &mut Option<Summary>,
    timeline: &mut Option<Timeline>,
) {
    match parsed {
        Parsed::Config(c) => *config = Some(c),
        Parsed::Summary(s) => *summary = Some(s),
        Parsed::Timeline(t) => *timeline = Some(t),
    }
}

/// Checks the ranges of every field of an imported run, and decodes every histogram.
pub fn check(run: &mut ImportedRun) -> Result<(), String> {
    let id_ok = run.id.len() <= 64
        && run
            .id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !id_ok {
        return Err(format!(
            "run.id '{}' is not an id (letters, digits, '-' and '_', at most 64)",
            run.id.escape_default()
        ));
    }
    if run.started_at_ms < 0 {
        return Err(format!(
            "run.started_at_ms {} is negative",
            run.started_at_ms
        ));
    }
    if !(run.duration_s.is_finite() && (0.0..=validate::MAX_NUMBER).contains(&run.duration_s)) {
        return Err(format!(
            "run.duration_s {} is not a duration",
            run.duration_s
        ));
    }
    let named = |e: schema::SchemaError| format!("{}", e.under("run"));
    validate::summary(&mut run.summary).map_err(named)?;
    match &run.config {
        Config::Load(p) => validate::plan(p).map_err(named)?,
        other => validate::numbers(other, "config").map_err(named)?,
    }
    match &run.timeline {
        Timeline::Load(rows) => {
            for (i, r) in rows.iter().enumerate() {
                validate::row(r, &format!("timeline[{i}]")).map_err(named)?;
            }
        }
        Timeline::Disk(rows) => {
            for (i, r) in rows.iter().enumerate() {
                validate::numbers(r, &format!("timeline[{i}]")).map_err(named)?;
            }
        }
        Timeline::None => {}
    }
    validate::numbers(&run.findings, "findings").map_err(named)?;
    if run.histograms.len() > MAX_HISTOGRAMS {
        return Err(format!(
            "run.histograms holds {} histograms (at most {MAX_HISTOGRAMS})",
            run.histograms.len()
        ));
    }
    for (i, h) in run.histograms.iter().enumerate() {
        if h.name.is_empty() || h.name.len() > 4096 {
            return Err(format!(
                "run.histograms[{i}] has no name or one over 4096 bytes"
            ));
        }
        v2::decode(&h.v2).map_err(|e| {
            let second = h.second.map(|s| format!(" second {s}")).unwrap_or_default();
            format!(
                "run.histograms[{i}] ('{}'{second}) is not a valid histogram: {e}",
                h.name.escape_default()
            )
        })?;
    }
    Ok(())
}

impl ImportedRun {
    /// Redacts secrets as a run of this latscope would have been (its documents
    /// piece by piece, its target, label, text and histogram names).
    pub fn redact(&mut self, extra: &[String]) {
        schema::redact::summary(&mut self.summary, extra);
        match &mut self.config {
            Config::Load(p) => {
                schema::redact::each(&mut p.endpoints, extra);
                schema::redact::value(&mut **p, extra);
            }
            Config::Probe(p) => schema::redact::value(p, extra),
            Config::Disk(p) => schema::redact::value(p, extra),
            Config::Diagnose(p) => schema::redact::value(p, extra),
            Config::Page(p) => schema::redact::value(p, extra),
            Config::None => {}
        }
        match &mut self.timeline {
            Timeline::Load(rows) => schema::redact::each(rows, extra),
            Timeline::Disk(rows) => schema::redact::each(rows, extra),
            Timeline::None => {}
        }
        schema::redact::each(&mut self.findings, extra);
        self.target = super::redact_urls(&self.target);
        self.label = self.label.as_deref().map(super::redact_urls);
        self.text = super::redact_text(&self.text, extra);
        for h in &mut self.histograms {
            h.name = super::redact_urls(&h.name);
        }
    }

    /// The run as a record (its documents as JSON), for what reads records (merge).
    pub fn into_record(self) -> RunRecord {
        RunRecord {
            id: self.id,
            kind: self.kind,
            label: self.label,
            target: self.target,
            started_at_ms: self.started_at_ms,
            duration_s: self.duration_s,
            version: self.version,
            config: schema::to_value(&self.config),
            env: self.env,
            summary: schema::to_value(&self.summary),
            timeline: schema::to_value(&self.timeline),
            findings: schema::to_value(&self.findings),
            text: self.text,
            histograms: self.histograms,
        }
    }
}
