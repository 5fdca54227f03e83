//! Recording completions without locks: each engine worker keeps the histograms of
//! the current second and hands them to the collector (on the calling thread) when
//! its completions move into the next second. The collector merges the workers'
//! seconds, closes a second once every worker has moved past it, and builds the
//! run's totals and per-second timeline from them.

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::disk::options::DiskError;
use crate::stats::histogram::{new_histogram, HIGHEST_NS, LOWEST_NS, SIGFIG};

/// What a latency belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Read,
    Write,
    Fsync,
}

/// Read, write and fdatasync latencies (ns) of one stretch of time.
#[derive(Debug, Clone)]
pub(crate) struct Hists {
    pub read: Histogram<u64>,
    pub write: Histogram<u64>,
    pub fsync: Histogram<u64>,
}

impl Hists {
    /// Small histograms that grow as needed (per-second ones stay cheap).
    pub(crate) fn small() -> Hists {
        let h = || {
            let mut h = Histogram::new_with_bounds(LOWEST_NS, 1_000_000, SIGFIG)
                .expect("static bounds are valid");
            h.auto(true);
            h
        };
        Hists {
            read: h(),
            write: h(),
            fsync: h(),
        }
    }

    /// Full-range histograms (1 µs .. 1 h) for the run's totals.
    pub(crate) fn full() -> Hists {
        Hists {
            read: new_histogram(),
            write: new_histogram(),
            fsync: new_histogram(),
        }
    }

    fn get_mut(&mut self, kind: Kind) -> &mut Histogram<u64> {
        match kind {
            Kind::Read => &mut self.read,
            Kind::Write => &mut self.write,
            Kind::Fsync => &mut self.fsync,
        }
    }

    /// Adds another set into this one.
    pub(crate) fn add(&mut self, other: &Hists) {
        // Both sides resize or cover the full range, so adding cannot fail.
        let _ = self.read.add(&other.read);
        let _ = self.write.add(&other.write);
        let _ = self.fsync.add(&other.fsync);
    }

    fn is_empty(&self) -> bool {
        self.read.is_empty() && self.write.is_empty() && self.fsync.is_empty()
    }
}

/// A worker's message to the collector.
pub(crate) enum Msg {
    /// The worker's histograms of second `t`; it has moved on to second `now`.
    Second {
        worker: usize,
        t: u32,
        now: u32,
        hists: Box<Hists>,
    },
    /// The worker stopped at `end` (never later than the deadline).
    Done {
        worker: usize,
        end: Instant,
        result: Result<(), DiskError>,
    },
}

/// One worker's recorder.
pub(crate) struct Recorder {
    worker: usize,
    t0: Instant,
    cur: u32,
    hists: Hists,
    tx: Sender<Msg>,
}

impl Recorder {
    /// A recorder for `worker`, seconds counted from `t0`.
    pub(crate) fn new(worker: usize, t0: Instant, tx: Sender<Msg>) -> Recorder {
        Recorder {
            worker,
            t0,
            cur: 0,
            hists: Hists::small(),
            tx,
        }
    }

    /// Records one latency that completed at `at`.
    /// Completions before `t0` (a warm-up) are not recorded.
    pub(crate) fn record(&mut self, kind: Kind, latency: Duration, at: Instant) {
        if at < self.t0 {
            return;
        }
        let s = at.saturating_duration_since(self.t0).as_secs() as u32;
        if s > self.cur {
            self.flush(s);
        }
        let ns = u64::try_from(latency.as_nanos())
            .unwrap_or(u64::MAX)
            .clamp(LOWEST_NS, HIGHEST_NS);
        let _ = self.hists.get_mut(kind).record(ns);
    }

    fn flush(&mut self, now: u32) {
        let hists = std::mem::replace(&mut self.hists, Hists::small());
        if !hists.is_empty() {
            let _ = self.tx.send(Msg::Second {
                worker: self.worker,
                t: self.cur,
                now,
                hists: Box::new(hists),
            });
        }
        self.cur = now;
    }

    /// Sends what is left and the worker's outcome.
    pub(crate) fn finish(mut self, end: Instant, result: Result<(), DiskError>) {
        self.flush(u32::MAX);
        let _ = self.tx.send(Msg::Done {
            worker: self.worker,
            end,
            result,
        });
    }
}

/// One closed second of the run.
#[derive(Debug, Clone)]
pub struct SecondHists {
    /// Seconds since the start of the measurement (this second is `[t, t+1)`).
    pub t: u32,
    pub(crate) hists: Hists,
}

impl SecondHists {
    /// Read completion latencies of the second, ns.
    pub fn read(&self) -> &Histogram<u64> {
        &self.hists.read
    }

    /// Write completion latencies of the second, ns.
    pub fn write(&self) -> &Histogram<u64> {
        &self.hists.write
    }

    /// fdatasync latencies of the second, ns.
    pub fn fsync(&self) -> &Histogram<u64> {
        &self.hists.fsync
    }
}

/// What the collector gathered (each second went to `on_second` and is not kept:
/// memory stays flat however long the run).
pub(crate) struct Collected {
    pub totals: Hists,
    /// The latest worker end.
    pub end: Option<Instant>,
    /// The first worker error.
    pub error: Option<DiskError>,
}

/// Receives until every worker is done; `on_second` sees each second as it closes.
pub(crate) fn collect(
    rx: Receiver<Msg>,
    workers: usize,
    on_second: &mut dyn FnMut(&SecondHists),
) -> Collected {
    let mut pending: BTreeMap<u32, Hists> = BTreeMap::new();
    let mut passed = vec![0u32; workers];
    let mut out = Collected {
        totals: Hists::full(),
        end: None,
        error: None,
    };
    let mut close = |upto: u32, pending: &mut BTreeMap<u32, Hists>, out: &mut Collected| {
        while let Some(entry) = pending.first_entry() {
            if *entry.key() >= upto {
                break;
            }
            let (t, hists) = entry.remove_entry();
            out.totals.add(&hists);
            on_second(&SecondHists { t, hists });
        }
    };
    for msg in rx {
        match msg {
            Msg::Second {
                worker,
                t,
                now,
                hists,
            } => {
                pending.entry(t).or_insert_with(Hists::small).add(&hists);
                if let Some(p) = passed.get_mut(worker) {
                    *p = now;
                }
            }
            Msg::Done {
                worker,
                end,
                result,
            } => {
                if let Some(p) = passed.get_mut(worker) {
                    *p = u32::MAX;
                }
                out.end = Some(out.end.map_or(end, |e| e.max(end)));
                if let Err(e) = result {
                    out.error.get_or_insert(e);
                }
            }
        }
        let upto = passed.iter().copied().min().unwrap_or(u32::MAX);
        close(upto, &mut pending, &mut out);
    }
    close(u32::MAX, &mut pending, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    /// Two workers' seconds merge; a second closes only when both moved past it, and
    /// the totals hold every latency.
    #[test]
    fn merges_and_closes_in_order() {
        let (tx, rx) = channel();
        let t0 = Instant::now();
        let mut a = Recorder::new(0, t0, tx.clone());
        let mut b = Recorder::new(1, t0, tx);
        let us = Duration::from_micros;
        a.record(Kind::Read, us(100), t0 + Duration::from_millis(10));
        b.record(Kind::Write, us(200), t0 + Duration::from_millis(20));
        a.record(Kind::Read, us(300), t0 + Duration::from_millis(1500));
        b.record(Kind::Fsync, us(5000), t0 + Duration::from_millis(2500));
        a.finish(t0 + Duration::from_secs(3), Ok(()));
        b.finish(t0 + Duration::from_secs(3), Ok(()));
        let mut closed = Vec::new();
        let c = collect(rx, 2, &mut |s| {
            closed.push((s.t, s.hists.read.len() + s.hists.write.len()))
        });
        assert_eq!(closed, [(0, 2), (1, 1), (2, 0)]);
        assert_eq!(c.totals.read.len(), 2);
        assert_eq!(c.totals.write.len(), 1);
        assert_eq!(c.totals.fsync.len(), 1);
        assert!(c.error.is_none());
        assert_eq!(c.end, Some(t0 + Duration::from_secs(3)));
    }
}
