//! The live feed: each second of a run, merged over the worker threads as soon as
//! every thread has closed it, for consumers that watch a run while it goes (the live
//! view, remote-write). The merge is the stored timeline's own (`seconds`), so a
//! second seen live is the second the run's JSON reports.

use std::collections::BTreeMap;
use std::sync::Arc;

use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::recorder::{Live, SecondAcc};
use super::result::SecondResult;
use super::seconds::{merge_second, merge_v2};
use super::sys::SecondSample;

/// One completed second of a running load.
#[derive(Debug, Clone)]
pub struct LiveSecond {
    /// The second as the run's timeline stores it (the per-endpoint started counts,
    /// `endpoints`, are left empty live).
    pub second: SecondResult,
    /// This second's latency histogram, ns (empty when nothing completed).
    pub latency: Histogram<u64>,
    /// Open model only: this second's service-time histogram, ns.
    pub service: Option<Histogram<u64>>,
}

/// Collects what the worker threads publish and hands out the seconds every thread
/// has closed, in order.
pub(crate) struct Feed {
    endpoints: usize,
    open: bool,
    /// Parts of the seconds not handed out yet, by index.
    pending: BTreeMap<usize, Vec<SecondAcc>>,
    /// Per thread: how many seconds it has closed.
    closed: Vec<usize>,
    /// The next second to hand out.
    next: usize,
    /// Per thread: its latest totals (statuses, endpoints).
    statuses: Vec<Vec<(u16, u64)>>,
    endpoint_totals: Vec<Vec<(u64, u64)>>,
    de: Deserializer,
}

impl Feed {
    pub(crate) fn new(threads: usize, endpoints: usize, open: bool) -> Feed {
        Feed {
            endpoints,
            open,
            pending: BTreeMap::new(),
            closed: vec![0; threads],
            next: 0,
            statuses: vec![Vec::new(); threads],
            endpoint_totals: vec![Vec::new(); threads],
            de: Deserializer::new(),
        }
    }

    /// Takes what each thread published since the last call.
    pub(crate) fn take(&mut self, lives: &[Arc<Live>]) {
        for (j, live) in lives.iter().enumerate() {
            let Ok(mut feed) = live.feed.lock() else {
                continue;
            };
            if feed.seconds.is_empty() {
                continue;
            }
            for (t, s) in feed.seconds.drain(..) {
                self.closed[j] = self.closed[j].max(t + 1);
                self.pending.entry(t).or_default().push(s);
            }
            self.statuses[j] = std::mem::take(&mut feed.statuses);
            self.endpoint_totals[j] = std::mem::take(&mut feed.endpoints);
        }
    }

    /// The seconds every thread has closed (all of them when `all`, at the end of the
    /// run), in order, each joined with its host sample.
    pub(crate) fn ready(&mut self, samples: &[SecondSample], all: bool) -> Vec<LiveSecond> {
        let upto = if all {
            self.pending.keys().next_back().map_or(self.next, |t| t + 1)
        } else {
            self.closed.iter().copied().min().unwrap_or(0)
        };
        let mut out = Vec::new();
        while self.next < upto {
            let t = self.next;
            let parts = self.pending.remove(&t).unwrap_or_default();
            let refs: Vec<&SecondAcc> = parts.iter().collect();
            let (second, latency) =
                merge_second(t, &refs, self.endpoints, samples.get(t), &mut self.de);
            let service = self
                .open
                .then(|| merge_v2(&refs, |s| &s.service_v2, &mut self.de));
            out.push(LiveSecond {
                second,
                latency,
                service,
            });
            self.next += 1;
        }
        out
    }

    /// Status code counts so far, over all threads.
    pub(crate) fn statuses(&self) -> BTreeMap<u16, u64> {
        let mut all = BTreeMap::new();
        for (status, n) in self.statuses.iter().flatten() {
            *all.entry(*status).or_insert(0) += n;
        }
        all
    }

    /// Per endpoint (plan order): (requests, ok) so far, over all threads.
    pub(crate) fn endpoints(&self) -> Vec<(u64, u64)> {
        let mut all = vec![(0, 0); self.endpoints];
        for thread in &self.endpoint_totals {
            for (a, (r, ok)) in all.iter_mut().zip(thread) {
                a.0 += r;
                a.1 += ok;
            }
        }
        all
    }
}
