//! Batched wakes on the epoll engine: when a worker thread runs out of work and
//! would sleep in `epoll_wait` until the next response, it first sleeps a short
//! window so that one wake collects several responses, and the requests they free
//! leave together. Against a saturated server with many requests in flight, waking
//! once per response costs a context switch each way and a write per request
//! (bench/RESULTS.md, "HTTP/2: where latscope's CPU goes"); one wake per window
//! costs them once per batch.
//!
//! The price is that a response which arrived during the window is read up to the
//! window late, and the epoll engine times a response when it reads it (the
//! io_uring engine reads the kernel's receive timestamp instead). So the window is
//! taken only where it is small beside what is measured: at most
//! [`LATENCY_SHARE`] of the recent fast response times (the 10th percentile of the
//! last tick's, 100 ms: latency, or in the open model service time, which a backlog
//! of arrivals does not lengthen), at most [`MAX_WINDOW`], and only when at the
//! recent pace at least [`MIN_EXPECTED`] responses arrive within it, which in a
//! steady state needs 50 or more in flight. A run of short requests (the usual
//! `-c 50` against a fast server, p10 well under a millisecond) never batches;
//! 1,000 HTTP/2 streams against a server answering in 10 ms do, and what each
//! records is late by at most 2 % of the recent p10. After a sudden fall in
//! concurrency or latency the last tick's window holds for up to one tick; the
//! hook also delays a timer already due by up to the window (tokio's timers are
//! 1 ms coarse; the open model's arrivals are aimed a tick early).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The longest window.
pub const MAX_WINDOW: Duration = Duration::from_micros(200);

/// The window is at most this share of the recent 10th-percentile latency
/// (1/50: what a response is read late by stays under 2 % of the fast ones).
pub const LATENCY_SHARE: u32 = 50;

/// No window shorter than this: the sleep itself costs what a wake costs.
pub const MIN_WINDOW: Duration = Duration::from_micros(10);

/// Responses the recent pace must bring within the window for it to be taken.
pub const MIN_EXPECTED: f64 = 1.0;

/// The fewest responses a tick's figures rest on; after a tick with fewer the
/// thread does not batch (with so few, a window could be long beside them).
pub const MIN_SAMPLES: u64 = 50;

/// The window for a thread whose recent responses had 10th-percentile latency
/// `p10` and arrived at `pace` per second; zero: do not batch.
pub fn window(p10: Duration, pace: f64) -> Duration {
    let w = (p10 / LATENCY_SHARE).min(MAX_WINDOW);
    let expected = pace * w.as_secs_f64();
    if w < MIN_WINDOW || expected.is_nan() || expected < MIN_EXPECTED {
        return Duration::ZERO;
    }
    w
}

/// A worker thread's window, shared with its runtime's park hook (which must be
/// `Send + Sync`, though only the worker thread parks).
#[derive(Clone, Default)]
pub struct Wake {
    ns: Arc<AtomicU64>,
    /// The longest window slept so far.
    slept: Arc<AtomicU64>,
}

impl Wake {
    /// Sets the window the thread sleeps before each park.
    pub fn set(&self, w: Duration) {
        let ns = w.as_nanos().min(u128::from(u64::MAX)) as u64;
        if ns > 0 && self.ns.load(Ordering::Relaxed) == 0 {
            precise_sleeps();
        }
        self.ns.store(ns, Ordering::Relaxed);
    }

    /// The runtime's park hook: sleeps the window, if any, so the `epoll_wait`
    /// that follows finds what arrived meanwhile instead of waking for its first.
    pub fn before_park(&self) {
        let ns = self.ns.load(Ordering::Relaxed);
        if ns > 0 {
            std::thread::sleep(Duration::from_nanos(ns));
            self.slept.fetch_max(ns, Ordering::Relaxed);
        }
    }

    /// The longest window the hook slept (the one asked for: on a busy machine a
    /// sleep can overrun it, as any wait can); zero when it never slept.
    pub fn longest(&self) -> Duration {
        Duration::from_nanos(self.slept.load(Ordering::Relaxed))
    }
}

/// The calling thread's sleeps end when asked, not up to 50 µs later (the
/// kernel's default timer slack, as long as a whole window). Not restored when
/// the window goes back to zero: the worker thread's other timeouts (its timers'
/// `epoll_wait`) stay as precise for the rest of the run, which costs nothing
/// measurable.
fn precise_sleeps() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn many_slow_responses_are_batched_a_fiftieth_of_their_latency() {
        // 1,000 streams against a server answering in 5 ms: 200,000 req/s at most,
        // 5 ms / 50 = 100 µs.
        assert_eq!(window(5 * MS, 100_000.0), Duration::from_micros(100));
        // Slower still: capped.
        assert_eq!(window(100 * MS, 10_000.0), MAX_WINDOW);
    }

    #[test]
    fn fast_responses_are_never_batched() {
        // -c 50 against nginx: p10 0.3 ms → a 6 µs window, not worth a sleep.
        assert_eq!(
            window(Duration::from_micros(300), 150_000.0),
            Duration::ZERO
        );
        assert_eq!(window(Duration::ZERO, 1e9), Duration::ZERO);
    }

    #[test]
    fn a_slow_pace_is_never_batched() {
        // 20 ms responses at 50 a second: one response per 20 ms, none expected
        // within a 200 µs window.
        assert_eq!(window(20 * MS, 50.0), Duration::ZERO);
        // Just enough: 1 expected in 200 µs is 5,000 a second.
        assert_eq!(window(20 * MS, 5_000.0), MAX_WINDOW);
        assert_eq!(window(20 * MS, 4_500.0), Duration::ZERO);
        assert_eq!(window(20 * MS, f64::NAN), Duration::ZERO);
    }

    #[test]
    fn fewer_than_fifty_in_flight_never_batch() {
        // N in flight answered in L: N / L a second, a window of at most L / 50,
        // so at most N / 50 responses expected within it.
        for l in [1, 2, 5, 10, 20, 50, 100, 1000] {
            let l = l * MS;
            for n in [1.0, 10.0, 49.0] {
                assert_eq!(
                    window(l, n / l.as_secs_f64()),
                    Duration::ZERO,
                    "{n} in {l:?}"
                );
            }
            // 1,000 in flight do, up to where the 200 µs cap leaves fewer than
            // one response within it (1,000 a second).
            let batched = window(l, 1000.0 / l.as_secs_f64()) > Duration::ZERO;
            assert_eq!(batched, l <= 200 * MS, "{l:?}");
        }
    }

    #[test]
    fn the_hook_sleeps_the_window_until_it_is_unset() {
        let w = Wake::default();
        w.set(Duration::from_micros(300));
        let t = std::time::Instant::now();
        assert_eq!(w.longest(), Duration::ZERO, "set, not yet slept");
        w.before_park();
        assert!(t.elapsed() >= Duration::from_micros(300));
        assert_eq!(w.longest(), Duration::from_micros(300));
        w.set(Duration::ZERO);
        w.before_park();
        assert_eq!(w.ns.load(Ordering::Relaxed), 0);
        assert_eq!(w.longest(), Duration::from_micros(300));
    }
}
