//! The disk verdict: is this volume fit for a database? Always given, first in the
//! text and the JSON (`verdict: {fit: yes|no|limited, for, because: […]}`), from what
//! three kinds of database would see, in their units:
//!
//! - **transactional**: the commit (8 KiB through the page cache + fdatasync into a
//!   pre-zeroed segment): p50/p99, commits per second on one connection, and how long
//!   a new 16 MiB WAL segment takes;
//! - **read-heavy**: random 4 KiB reads one at a time (p50) and 32 at once (p99, IOPS);
//! - **write-heavy**: sustained sequential writes (MiB/s) and segment creation.
//!
//! Stalls (from `disk-tail`) count against all three. The thresholds are etcd's
//! 10 ms fdatasync p99 for a commit, a local SSD's sub-millisecond random read, and
//! the 100 MiB/s a bulk load or checkpoint wants. A one-workload run (workload flags)
//! gets a verdict on what it measured, and says how to get the full one.

use serde::Serialize;

use super::facts::{DiskDirFacts, DiskFacts};
use super::finding::{Finding, Severity};
use super::rules::disk::{commit_tail_is_machines, thousands};
use crate::units::fmt_ms;

/// yes, limited or no.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fit {
    No,
    Limited,
    Yes,
}

impl Fit {
    /// `yes`, `limited`, `no`.
    pub fn name(self) -> &'static str {
        match self {
            Fit::Yes => "yes",
            Fit::Limited => "limited",
            Fit::No => "no",
        }
    }
}

/// One kind of database and what it would see.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    /// `transactional`, `read-heavy`, `write-heavy` (or `this workload`).
    pub profile: &'static str,
    pub fit: Fit,
    /// The numbers, in the database's units.
    pub because: String,
}

/// The answer to "is this volume fit for a database?".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiskVerdict {
    pub fit: Fit,
    /// What it is fit for (and what not).
    #[serde(rename = "for")]
    pub for_: String,
    /// One line per kind of database, then the causes found.
    pub because: Vec<String>,
    pub profiles: Vec<Profile>,
    /// Commits one connection can do per second (1 / mean commit latency).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commits_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit_p50_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit_p99_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_qd1_p50_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_qd32_p99_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_mib_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment_ms: Option<f64>,
}

/// A commit p99 within this is fit (etcd's rule for WAL fdatasync), ms.
const COMMIT_P99_MS: f64 = 10.0;
/// A commit p50 over this is unfit (under 50 commits/s on a connection), ms.
const COMMIT_P50_NO_MS: f64 = 20.0;
/// A new WAL segment within this is fit; past the second, unfit, ms.
const SEGMENT_MS: f64 = 1000.0;
const SEGMENT_NO_MS: f64 = 2000.0;
/// For bulk writes: within this is fit, past the second unfit, ms.
const SEGMENT_BULK_MS: f64 = 500.0;
const SEGMENT_BULK_NO_MS: f64 = 2000.0;
/// Random reads one at a time: fit within the first, unfit past the second, ms.
const READ_P50_MS: f64 = 1.0;
const READ_P50_NO_MS: f64 = 10.0;
/// Random reads 32 at once: fit when p99 is within this, ms (a RAM-backed device on
/// a 2-core machine under 4 CPU hogs reached 16 ms; a volume capped at 3,000 IOPS
/// queues ~11 ms); unfit under the IOPS.
const READ_QD32_P99_MS: f64 = 20.0;
const READ_IOPS_NO: f64 = 200.0;
/// Sustained writes: fit from the first, unfit under the second, MiB/s.
const WRITE_MIB_S: f64 = 100.0;
const WRITE_NO_MIB_S: f64 = 20.0;

/// MiB/s as read: "5.0", "48.2", "1,284".
fn mib(v: f64) -> String {
    if v >= 100.0 {
        thousands(v.round() as u64)
    } else {
        format!("{v:.1}")
    }
}

/// The grade stalls give: crit `disk-tail` → no, warn → at best limited.
fn stall_cap(findings: &[Finding]) -> Fit {
    match findings
        .iter()
        .filter(|f| f.id == "disk-tail")
        .map(|f| f.severity)
        .max()
    {
        Some(Severity::Crit) => Fit::No,
        Some(Severity::Warn) => Fit::Limited,
        _ => Fit::Yes,
    }
}

/// yes within `good`, no past `bad`, limited between (for a value where lower is better).
fn grade(v: f64, good: f64, bad: f64) -> Fit {
    if v <= good {
        Fit::Yes
    } else if v > bad {
        Fit::No
    } else {
        Fit::Limited
    }
}

/// The verdict of a disk run from its facts and findings.
pub fn verdict(d: &DiskFacts, findings: &[Finding]) -> DiskVerdict {
    let stalls = stall_cap(findings);
    let mut v = DiskVerdict {
        fit: Fit::Yes,
        for_: String::new(),
        because: Vec::new(),
        profiles: Vec::new(),
        commits_per_s: None,
        commit_p50_ms: None,
        commit_p99_ms: None,
        read_qd1_p50_ms: None,
        read_qd32_p99_ms: None,
        write_mib_s: None,
        segment_ms: None,
    };
    if d.workloads.is_empty() {
        one_workload(d, stalls, &mut v);
    } else {
        suite(d, stalls, &mut v);
    }
    let fits: Vec<Fit> = v.profiles.iter().map(|p| p.fit).collect();
    v.fit = if fits.iter().all(|f| *f == Fit::Yes) {
        Fit::Yes
    } else if fits.iter().all(|f| *f == Fit::No) {
        Fit::No
    } else {
        Fit::Limited
    };
    if v.for_.is_empty() {
        v.for_ = for_text(&v.profiles);
    }
    v.because = v
        .profiles
        .iter()
        .map(|p| format!("{} {}: {}", p.profile, p.fit.name(), p.because))
        .collect();
    for f in findings.iter().filter(|f| f.severity >= Severity::Warn) {
        if let Some(name) = cause_name(&f.id) {
            v.because.push(format!("cause: {name} ({})", f.id));
        }
    }
    if stalls < Fit::Yes {
        v.because
            .push("slow I/Os count against every kind of database (disk-tail)".into());
    }
    v
}

/// A finding's cause in a few words.
fn cause_name(id: &str) -> Option<&'static str> {
    Some(match id {
        "disk-iops-cap" => "an IOPS cap",
        "disk-bandwidth-cap" => "a bandwidth cap",
        "disk-added-latency" => "latency added to every I/O",
        "disk-flush-cost" => "a costly cache flush on every commit",
        "disk-tail" => "slow I/Os (stalls, or a slow median)",
        "slow-fsync" => "slow fdatasync",
        _ => return None,
    })
}

/// "transactional and read-heavy databases; write-heavy ones at low rates only; not …".
fn for_text(profiles: &[Profile]) -> String {
    let names = |fit: Fit| -> Vec<&str> {
        profiles
            .iter()
            .filter(|p| p.fit == fit)
            .map(|p| p.profile)
            .collect()
    };
    let join_with = |v: Vec<&str>, and: &str| match v.len() {
        0 => String::new(),
        1 => v[0].to_string(),
        _ => format!("{} {and} {}", v[..v.len() - 1].join(", "), v[v.len() - 1]),
    };
    let join = |v: Vec<&str>| join_with(v, "and");
    let (yes, limited, no) = (names(Fit::Yes), names(Fit::Limited), names(Fit::No));
    let db = |v: &[&str]| {
        if v.iter().all(|p| *p == "this workload") {
            ""
        } else {
            " databases"
        }
    };
    let mut parts = Vec::new();
    if !yes.is_empty() {
        let d = db(&yes);
        parts.push(format!("{}{d}", join(yes)));
    }
    if !limited.is_empty() {
        let d = db(&limited);
        parts.push(format!("{}{d} at low rates only", join(limited)));
    }
    if !no.is_empty() {
        let d = db(&no);
        parts.push(format!("not {}{d}", join_with(no, "or")));
    }
    parts.join("; ")
}

fn suite(d: &DiskFacts, stalls: Fit, v: &mut DiskVerdict) {
    let segment = d.commit.as_ref().map(|c| c.segment_ms);
    v.segment_ms = segment;
    let seg_text = |ms: f64, extrapolated: bool| {
        format!(
            "a new 16 MiB WAL segment takes {}{}",
            fmt_ms(ms),
            if extrapolated { " (extrapolated)" } else { "" }
        )
    };
    if let Some(c) = &d.commit {
        let per_s = if c.mean_ms > 0.0 {
            1000.0 / c.mean_ms
        } else {
            0.0
        };
        v.commits_per_s = Some(per_s);
        v.commit_p50_ms = Some(c.p50_ms);
        v.commit_p99_ms = Some(c.p99_ms);
        // A tail measured while latscope itself was starved of CPU is not held
        // against the volume (the slow-fsync info says how to tell).
        let busy = commit_tail_is_machines(d);
        let p99_fit = match busy {
            Some(_) => Fit::Yes,
            None => grade(c.p99_ms, COMMIT_P99_MS, f64::INFINITY),
        };
        let busy_text = busy
            .filter(|_| c.p99_ms > COMMIT_P99_MS)
            .map(|pct| {
                format!(
                    " (p99 not held against the volume: latscope waited for a CPU {pct:.0} % \
                     of the time)"
                )
            })
            .unwrap_or_default();
        let fit = p99_fit
            .min(grade(c.p50_ms, COMMIT_P99_MS, COMMIT_P50_NO_MS))
            .min(grade(c.segment_ms, SEGMENT_MS, SEGMENT_NO_MS))
            .min(stalls);
        let append = c
            .append_p50_ms
            .map(|a| format!("; appending to a growing file {} p50", fmt_ms(a)))
            .unwrap_or_default();
        v.profiles.push(Profile {
            profile: "transactional",
            fit,
            because: format!(
                "a commit (8 KiB + fdatasync) takes {} p50, {} p99{busy_text} — about {} \
                 commits/s on one connection; {}{append}",
                fmt_ms(c.p50_ms),
                fmt_ms(c.p99_ms),
                thousands(per_s.round() as u64),
                seg_text(c.segment_ms, c.segment_extrapolated),
            ),
        });
    }
    if let (Some(r1), Some(r32)) = (d.workload("read-4k-qd1"), d.workload("read-4k-qd32")) {
        v.read_qd1_p50_ms = Some(r1.dir.p50_ms);
        v.read_qd32_p99_ms = Some(r32.dir.p99_ms);
        let iops_fit = if r32.iops < READ_IOPS_NO {
            Fit::No
        } else {
            Fit::Yes
        };
        let fit = grade(r1.dir.p50_ms, READ_P50_MS, READ_P50_NO_MS)
            .min(grade(r32.dir.p99_ms, READ_QD32_P99_MS, f64::INFINITY))
            .min(iops_fit)
            .min(stalls);
        v.profiles.push(Profile {
            profile: "read-heavy",
            fit,
            because: format!(
                "a random 4 KiB read takes {} p50 one at a time; 32 at once {} p50, {} p99 at \
                 {} IOPS",
                fmt_ms(r1.dir.p50_ms),
                fmt_ms(r32.dir.p50_ms),
                fmt_ms(r32.dir.p99_ms),
                thousands(r32.iops.round() as u64),
            ),
        });
    }
    if let Some(w) = d.workload("write-1m-qd8") {
        v.write_mib_s = Some(w.mib_s);
        let bw = if w.mib_s >= WRITE_MIB_S {
            Fit::Yes
        } else if w.mib_s < WRITE_NO_MIB_S {
            Fit::No
        } else {
            Fit::Limited
        };
        let seg = segment.map_or(Fit::Yes, |s| grade(s, SEGMENT_BULK_MS, SEGMENT_BULK_NO_MS));
        v.profiles.push(Profile {
            profile: "write-heavy",
            fit: bw.min(seg).min(stalls),
            because: format!(
                "sustained writes {} MiB/s (1 MiB blocks, 8 in flight){}",
                mib(w.mib_s),
                d.commit
                    .as_ref()
                    .map(|c| format!("; {}", seg_text(c.segment_ms, c.segment_extrapolated)))
                    .unwrap_or_default(),
            ),
        });
    }
}

/// The verdict of one workload (workload flags): what it measured, graded as the
/// matching kind of database would, and how to get the full verdict.
fn one_workload(d: &DiskFacts, stalls: Fit, v: &mut DiskVerdict) {
    let dirs: Vec<(&str, &DiskDirFacts)> =
        [("reads", d.read.as_ref()), ("writes", d.write.as_ref())]
            .into_iter()
            .filter_map(|(n, f)| Some((n, f?)))
            .filter(|(_, f)| f.ios > 0)
            .collect();
    let mut fit = stalls;
    let mut parts = Vec::new();
    for (name, f) in &dirs {
        fit = fit.min(grade(f.p50_ms, READ_P50_MS, READ_P50_NO_MS));
        parts.push(format!(
            "{name} {} p50, {} p99 at queue depth {}",
            fmt_ms(f.p50_ms),
            fmt_ms(f.p99_ms),
            d.iodepth
        ));
    }
    if let Some(p99) = d.fsync_p99_ms {
        fit = fit.min(grade(p99, COMMIT_P99_MS, COMMIT_P50_NO_MS * 5.0));
        parts.push(format!("fdatasync {} p99", fmt_ms(p99)));
    }
    v.profiles.push(Profile {
        profile: "this workload",
        fit,
        because: parts.join("; "),
    });
    v.for_ = format!(
        "{} (one workload: run `latscope disk PATH` without workload flags for a database's \
         verdict)",
        for_text(&v.profiles)
    );
}

#[cfg(test)]
#[path = "disk_verdict_tests.rs"]
mod tests;
