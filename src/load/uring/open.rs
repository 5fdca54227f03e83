//! The open model on the io_uring engine: this thread's arrivals (`k ≡ j mod T`, at
//! the ramp's times, as the epoll worker's scheduler emits them) go into a bounded
//! queue (beyond it they are dropped and counted), and idle connections take them —
//! connected ones first, then unconnected ones, then a new one up to this thread's
//! share of `-c`. Latency runs from the intended time.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::load::engine::Prepared;
use crate::load::plan::{Model, MAX_BACKLOG};

/// Most arrivals queued (or dropped) in one loop turn, so a schedule far behind
/// still lets the connections run.
const PER_TURN: usize = 4096;

/// Arrivals due within this much of now leave now: waking for each arrival at its
/// exact time would cost a timed wait per arrival (one every 10 µs at 100,000/s).
/// Sent a little early, an arrival's latency counts from its send, so no lateness is
/// added. The epoll engine's timer groups arrivals by its 1 ms tick the same way.
pub const EARLY: Duration = Duration::from_micros(100);

/// The open model's schedule and queue on one thread.
pub struct Open {
    /// This thread's next arrival (local index).
    k: u64,
    threads: u64,
    backlog: usize,
    /// Due times of arrivals waiting for a connection.
    pub queue: VecDeque<Instant>,
    /// No arrival will come any more (count reached, or none before the end).
    pub arrivals_done: bool,
    /// When the loop must wake for the next arrival (None: none scheduled).
    pub next_due: Option<Instant>,
    /// Idle VUs with a connection, and without one.
    pub warm: Vec<usize>,
    pub cold: Vec<usize>,
}

impl Open {
    /// The schedule of thread `j` of `threads`, or None in the closed model.
    pub fn new(prep: &Prepared<'_>, j: usize, threads: usize) -> Option<Open> {
        let Model::Open { rate } = prep.plan.model else {
            return None;
        };
        let peak = if prep.plan.stages.is_empty() {
            rate
        } else {
            prep.ramp.peak()
        };
        let backlog = prep
            .plan
            .backlog
            .unwrap_or((peak.ceil() as u64).min(MAX_BACKLOG))
            .div_ceil(threads as u64 * u64::from(prep.plan.shard.count))
            .max(1) as usize;
        Some(Open {
            k: j as u64,
            threads: threads as u64,
            backlog,
            queue: VecDeque::with_capacity(backlog.min(65_536)),
            arrivals_done: false,
            next_due: None,
            warm: Vec::new(),
            cold: Vec::new(),
        })
    }

    /// Queues the arrivals due by `now + early`; `dropped` is called for each one the
    /// full queue refuses. Sets `next_due`.
    pub fn schedule(
        &mut self,
        prep: &Prepared<'_>,
        start: Instant,
        now: Instant,
        early: Duration,
        mut dropped: impl FnMut(Instant),
    ) {
        self.next_due = None;
        for _ in 0..PER_TURN {
            if self.arrivals_done || prep.plan.count.is_some_and(|n| self.k >= n) {
                self.arrivals_done = true;
                return;
            }
            let Some(at) = prep.ramp.arrival(prep.plan.shard.global(self.k) as f64) else {
                self.arrivals_done = true;
                return;
            };
            let due = start + Duration::from_secs_f64(at);
            if due > now + early {
                self.next_due = Some(due - early);
                return;
            }
            if self.queue.len() >= self.backlog {
                dropped(due);
            } else {
                self.queue.push_back(due);
            }
            self.k += self.threads;
        }
        self.next_due = Some(now);
    }
}
