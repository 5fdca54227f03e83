//! The client's own noise, per probe sample: how long latscope's threads waited,
//! runnable, for a CPU (the schedstat run-queue delay, summed over the process's
//! threads) and how much CPU the process used while the sample ran. A sample during
//! which latscope waited long for a CPU measured this machine, not the server: it is
//! marked `disturbed`, left out of the series and re-taken (DESIGN.md, Findings).
//! Nothing here prints.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::sample::{Sample, Series};

/// A sample is disturbed when latscope waited at least this long for a CPU during
/// it, ms…
pub const DISTURBED_MS: f64 = 1.0;
/// …and at least this share of the sample's time.
pub const DISTURBED_SHARE: f64 = 0.1;

/// Fewest kept samples a series needs before disturbed ones are left out: with
/// fewer, the machine was too busy to take clean ones, and every sample is kept. Six
/// is the fewest any rule's interval is built from (a median's 95 % interval from
/// binomial ranks needs 6; a Hodges–Lehmann shift 4 a side): leaving out the
/// disturbed samples of a series that would then have fewer leaves its rules with no
/// interval at all, so a clear difference would read "not enough samples to tell"
/// however many rounds were taken.
pub const MIN_CLEAN: usize = 6;

/// The process's counters at the start of a sample.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    wait_ns: Option<u64>,
    cpu_ns: u64,
    at: Instant,
}

impl Mark {
    /// The counters now (read before the sample's clock starts).
    pub fn now() -> Mark {
        Mark {
            wait_ns: crate::load::sys::process_run_delay_ns(),
            cpu_ns: process_cpu_ns(),
            at: Instant::now(),
        }
    }

    /// What the sample cost this machine since the mark: run-queue wait and CPU, ms
    /// (the wait None where the kernel does not say).
    pub fn since(&self) -> (Option<f64>, f64) {
        let cpu = process_cpu_ns().saturating_sub(self.cpu_ns) as f64 / 1e6;
        let wait = match (self.wait_ns, crate::load::sys::process_run_delay_ns()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a) as f64 / 1e6),
            _ => None,
        };
        (wait, cpu)
    }

    /// Wall time since the mark, ms.
    pub fn elapsed_ms(&self) -> f64 {
        self.at.elapsed().as_secs_f64() * 1e3
    }
}

/// CPU time the whole process has used, ns.
fn process_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Whether a sample of `total_ms` during which latscope waited `wait_ms` for a CPU
/// measured this machine more than the server.
pub fn disturbed(wait_ms: f64, total_ms: f64) -> bool {
    wait_ms >= DISTURBED_MS && wait_ms >= DISTURBED_SHARE * total_ms
}

/// How busy this machine was while a probe ran (the probe JSON's `client`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientSummary {
    /// Samples measured.
    pub samples: u64,
    /// Samples left out because latscope waited for a CPU during them (each re-taken
    /// while the sampling's bounds allowed).
    pub disturbed: u64,
    /// latscope's run-queue wait over all samples, ms.
    pub cpu_wait_ms: f64,
    /// That wait as a share of the samples' time, percent.
    pub cpu_wait_pct: f64,
    /// CPU latscope used over the samples, percent of their time (100 = one core).
    pub cpu_pct: f64,
    /// Every sample was kept although some were disturbed: too few clean ones were
    /// left (the machine was too busy to take them).
    pub too_busy: bool,
}

/// Keeps every series usable: the very first request is never left out (a cold
/// start happens once and cannot be re-taken; the rules subtract its wait instead),
/// and a series with fewer than [`MIN_CLEAN`] clean samples keeps its disturbed ones
/// too. Returns whether that happened (the machine was too busy).
pub fn keep_enough(samples: &mut [Sample]) -> bool {
    if let Some(first) = samples.iter_mut().find(|s| s.error.is_none()) {
        first.disturbed = false;
    }
    let mut too_busy = false;
    for series in [Series::Fresh, Series::Reused, Series::Resumed] {
        let ok = |s: &Sample| s.series == series && s.error.is_none();
        let clean = samples.iter().filter(|s| ok(s) && !s.disturbed).count();
        let disturbed = samples.iter().filter(|s| ok(s) && s.disturbed).count();
        if disturbed > 0 && clean < MIN_CLEAN {
            too_busy = true;
            for s in samples.iter_mut().filter(|s| ok(s)) {
                s.disturbed = false;
            }
        }
    }
    too_busy
}

/// The client summary of a probe's samples (None when no sample measured the wait).
pub fn summary(samples: &[Sample], too_busy: bool) -> Option<ClientSummary> {
    let measured: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.client_wait_ms.is_some())
        .collect();
    if measured.is_empty() {
        return None;
    }
    let wait: f64 = measured.iter().filter_map(|s| s.client_wait_ms).sum();
    let cpu: f64 = measured.iter().filter_map(|s| s.client_cpu_ms).sum();
    let time: f64 = measured.iter().map(|s| s.phases_ms.total).sum();
    let pct = |v: f64| {
        if time > 0.0 {
            (v / time * 1000.0).round() / 10.0
        } else {
            0.0
        }
    };
    Some(ClientSummary {
        samples: measured.len() as u64,
        disturbed: samples.iter().filter(|s| s.disturbed).count() as u64,
        cpu_wait_ms: (wait * 1000.0).round() / 1000.0,
        cpu_wait_pct: pct(wait),
        cpu_pct: pct(cpu),
        too_busy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reused(disturbed: bool) -> Sample {
        let mut s = Sample::failed(
            Series::Reused,
            0.0,
            &crate::net::NetError::Timeout {
                what: "test",
                after: std::time::Duration::from_secs(1),
            },
        );
        s.error = None;
        s.error_kind = None;
        s.disturbed = disturbed;
        s
    }

    /// A series keeps its disturbed samples while fewer than MIN_CLEAN (6) are clean
    /// — as on a 2-core machine where receiving a 4 MB body waits for a CPU almost
    /// every time — and leaves them out from 6 clean ones on.
    #[test]
    fn a_series_keeps_enough_samples_for_an_interval() {
        let mut v: Vec<Sample> = (0..8).map(|i| reused(i >= 5)).collect();
        assert!(keep_enough(&mut v), "5 clean, 3 disturbed: too busy");
        assert!(v.iter().all(|s| !s.disturbed));
        let mut v: Vec<Sample> = (0..10).map(|i| reused(i >= 7)).collect();
        assert!(
            !keep_enough(&mut v),
            "7 clean: the 3 disturbed are left out"
        );
        assert_eq!(v.iter().filter(|s| s.disturbed).count(), 3);
    }

    /// 1 ms of waiting disturbs a 0.3 ms loopback sample but not a 150 ms one (10 %
    /// of it is 15 ms); 0.5 ms disturbs nothing.
    #[test]
    fn what_disturbs_a_sample() {
        assert!(disturbed(1.0, 0.3));
        assert!(!disturbed(1.0, 150.0));
        assert!(disturbed(20.0, 150.0));
        assert!(!disturbed(0.5, 0.3));
    }

    /// The counters move forward: a busy loop uses CPU, and the wait is measured on
    /// Linux (schedstat).
    #[test]
    fn marks_measure_cpu() {
        let m = Mark::now();
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 20 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let (wait, cpu) = m.since();
        assert!(cpu > 5.0, "{cpu}");
        assert!(wait.is_some());
        assert!(m.elapsed_ms() >= 20.0);
    }
}
