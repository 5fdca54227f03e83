//! Shards: one run split over processes (or machines) that need no coordination. A
//! shard `I/N` runs the global VUs, arrivals and requests whose index is `≡ I-1 mod
//! N`: 1/N of `-c` and `-n` (remainders to the first shards, so the totals are
//! exact), and of the open model's arrivals, each at its place in the whole run's
//! schedule — the union of the shards' arrivals is the unsharded run's, evenly spaced,
//! not N bursts. Stages apply to the global index too, so they scale the same way.

use std::fmt;
use std::time::{Duration, SystemTime};

/// Which part of a run this process does (`1/1`: all of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based.
    pub index: u32,
    pub count: u32,
}

impl Default for Shard {
    fn default() -> Shard {
        Shard::WHOLE
    }
}

impl fmt::Display for Shard {
    /// 1-based, as given: `2/3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index + 1, self.count)
    }
}

/// The most shards a run may be split into.
pub const MAX_SHARDS: u32 = 10_000;

impl Shard {
    /// The whole run.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Parses `I/N` (1-based: `1/3`, `2/3`, `3/3`).
    pub fn parse(s: &str) -> Result<Shard, String> {
        let bad = || format!("--shard {s:?}: expected I/N with 1 ≤ I ≤ N ≤ {MAX_SHARDS}, e.g. 2/3");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (i, n): (u32, u32) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        Shard::of(i.checked_sub(1).ok_or_else(bad)?, n).ok_or_else(bad)
    }

    /// Shard `index` (0-based, as Kubernetes' `JOB_COMPLETION_INDEX`) of `count`.
    pub fn of(index: u32, count: u32) -> Option<Shard> {
        ((1..=MAX_SHARDS).contains(&count) && index < count).then_some(Shard { index, count })
    }

    pub fn is_whole(&self) -> bool {
        self.count == 1
    }

    /// This shard's share of `total` (requests, connections): `total / N`, plus one
    /// for the first `total % N` shards.
    pub fn share(&self, total: u64) -> u64 {
        let (n, i) = (u64::from(self.count), u64::from(self.index));
        total / n + u64::from(i < total % n)
    }

    /// The run-wide index of this shard's `local`-th VU or arrival.
    #[inline]
    pub fn global(&self, local: u64) -> u64 {
        local * u64::from(self.count) + u64::from(self.index)
    }
}

/// The shard the flags name: `--shard I/N`, or `--shards N` with the 0-based index in
/// `job_index` (Kubernetes' `JOB_COMPLETION_INDEX` in an Indexed Job).
pub fn from_flags(
    shard: Option<&str>,
    shards: Option<u32>,
    job_index: Option<&str>,
) -> Result<Shard, String> {
    match (shard, shards) {
        (Some(s), None) => Shard::parse(s),
        (None, Some(n)) => {
            let Some(raw) = job_index else {
                return Err(format!(
                    "--shards {n} takes this shard's index from JOB_COMPLETION_INDEX (0-based, \
                     as a Kubernetes Indexed Job sets it), which is not set: set it or use --shard I/{n}"
                ));
            };
            let index: u32 = raw.trim().parse().map_err(|_| {
                format!(
                    "JOB_COMPLETION_INDEX={raw:?} is not a shard index (0 to {})",
                    n.saturating_sub(1)
                )
            })?;
            Shard::of(index, n).ok_or_else(|| {
                format!(
                    "JOB_COMPLETION_INDEX={index} is not a shard of --shards {n} (0 to {}; at most {MAX_SHARDS} shards)",
                    n.saturating_sub(1)
                )
            })
        }
        (None, None) => Ok(Shard::WHOLE),
        (Some(_), Some(_)) => Err("--shard and --shards do not go together".into()),
    }
}

/// When to start: `--start-at` as RFC 3339 (`2026-11-24T10:00:00Z`) or `+DUR` from
/// now; refused when more than a day away.
pub fn start_at(s: &str, now: SystemTime) -> Result<SystemTime, String> {
    let at = match s.strip_prefix('+') {
        Some(d) => {
            now + humantime::parse_duration(d)
                .map_err(|e| format!("--start-at {s:?}: {e} (e.g. +30s)"))?
        }
        None => humantime::parse_rfc3339_weak(s).map_err(|e| {
            format!("--start-at {s:?}: {e} (RFC 3339, e.g. 2026-11-24T10:00:00Z, or +30s)")
        })?,
    };
    if at
        .duration_since(now)
        .is_ok_and(|d| d > Duration::from_secs(86_400))
    {
        return Err(format!("--start-at {s:?} is more than a day away"));
    }
    Ok(at)
}

/// Waits until `at` (`--start-at`: the barrier of shards started apart, so every one
/// begins at the same instant), polling `stop` every 50 ms. How late the wait ended
/// (the scheduler's, or `at` already past), or None when stopped first.
pub fn wait_until(at: SystemTime, stop: &std::sync::atomic::AtomicBool) -> Option<Duration> {
    while let Ok(left) = at.duration_since(SystemTime::now()) {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
    Some(SystemTime::now().duration_since(at).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::{wait_until, Shard};
    use std::time::{Duration, SystemTime};

    /// A time already past ends the wait at once, saying how late; a stop ends a
    /// wait for the future at once, saying nothing was waited for.
    #[test]
    fn the_barrier_waits_until_its_time_or_a_stop() {
        use std::sync::atomic::AtomicBool;
        let past = SystemTime::now() - Duration::from_secs(2);
        let late = wait_until(past, &AtomicBool::new(false)).unwrap();
        assert!(late >= Duration::from_secs(2), "{late:?}");
        let future = SystemTime::now() + Duration::from_secs(3600);
        let started = std::time::Instant::now();
        assert_eq!(wait_until(future, &AtomicBool::new(true)), None);
        assert!(started.elapsed() < Duration::from_secs(60));
    }

    #[test]
    fn shards_from_flags_and_the_job_index() {
        use super::from_flags;
        assert_eq!(from_flags(None, None, Some("2")).unwrap(), Shard::WHOLE);
        assert_eq!(from_flags(Some("2/3"), None, None).unwrap().index, 1);
        assert_eq!(
            from_flags(None, Some(3), Some("2")).unwrap().to_string(),
            "3/3"
        );
        assert!(from_flags(None, Some(3), None)
            .unwrap_err()
            .contains("JOB_COMPLETION_INDEX"));
        assert!(from_flags(None, Some(3), Some("3")).is_err());
        assert!(from_flags(None, Some(3), Some("x")).is_err());
    }

    #[test]
    fn start_at_takes_rfc3339_or_an_offset() {
        use std::time::{Duration, SystemTime};
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let plus = super::start_at("+30s", now).unwrap();
        assert_eq!(plus.duration_since(now).unwrap(), Duration::from_secs(30));
        let abs = super::start_at("2027-01-15T08:00:10Z", now).unwrap();
        assert_eq!(
            abs.duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
            1_800_000_010
        );
        assert!(super::start_at("+2d", now).is_err());
        assert!(super::start_at("tomorrow", now).is_err());
    }

    #[test]
    fn shares_add_up_to_the_total() {
        for total in [0u64, 1, 2, 999, 1000, 1001] {
            let n = 3;
            let sum: u64 = (0..n).map(|i| Shard::of(i, n).unwrap().share(total)).sum();
            assert_eq!(sum, total);
        }
        assert_eq!(Shard::parse("1/3").unwrap().share(1000), 334);
        assert_eq!(Shard::parse("3/3").unwrap().share(1000), 333);
    }

    #[test]
    fn global_indexes_interleave_without_gaps() {
        let mut all: Vec<u64> = (0..4)
            .flat_map(|i| {
                let s = Shard::of(i, 4).unwrap();
                (0..s.share(10)).map(move |k| s.global(k))
            })
            .collect();
        all.sort();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn parse_is_one_based_and_checked() {
        assert_eq!(Shard::parse("2/3").unwrap(), Shard { index: 1, count: 3 });
        assert_eq!(Shard::parse("2/3").unwrap().to_string(), "2/3");
        for bad in ["0/3", "4/3", "1/0", "x/3", "3", "1/20000", "-1/3"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }
}
