//! Disk rules: `disk-iops-cap` (per-second IOPS held flat at a round number while
//! I/Os queue: a provisioned or cgroup limit; the suite's signature in
//! [`super::disk_cause`]), `disk-tail` (slow I/Os — a slow median, or stalls —
//! judged on counts with a confidence bound, never on a percentile the sample cannot
//! support) and `slow-fsync` (fdatasync p99 over etcd's 10 ms rule for WAL disks).

use super::ms;
use crate::diagnose::facts::{DiskDirFacts, DiskFacts};
use crate::diagnose::finding::{Category, Finding, Severity};
use crate::stats::counts::{poisson_lower, supports};

/// A database stalls when a single I/O takes longer than this, ms.
const STALL_MS: f64 = 100.0;
/// A median I/O this slow makes every I/O slow, not only the tail, ms (a hard disk
/// seeks in 5–10 ms; SSDs and network volumes answer well under this).
const SLOW_P50_MS: f64 = 20.0;
/// etcd's rule: fdatasync p99 under 10 ms.
const FSYNC_MS: f64 = 10.0;
/// The mean IOPS is "round" within this share (or half an I/O) of a
/// two-significant-digit number (1100, 16000); see [`round_rate`].
const ROUND_SHARE: f64 = 0.01;
/// A token bucket keeps the running count of I/Os within a burst of the straight
/// line at its rate: here, this many seconds' worth (blkio releases I/Os in 100 ms
/// slices, so single seconds jitter by ~10 % while the sum stays on the line).
const MAX_DRIFT_S: f64 = 0.15;
/// Fewest full seconds (after the first) to tell a cap from chance.
const CAP_SECONDS: usize = 3;
/// A cap is worth a finding once I/Os wait this long behind it (mean latency), ms.
const CAP_WAIT_MS: f64 = 1.0;

/// Per-second IOPS held at a limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cap {
    /// The round number the IOPS sit at.
    pub iops: f64,
    /// Mean IOPS of the judged seconds.
    pub mean: f64,
    /// Seconds judged (the first is left out: throttles let a burst through).
    pub seconds: usize,
    /// Largest distance of the running I/O count ahead of the line at `iops`, in
    /// seconds' worth of I/Os.
    pub drift_s: f64,
    /// Largest distance of a single second from `iops`, percent.
    pub spread_pct: f64,
}

/// `v` rounded to a multiple of `step` × its order of magnitude / 10 (`step` 10: one
/// significant digit, 5: 500/550/600, 1: two significant digits).
fn round_to(v: f64, step: f64) -> f64 {
    if v < 10.0 {
        return v.round();
    }
    let unit = step * 10f64.powf(v.log10().floor() - 1.0);
    (v / unit).round() * unit
}

/// The roundest number near `mean` that a cap could be: one significant digit (500,
/// 3000) or a half step (1500, 250) within 3 %, else two significant digits (1100,
/// 16000) within 1 %. A short run's mean is off the true rate by up to a throttle
/// slice over the seconds judged, so the roundest candidate wins.
pub(crate) fn round_rate(mean: f64) -> Option<f64> {
    [(10.0, 0.03), (5.0, 0.03), (1.0, ROUND_SHARE)]
        .into_iter()
        .map(|(step, share)| (round_to(mean, step), share))
        .find(|(r, share)| *r > 0.0 && (mean - r).abs() <= (share * r).max(0.5))
        .map(|(r, _)| r)
}

/// A second counts as "at" a cap within this share of it.
const AT_CAP_SHARE: f64 = 0.1;

/// How round `r` is: 0 for one significant digit (500), 1 for a half step (250,
/// 1500), 2 for two significant digits (520).
fn roughness(r: f64) -> usize {
    [10.0, 5.0]
        .iter()
        .position(|step| round_to(r, *step) == r)
        .unwrap_or(2)
}

/// The round number a token bucket is set at, from the per-second rates it let
/// through: the round rates ([`round_rate`]) near their median and near their mean,
/// whichever more of the seconds sit within [`AT_CAP_SHARE`] of, the rounder on a
/// tie. A busy machine moves a short run both ways: a starved second lowers the
/// mean (CI: 483 and 484 on a 500 IOPS volume), and blkio lets the I/Os it held
/// back through in a burst once the device's worker runs again, which lifts the
/// seconds after it (CI: a median second of 524 on the same volume, its mean 508).
/// Neither moves most seconds off the setting.
pub(crate) fn round_cap(seconds: &[f64], mean: f64) -> Option<f64> {
    let median = super::median(seconds);
    if median.is_nan() {
        return None;
    }
    let near = |r: f64| {
        seconds
            .iter()
            .filter(|x| (**x - r).abs() <= AT_CAP_SHARE * r)
            .count()
    };
    [round_rate(median), round_rate(mean)]
        .into_iter()
        .flatten()
        .max_by(|a, b| {
            near(*a)
                .cmp(&near(*b))
                .then(roughness(*b).cmp(&roughness(*a)))
                .then((b - median).abs().total_cmp(&(a - median).abs()))
        })
}

/// An IOPS cap in a per-second IOPS series: at least [`CAP_SECONDS`] seconds after
/// the first, at a round number ([`round_cap`]), at least two in three of them
/// within 10 % of it, and the running count of I/Os never more than
/// [`MAX_DRIFT_S`] seconds' worth *ahead* of the line at that rate. A token bucket
/// never lets a run get ahead of it; a busy machine can make the device fall behind
/// it for a second (a loop device's worker starved: 500, 500, 382, 500), which
/// neither moves the median nor makes it no cap (issue 29: the mean did, and the cap
/// was found in 4 runs of 10).
pub fn iops_cap(per_second: &[f64]) -> Option<Cap> {
    let secs = match per_second {
        [_, rest @ ..] if rest.len() >= CAP_SECONDS => rest,
        _ => return None,
    };
    let mean = secs.iter().sum::<f64>() / secs.len() as f64;
    if mean.is_nan() || mean < 1.0 {
        return None;
    }
    let round = round_cap(secs, mean)?;
    let at_cap = secs
        .iter()
        .filter(|x| (**x - round).abs() <= AT_CAP_SHARE * round)
        .count();
    if at_cap * 3 < secs.len() * 2 {
        return None;
    }
    let mut count = 0.0;
    let mut ahead = 0.0f64;
    for (k, x) in secs.iter().enumerate() {
        count += x;
        ahead = ahead.max(count - round * (k + 1) as f64);
    }
    if ahead > (MAX_DRIFT_S * round).max(2.0) {
        return None;
    }
    let spread = secs.iter().map(|x| (x - round).abs()).fold(0.0, f64::max);
    Some(Cap {
        iops: round,
        mean,
        seconds: secs.len(),
        drift_s: ahead / round,
        spread_pct: 100.0 * spread / round,
    })
}

/// The run's directions that have I/Os: ("read"/"write", facts).
fn dirs(d: &DiskFacts) -> impl Iterator<Item = (&'static str, &DiskDirFacts)> {
    [("read", d.read.as_ref()), ("write", d.write.as_ref())]
        .into_iter()
        .filter_map(|(n, f)| Some((n, f?)))
        .filter(|(_, f)| f.ios > 0)
}

/// Each capped direction with its cap (the cap only counts when I/Os wait behind it).
fn caps(d: &DiskFacts) -> Vec<(&'static str, &DiskDirFacts, Cap)> {
    dirs(d)
        .filter(|(_, f)| f.mean_ms >= CAP_WAIT_MS)
        .filter_map(|(n, f)| Some((n, f, iops_cap(&f.per_second_iops)?)))
        .collect()
}

/// `disk-iops-cap`: per-second read or write IOPS flat at a round number while each
/// I/O waits ≥ 1 ms on average. By Little's law the wait is then the queue depth
/// over the IOPS the cap admits: more in flight only queues longer.
pub fn iops_cap_finding(d: &DiskFacts) -> Option<Finding> {
    let caps = caps(d);
    let (which, f, cap) = *caps.first()?;
    // Everything the run kept in flight shares the I/Os the volume admits.
    let total_iops: f64 = dirs(d)
        .map(|(_, f)| {
            let s = f.per_second_iops.get(1..).unwrap_or(&[]);
            s.iter().sum::<f64>() / s.len().max(1) as f64
        })
        .sum();
    let qd = d.iodepth.max(1);
    let wait_ms = 1000.0 * f64::from(qd) / total_iops.max(1e-9);
    let held: Vec<String> = caps
        .iter()
        .map(|(n, _, c)| format!("{n}s at {:.0} IOPS", c.iops))
        .collect();
    let every = format!(
        "over {} s (each second within {:.0} %, the running count within {:.2} s of the line)",
        cap.seconds, cap.spread_pct, cap.drift_s
    );
    let s = if qd == 1 { "" } else { "s" };
    Some(
        Finding::new(
            "disk-iops-cap",
            Category::Disk,
            Severity::Warn,
            format!(
                "IOPS cap: {} {every}; with {qd} I/O{s} in flight each waits ≈ {} \
                 ({qd} / {:.0} IOPS; {which} mean {}, p50 {})",
                held.join(", "),
                ms(wait_ms),
                total_iops,
                ms(f.mean_ms),
                ms(f.p50_ms),
            ),
        )
        .text("direction", which)
        .num("cap_iops", cap.iops)
        .num("mean_iops", cap.mean)
        .count("seconds", cap.seconds as u64)
        .num("drift_s", cap.drift_s)
        .num("spread_pct", cap.spread_pct)
        .count("iodepth", u64::from(qd))
        .num("expected_wait_ms", wait_ms)
        .num("mean_ms", f.mean_ms)
        .num("p50_ms", f.p50_ms)
        .advice(
            "the volume (or a cgroup io.max / blkio limit) admits only this many I/Os per \
             second, so latency is queueing behind the cap, not the device: provision \
             more IOPS (a gp3/io2 IOPS setting, a larger Azure or GCP disk), spread the \
             data over several volumes, or keep fewer I/Os in flight (at the cap, more \
             only wait longer)",
        ),
    )
}

/// "51 % of I/Os", "12 of 4,000 I/Os (0.3 %)", "1 in 3,000 I/Os", "1 of 2,000,000 I/Os".
fn how_often(k: u64, n: u64) -> String {
    let share = k as f64 / n.max(1) as f64;
    if share >= 0.1 {
        format!("{:.0} % of I/Os", 100.0 * share)
    } else if share >= 0.01 {
        format!("{k} of {} I/Os ({:.1} %)", thousands(n), 100.0 * share)
    } else if k == 1 {
        format!("1 of {} I/Os", thousands(n))
    } else {
        format!("1 in {} I/Os", thousands((1.0 / share).round() as u64))
    }
}

/// 1234567 → "1,234,567".
pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Stall events (seconds holding a stall) per minute at least, at 95 % confidence:
/// `k` seen in `secs` seconds ([`poisson_lower`]).
fn per_minute_at_least(k: u64, secs: u64) -> f64 {
    poisson_lower(k) / secs.max(1) as f64 * 60.0
}

/// The severity of one series' slow I/Os, judged on counts, not on a percentile the
/// sample cannot support: crit when the median is a stall (≥ 100 ms) or stalls over
/// 1 s come at least once a minute (95 % lower bound over the seconds that held
/// one); warn for a slow median (≥ 20 ms, when `median_counts`), stalls over 1 s more
/// often than once an hour, or shorter stalls (> 100 ms and > 4× the median) at
/// least twice a minute; info for rarer ones. `None`: nothing slow.
pub fn tail_severity(f: &DiskDirFacts, median_counts: bool) -> Option<Severity> {
    let long = per_minute_at_least(f.stall_seconds_1s, f.seconds);
    let short = per_minute_at_least(f.stall_seconds, f.seconds);
    if (median_counts && f.p50_ms >= STALL_MS) || (f.stall_seconds_1s > 0 && long >= 1.0) {
        Some(Severity::Crit)
    } else if (median_counts && f.p50_ms >= SLOW_P50_MS)
        || (f.stall_seconds_1s > 0 && long * 60.0 >= 1.0)
        || (f.stall_seconds > 0 && short >= 2.0)
    {
        Some(Severity::Warn)
    } else if f.stall_seconds > 0 || f.over_1s > 0 {
        Some(Severity::Info)
    } else {
        None
    }
}

/// "p99.9 12.0 ms, p99.99 195 ms, max 1.37 s" with only the percentiles `f.ios`
/// supports (p99.9 from 1,000 I/Os, p99.99 from 10,000); the maximum is the maximum.
pub fn tail_text(f: &DiskDirFacts) -> String {
    let mut parts = Vec::new();
    if supports(f.ios, 0.999) {
        parts.push(format!("p99.9 {}", ms(f.p999_ms)));
    }
    if supports(f.ios, 0.9999) {
        parts.push(format!("p99.99 {}", ms(f.p9999_ms)));
    }
    parts.push(format!("max {}", ms(f.max_ms)));
    parts.join(", ")
}

/// How many I/Os were slow and in how many seconds: "34 of 52,000 I/Os over 1 s, in
/// 3 of 20 s".
fn stall_counts(f: &DiskDirFacts) -> String {
    let mut parts = Vec::new();
    if f.over_1s > 0 {
        parts.push(format!(
            "{} over 1 s in {} of {} s",
            how_often(f.over_1s, f.ios),
            f.stall_seconds_1s,
            f.seconds
        ));
    }
    if f.stall_seconds > f.stall_seconds_1s || (f.over_1s == 0 && f.over_100ms > 0) {
        parts.push(format!(
            "{} over 100 ms, {} of {} s held a stall",
            how_often(f.over_100ms, f.ios),
            f.stall_seconds,
            f.seconds
        ));
    }
    if parts.is_empty() {
        "none over 100 ms".to_string()
    } else {
        parts.join("; ")
    }
}

/// The series `disk-tail` judges: each direction of one workload, or every workload
/// of the suite (the median counts only at queue depth 1, where a slow median is the
/// device's and not a queue's) and the commits.
fn tail_series(d: &DiskFacts) -> Vec<(String, DiskDirFacts, bool)> {
    if d.workloads.is_empty() {
        return dirs(d)
            .map(|(n, f)| (n.to_string(), f.clone(), true))
            .collect();
    }
    let mut out: Vec<(String, DiskDirFacts, bool)> = d
        .workloads
        .iter()
        .map(|w| (w.name.clone(), w.dir.clone(), w.iodepth == 1))
        .collect();
    if let Some(c) = &d.commit {
        let secs = c.per_second.len() as u64;
        out.push((
            "commit".into(),
            DiskDirFacts {
                ios: c.commits,
                mean_ms: c.mean_ms,
                p50_ms: c.p50_ms,
                p99_ms: c.p99_ms,
                p999_ms: c.p999_ms,
                p9999_ms: c.p9999_ms,
                max_ms: c.max_ms,
                over_100ms: c.over_100ms,
                over_1s: c.over_1s,
                seconds: secs,
                stall_seconds: c.over_100ms.min(secs),
                stall_seconds_1s: c.over_1s.min(secs),
                ..DiskDirFacts::default()
            },
            true,
        ));
    }
    out
}

/// `disk-tail`: I/Os stall (over 100 ms and 4× the median, or over 1 s), or the
/// median itself is slow, with the severity of [`tail_severity`]; the worst series
/// speaks. In the suite, stalls are counted over all its workloads together.
pub fn disk_tail(d: &DiskFacts) -> Option<Finding> {
    let series = tail_series(d);
    let capped = caps(d);
    // A cap releases I/Os in slices (blkio every 100 ms): waits of a slice are its
    // queue, named by the cap's finding; only stalls over 1 s still count here.
    let cap_id = if !capped.is_empty() {
        None
    } else if super::disk_cause::iops_cap(d).is_some() {
        Some("disk-iops-cap")
    } else if super::disk_cause::bandwidth_cap(d).is_some() {
        Some("disk-bandwidth-cap")
    } else {
        None
    };
    // A costly flush makes every commit slow at the median: `disk-flush-cost` names
    // that cause; the commit series is a tail only when it held stalls over 1 s.
    let flushes = super::disk_cause::flush_cost(d).is_some();
    let judge = |name: &str, f: &DiskDirFacts, m: bool| {
        let s = tail_severity(f, m)?;
        let explained = cap_id.is_some() || (flushes && name == "commit");
        match explained {
            true if f.stall_seconds_1s == 0 => Some(s.min(Severity::Info)),
            _ => Some(s),
        }
    };
    let (which, f, severity) = series
        .iter()
        .filter_map(|(n, f, m)| Some((n.as_str(), f, judge(n, f, *m)?)))
        .max_by(|a, b| {
            a.2.cmp(&b.2)
                .then(a.1.stall_seconds_1s.cmp(&b.1.stall_seconds_1s))
                .then(a.1.stall_seconds.cmp(&b.1.stall_seconds))
                .then(a.1.p50_ms.total_cmp(&b.1.p50_ms))
        })?;
    // The suite's stalls together: a volume that pauses hits whichever workload runs.
    let (all_1s, all_short, all_secs): (u64, u64, u64) =
        series.iter().fold((0, 0, 0), |(a, b, c), (_, f, _)| {
            (a + f.stall_seconds_1s, b + f.stall_seconds, c + f.seconds)
        });
    let together = DiskDirFacts {
        stall_seconds_1s: all_1s,
        stall_seconds: all_short,
        seconds: all_secs,
        ..DiskDirFacts::default()
    };
    let severity = match cap_id {
        Some(_) if all_1s == 0 => severity,
        _ => tail_severity(&together, false).map_or(severity, |s| s.max(severity)),
    };
    let slow_median = f.p50_ms >= SLOW_P50_MS && series.iter().any(|(n, _, m)| n == which && *m);
    let title = if slow_median {
        let why = if capped.iter().any(|(n, _, _)| *n == which) {
            " — they queue behind the IOPS cap"
        } else {
            ""
        };
        format!(
            "{which} p50 is {}: typical I/Os are slow, not only the tail ({}; {}){why}",
            ms(f.p50_ms),
            stall_counts(f),
            tail_text(f),
        )
    } else {
        let suite =
            if series.len() > 2 && (all_1s > f.stall_seconds_1s || all_short > f.stall_seconds) {
                format!(
                    " (the whole suite: {all_1s} of {all_secs} s held a stall over 1 s, \
                 {all_short} a stall over 100 ms)"
                )
            } else {
                String::new()
            };
        let tail = match cap_id {
            Some(id) if f.stall_seconds_1s == 0 => {
                format!(" — waits of the cap's slices ({id}), not stalls of the device")
            }
            _ => ", each one a stalled query for a database on this volume".to_string(),
        };
        format!(
            "{which} stalls: {} ({}; p50 {}){suite}{tail}",
            stall_counts(f),
            tail_text(f),
            ms(f.p50_ms),
        )
    };
    let p9999 = |f: &DiskDirFacts| supports(f.ios, 0.9999).then_some(f.p9999_ms);
    Some(
        Finding::new("disk-tail", Category::Disk, severity, title)
            .opt_num("read_p9999_ms", d.read.as_ref().and_then(p9999))
            .opt_num("write_p9999_ms", d.write.as_ref().and_then(p9999))
            .opt_num("read_p50_ms", d.read.as_ref().map(|r| r.p50_ms))
            .opt_num("write_p50_ms", d.write.as_ref().map(|w| w.p50_ms))
            .text("direction", which)
            .count("ios", f.ios)
            .num("p50_ms", f.p50_ms)
            .opt_num("p999_ms", supports(f.ios, 0.999).then_some(f.p999_ms))
            .opt_num("p9999_ms", p9999(f))
            .num("max_ms", f.max_ms)
            .count("over_100ms", f.over_100ms)
            .count("over_1s", f.over_1s)
            .count("seconds", f.seconds)
            .count("stall_seconds", f.stall_seconds)
            .count("stall_seconds_1s", f.stall_seconds_1s)
            .num(
                "stalls_1s_per_min_lower",
                per_minute_at_least(all_1s.max(f.stall_seconds_1s), all_secs.max(f.seconds)),
            )
            .num("confidence", crate::stats::counts::CONFIDENCE)
            .advice(
                "keep latency-sensitive databases off this volume (use local NVMe or a \
                 volume class with guaranteed IOPS), or check for throttling (burst \
                 credits, IOPS caps) and noisy neighbours",
            ),
    )
}

/// Whether the suite's commit tail cannot be told from the machine's: latscope itself
/// waited for a CPU through most of the commit test (too little unstarved time to
/// judge on; [`crate::disk::commit`]) and the median commit is within etcd's 10 ms. A
/// volume whose median commit is over the limit is slow however busy the machine.
/// Gives latscope's own CPU wait, percent.
pub fn commit_tail_is_machines(d: &DiskFacts) -> Option<f64> {
    let c = d.commit.as_ref()?;
    (c.starved_kept && c.p50_ms <= FSYNC_MS).then_some(c.cpu_wait_pct.unwrap_or(0.0))
}

/// `slow-fsync`: fdatasync p99 > 10 ms. In the suite, when latscope was starved of CPU
/// through the commit test and the median commit within the limit
/// ([`commit_tail_is_machines`]), an info that says the tail cannot be told from the
/// machine's and how to tell (issue 29: where the evidence is not enough, say so,
/// never warn).
pub fn slow_fsync(d: &DiskFacts) -> Option<Finding> {
    let p99 = d.fsync_p99_ms?;
    if p99 <= FSYNC_MS || d.fsync_count == 0 {
        return None;
    }
    if let Some(wait) = commit_tail_is_machines(d) {
        let c = d.commit.as_ref().expect("commit facts");
        let psi = c
            .cpu_pressure_pct
            .map(|p| format!("; some task waited for one {p:.0} % of the time"))
            .unwrap_or_default();
        return Some(
            Finding::new(
                "slow-fsync",
                Category::Disk,
                Severity::Info,
                format!(
                    "fdatasync p99 is {} over {} syncs, but latscope itself waited for a CPU \
                     {wait:.0} % of the commit test{psi}: the tail may be the machine's, not \
                     the volume's",
                    ms(p99),
                    d.fsync_count,
                ),
            )
            .num("fsync_p99_ms", p99)
            .count("fsyncs", d.fsync_count)
            .num("limit_ms", FSYNC_MS)
            .num("cpu_wait_pct", wait)
            .opt_num("cpu_pressure_pct", c.cpu_pressure_pct)
            .num("commit_p50_ms", c.p50_ms)
            .advice(
                "re-run `latscope disk PATH` when the machine is quiet (the commit's \
                 starved.kept false) to tell whether the volume's fdatasync tail is over \
                 etcd's 10 ms",
            ),
        );
    }
    Some(
        Finding::new(
            "slow-fsync",
            Category::Disk,
            Severity::Warn,
            format!(
                "fdatasync p99 is {} over {} syncs (etcd asks for < 10 ms)",
                ms(p99),
                d.fsync_count
            ),
        )
        .num("fsync_p99_ms", p99)
        .count("fsyncs", d.fsync_count)
        .num("limit_ms", FSYNC_MS)
        .advice(
            "every commit of a write-ahead log waits for this: put WALs (etcd, \
             PostgreSQL, Kafka) on a disk with fast, power-safe sync (local SSD/NVMe with \
             a capacitor-backed cache), not on this volume",
        ),
    )
}

#[cfg(test)]
#[path = "disk_tests.rs"]
mod tests;
