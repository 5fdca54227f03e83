//! Server-wide limits every route (except `/__lab/stats`) passes through: a worker
//! pool (`--workers`), a service rate (`--capacity`), and periodic stalls
//! (`--stall-every`/`--stall-for`). Together they make a server that saturates — load
//! shows a knee — or pauses, as a GC would.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::{LabOptions, OverloadPolicy, StallOptions};

/// With `--overload 503`, the `--capacity` queue holds at most this much waiting time
/// (or one request, when one request takes longer); later arrivals get 503.
const QUEUE_BOUND: Duration = Duration::from_millis(100);

/// A request's right to be served; holds its worker slot while alive.
#[derive(Debug)]
pub(crate) struct Ticket {
    _permit: Option<OwnedSemaphorePermit>,
}

/// Why a request was turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rejected {
    /// Every worker is busy.
    Workers,
    /// The capacity queue is full.
    Capacity,
}

/// The server-wide limits of one lab.
#[derive(Debug)]
pub(crate) struct Gate {
    workers: Option<Arc<Semaphore>>,
    pacer: Option<Pacer>,
    overload: OverloadPolicy,
    stall: Option<StallOptions>,
    start: Instant,
}

impl Gate {
    /// Limits as the options say, with stalls counted from `start`.
    pub(crate) fn new(options: &LabOptions, start: Instant) -> Gate {
        Gate {
            workers: options.workers.map(|n| Arc::new(Semaphore::new(n.max(1)))),
            pacer: options.capacity.map(|rps| Pacer {
                interval: Duration::from_secs_f64(1.0 / rps),
                next: Mutex::new(start),
            }),
            overload: options.overload,
            stall: options.stall,
            start,
        }
    }

    /// Waits for a worker and for this request's turn under `--capacity`, or turns
    /// the request away at once under `--overload 503`.
    pub(crate) async fn admit(&self) -> Result<Ticket, Rejected> {
        let permit = match &self.workers {
            None => None,
            Some(sem) => Some(match self.overload {
                OverloadPolicy::Queue => sem
                    .clone()
                    .acquire_owned()
                    .await
                    .map_err(|_| Rejected::Workers)?,
                OverloadPolicy::Reject => sem
                    .clone()
                    .try_acquire_owned()
                    .map_err(|_| Rejected::Workers)?,
            }),
        };
        if let Some(pacer) = &self.pacer {
            let slot = pacer.reserve(self.overload)?;
            tokio::time::sleep_until(slot).await;
        }
        Ok(Ticket { _permit: permit })
    }

    /// Waits until the stall the server is in (if any) ends.
    pub(crate) async fn hold_for_stall(&self) {
        if let Some(stall) = self.stall {
            if let Some(end) = stall_end(stall, self.start, Instant::now()) {
                tokio::time::sleep_until(end).await;
            }
        }
    }
}

/// A queueing server with a fixed service rate: request k may start no earlier than
/// k × interval after the previous one, so at most `capacity` start per second.
#[derive(Debug)]
struct Pacer {
    interval: Duration,
    next: Mutex<Instant>,
}

impl Pacer {
    /// Reserves the next free slot; under `Reject`, refuses when the wait would exceed
    /// the queue bound.
    fn reserve(&self, overload: OverloadPolicy) -> Result<Instant, Rejected> {
        let now = Instant::now();
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        let slot = (*next).max(now);
        if overload == OverloadPolicy::Reject && slot - now > QUEUE_BOUND.max(self.interval) {
            return Err(Rejected::Capacity);
        }
        *next = slot + self.interval;
        Ok(slot)
    }
}

/// When the stall that `now` falls in ends, or None when the server is not stalled.
/// Stalls start at `every`, `2 × every`, … after `start` and last `length`.
fn stall_end(stall: StallOptions, start: Instant, now: Instant) -> Option<Instant> {
    let elapsed = now.saturating_duration_since(start);
    let every = stall.every.as_nanos();
    if every == 0 || elapsed < stall.every {
        return None;
    }
    let k = elapsed.as_nanos() / every;
    let window_start = start + Duration::from_nanos((k * every) as u64);
    let end = window_start + stall.length;
    (now < end).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_windows() {
        let s = StallOptions {
            every: Duration::from_secs(1),
            length: Duration::from_millis(200),
        };
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        assert_eq!(stall_end(s, t0, at(500)), None);
        assert_eq!(stall_end(s, t0, at(1000)), Some(at(1200)));
        assert_eq!(stall_end(s, t0, at(1100)), Some(at(1200)));
        assert_eq!(stall_end(s, t0, at(1200)), None);
        assert_eq!(stall_end(s, t0, at(3050)), Some(at(3200)));
    }

    #[test]
    fn pacer_spaces_slots_and_bounds_the_queue() {
        let p = Pacer {
            interval: Duration::from_millis(50),
            next: Mutex::new(Instant::now()),
        };
        let a = p.reserve(OverloadPolicy::Queue).unwrap();
        let b = p.reserve(OverloadPolicy::Queue).unwrap();
        assert_eq!(b - a, Duration::from_millis(50));
        // Two more fit within 100 ms of waiting; the next does not.
        assert!(p.reserve(OverloadPolicy::Reject).is_ok());
        assert_eq!(p.reserve(OverloadPolicy::Reject), Err(Rejected::Capacity));
    }
}
