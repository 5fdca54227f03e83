//! `latscope report --hdr-log FILE`: the per-second histograms of the runs as an
//! HdrHistogram interval log (the `.hlog` format of jHiccup and HdrHistogram's
//! `HistogramLogProcessor`), V2-deflate encoded, values in nanoseconds (the Max
//! column in ms). One run with one series writes untagged intervals, which every
//! tool reads; otherwise each series is tagged `<run>` (load) or `<run>.<direction>`
//! (disk), where `<run>` is the label or id.

use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;

use crate::record::RunRecord;

use super::rundata::{self, run_name, Histograms, RunDataError};

/// What can go wrong writing the log.
#[derive(Debug, thiserror::Error)]
pub enum HdrLogError {
    #[error(transparent)]
    RunData(#[from] RunDataError),
    #[error("cannot write the interval log: {0}")]
    Write(String),
    #[error("no per-second histograms in these runs (load and disk runs keep them)")]
    Empty,
}

/// A tag: the characters the format forbids (space, comma, CR, LF) become `_`.
fn tag_text(s: &str) -> String {
    s.chars()
        .map(|c| {
            if matches!(c, ' ' | ',' | '\r' | '\n') {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// The interval log of `runs`.
pub fn interval_log(runs: &[RunRecord]) -> Result<Vec<u8>, HdrLogError> {
    // (tag, run start in ms, per-second histograms)
    let mut series = Vec::new();
    for run in runs {
        let hist = Histograms::decode(run)?;
        let names: &[&str] = if rundata::has_load(run) {
            &["latency"]
        } else if run.kind == "disk" {
            &["read", "write", "fsync"]
        } else {
            &[]
        };
        for name in names {
            let secs: Vec<(u32, hdrhistogram::Histogram<u64>)> = hist
                .per_second(name)
                .into_iter()
                .map(|(t, h)| (t, h.clone()))
                .collect();
            if secs.is_empty() {
                continue;
            }
            let tag = if *name == "latency" {
                tag_text(&run_name(run))
            } else {
                tag_text(&format!("{}.{name}", run_name(run)))
            };
            series.push((tag, run.started_at_ms, secs));
        }
    }
    if series.is_empty() {
        return Err(HdrLogError::Empty);
    }
    let base_ms = series.iter().map(|s| s.1).min().unwrap_or(0).max(0);
    let base = SystemTime::UNIX_EPOCH + Duration::from_millis(base_ms as u64);
    let mut out = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut builder = IntervalLogWriterBuilder::new();
    builder
        .add_comment(&format!(
            "latscope {} per-second latency histograms, values in ns",
            env!("CARGO_PKG_VERSION")
        ))
        .with_start_time(base)
        .with_base_time(base)
        .with_max_value_divisor(1e6);
    let mut w = builder
        .begin_log_with(&mut out, &mut serializer)
        .map_err(|e| HdrLogError::Write(e.to_string()))?;
    let untagged = series.len() == 1;
    for (tag, start_ms, secs) in &series {
        let offset = Duration::from_millis((start_ms - base_ms).max(0) as u64);
        let tag = if untagged { None } else { Tag::new(tag) };
        for (t, h) in secs {
            w.write_histogram(
                h,
                offset + Duration::from_secs(u64::from(*t)),
                Duration::from_secs(1),
                tag,
            )
            .map_err(|e| HdrLogError::Write(e.to_string()))?;
        }
    }
    drop(w);
    Ok(out)
}
