//! A `--find-max` search's steps joined back to back into one timeline with their
//! per-second histograms ([`Joined`], which diagnose's ramp uses too), so `show`,
//! `compare`, `report` and `export` read the search as one run; and each step's
//! scored histograms as stored. The `steps` and `capacity` JSON is
//! `schema::capacity`'s.

use super::result::SecondResult;
use super::steps::Step;
use crate::stats::StoredHistogram;

/// One second of a joined timeline: the step's second (its histograms apart) on the
/// joined clock, with the step it belongs to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JoinedSecond {
    pub second: SecondResult,
    /// The step ran with `--watch` (its rows carry the server's second, or a gap).
    pub watched: bool,
    /// The step's level (req/s or connections).
    pub level: f64,
    /// The step's index.
    pub step: usize,
    /// Past the step's settle period: scored.
    pub scored: bool,
    /// Diagnose's ramp: the step's connections.
    pub concurrency: Option<u32>,
    /// A search's step cut short by Ctrl-C.
    pub interrupted: bool,
}

/// Steps joined back to back: one timeline (the load timeline's seconds, plus the
/// step's level, index and whether the second is scored) and its per-second
/// histograms, each step's seconds after the previous step's.
#[derive(Debug, Default)]
pub struct Joined {
    /// Where the next step starts, seconds.
    pub offset: u32,
    pub timeline: Vec<JoinedSecond>,
    /// Per-second histograms (`latency`, `latency:<endpoint>`) on the joined clock.
    pub histograms: Vec<StoredHistogram>,
}

impl Joined {
    /// Appends `step` (index `i`; `concurrency` for diagnose's ramp, `interrupted`
    /// for a step cut short). Its seconds after its planned end (stragglers in the
    /// grace) fold into its last whole second, so steps sit back to back. Returns
    /// where it starts.
    pub fn push(
        &mut self,
        i: usize,
        step: &Step,
        concurrency: Option<u32>,
        interrupted: bool,
    ) -> u32 {
        let start = self.offset;
        let planned = step.plan.settle + step.plan.length;
        let whole = (planned.as_secs_f64().ceil() as u32).max(1);
        let settle = step.plan.settle.as_secs() as u32;
        let at = |t: u32| start + t.min(whole - 1);
        for s in &step.result.timeline {
            let row = JoinedSecond {
                second: SecondResult {
                    t: at(s.t),
                    v2: Vec::new(),
                    ep_v2: Vec::new(),
                    endpoints: Vec::new(),
                    ..s.clone()
                },
                watched: step.result.watch.is_some(),
                level: step.plan.level.value(),
                step: i,
                scored: s.t >= settle,
                concurrency,
                interrupted,
            };
            match self.timeline.last_mut() {
                Some(last) if last.second.t == row.second.t => fold(&mut last.second, &row.second),
                _ => self.timeline.push(row),
            }
        }
        for mut h in step.result.histograms() {
            if let Some(t) = h.second {
                h.second = Some(at(t));
                push_second(&mut self.histograms, h);
            }
        }
        self.offset += whole;
        start
    }
}

/// Folds a second of the same joined second into `last`: counts add up, percentiles
/// and connections take the worse.
pub fn fold(last: &mut SecondResult, s: &SecondResult) {
    last.requests += s.requests;
    last.ok += s.ok;
    last.errors += s.errors;
    last.bytes += s.bytes;
    last.dropped += s.dropped;
    last.cache_hits += s.cache_hits;
    last.started += s.started;
    last.checks += s.checks;
    last.checks_failed += s.checks_failed;
    if let (Some(a), Some(b)) = (last.retrans, s.retrans) {
        last.retrans = Some(a + b);
    }
    last.p50_ms = last.p50_ms.max(s.p50_ms);
    last.p90_ms = last.p90_ms.max(s.p90_ms);
    last.p99_ms = last.p99_ms.max(s.p99_ms);
    last.max_ms = last.max_ms.max(s.max_ms);
    last.active = last.active.max(s.active);
}

/// Adds a per-second histogram, adding it to one already kept for that second.
pub fn push_second(kept: &mut Vec<StoredHistogram>, h: StoredHistogram) {
    use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
    let same = kept
        .iter_mut()
        .rev()
        .find(|k| k.second == h.second && k.name == h.name);
    let Some(k) = same else {
        kept.push(h);
        return;
    };
    let mut de = Deserializer::new();
    let decoded: Option<(hdrhistogram::Histogram<u64>, hdrhistogram::Histogram<u64>)> = (|| {
        let a = de.deserialize(&mut k.v2.as_slice()).ok()?;
        let b = de.deserialize(&mut h.v2.as_slice()).ok()?;
        Some((a, b))
    })();
    if let Some((mut a, b)) = decoded {
        if a.add(&b).is_ok() {
            let mut buf = Vec::new();
            if V2DeflateSerializer::new().serialize(&a, &mut buf).is_ok() {
                k.v2 = buf;
            }
        }
    }
}

/// A step's scored histograms as stored: `latency@<tag>` and `latency:<endpoint>@<tag>`
/// (`tag` as `r210` or `c16`).
pub fn step_histograms(step: &Step) -> Vec<StoredHistogram> {
    let tag = step.plan.level.tag();
    let v2 = |h: &hdrhistogram::Histogram<u64>| {
        use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
        let mut buf = Vec::new();
        let _ = V2DeflateSerializer::new().serialize(h, &mut buf);
        buf
    };
    let mut out = vec![StoredHistogram {
        name: format!("latency@{tag}"),
        second: None,
        v2: v2(&step.window.latency),
    }];
    if step.window.endpoints.len() > 1 {
        for e in &step.window.endpoints {
            out.push(StoredHistogram {
                name: format!("latency:{}@{tag}", e.name),
                second: None,
                v2: v2(&e.latency),
            });
        }
    }
    out
}
