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
//! [`LATENCY_SHARE`] of the recent fast latencies (their 10th percentile), at most
//! [`MAX_WINDOW`], and only when at the recent pace at least
//! [`MIN_EXPECTED`] responses arrive within it. A run of short requests (the
//! usual `-c 50` against a fast server, p10 well under a millisecond) never
//! batches; 1,000 HTTP/2 streams against a server answering in 10 ms do, and
//! what each records is at most 2 % late.

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

/// The fewest responses a tick's figures rest on; fewer keep the last window.
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
        }
    }
}

/// The calling thread's sleeps end when asked, not up to 50 µs later (the
/// kernel's default timer slack, as long as a whole window).
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
        w.before_park();
        assert!(t.elapsed() >= Duration::from_micros(300));
        w.set(Duration::ZERO);
        assert_eq!(w.ns.load(Ordering::Relaxed), 0);
    }
}
