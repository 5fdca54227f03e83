//! How busy the machine's CPUs were while something was timed: the kernel's pressure
//! stall information (`/proc/pressure/cpu`, "some": the share of wall time in which at
//! least one runnable task waited for a CPU). On a CPU-starved machine a fast volume's
//! tail is the scheduler's: the loop or NVMe completion, the journal thread and the
//! waiting process all queue for a CPU. The disk rules use it to tell a volume's
//! tail from the machine's (issue 29: the client's own noise, measured).

use std::time::Instant;

/// A stretch of time whose CPU pressure is being measured.
#[derive(Debug, Clone, Copy)]
pub struct CpuPressure {
    started: Instant,
    some_us: Option<u64>,
}

impl CpuPressure {
    /// Starts measuring now.
    pub fn start() -> CpuPressure {
        CpuPressure {
            started: Instant::now(),
            some_us: some_total_us(),
        }
    }

    /// Percent of the wall time since [`start`](Self::start) in which some task waited
    /// for a CPU; `None` where the kernel has no pressure information (PSI off).
    pub fn percent(&self) -> Option<f64> {
        let wall_us = self.started.elapsed().as_micros() as f64;
        let waited = some_total_us()?.checked_sub(self.some_us?)? as f64;
        (wall_us > 0.0).then(|| (100.0 * waited / wall_us).min(100.0))
    }
}

/// How long this process's threads have waited, runnable, for a CPU so far, ns (the
/// sum of their schedstat run-queue delays), and how many threads that is; `None`
/// where the kernel does not say.
pub fn process_wait_ns() -> Option<(u64, usize)> {
    let mut total = None;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let text = std::fs::read_to_string(task.path().join("schedstat")).ok();
        if let Some(ns) = text
            .as_deref()
            .and_then(|t| t.split_whitespace().nth(1)?.parse::<u64>().ok())
        {
            let (sum, n): &mut (u64, usize) = total.get_or_insert((0, 0));
            *sum += ns;
            *n += 1;
        }
    }
    total
}

/// `/proc/pressure/cpu`'s cumulative "some" stall time, µs.
fn some_total_us() -> Option<u64> {
    parse_some_total(&std::fs::read_to_string("/proc/pressure/cpu").ok()?)
}

/// The `total=` of the `some` line.
fn parse_some_total(text: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with("some "))?
        .split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_some_line() {
        let text = "some avg10=84.60 avg60=86.91 avg300=71.53 total=5234908673\n\
                    full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(parse_some_total(text), Some(5_234_908_673));
        assert_eq!(parse_some_total("full avg10=0.00 total=3\n"), None);
        assert_eq!(parse_some_total(""), None);
    }

    /// Where the kernel has PSI, a stretch's share is a percentage.
    #[test]
    fn a_stretch_gives_a_share() {
        let p = CpuPressure::start();
        std::thread::sleep(std::time::Duration::from_millis(20));
        if some_total_us().is_some() {
            let pct = p.percent().unwrap();
            assert!((0.0..=100.0).contains(&pct), "{pct}");
        } else {
            assert_eq!(p.percent(), None);
        }
    }
}
