//! The disk verdict and the database suite as terminal text: the verdict first (fit
//! for a database: yes / limited / no, for what, because of which numbers), then what
//! the suite ran — one row per workload with IOPS, MiB/s and latency, the commit
//! test beside the O_DIRECT log — then the findings.

use crate::diagnose::disk_verdict::DiskVerdict;
use crate::diagnose::Finding;
use crate::disk::commit::CommitHists;
use crate::disk::suite::{SuiteResult, SUITE_SECONDS};
use crate::report::disk::fmt_us;
use crate::report::findings;
use crate::report::table::Table;
use crate::stats::counts::supports;
use crate::units::fmt_bytes;

/// The verdict block: one headline and a line per kind of database and cause.
pub fn verdict_text(v: &DiskVerdict) -> String {
    let mut out = format!(
        "  verdict: fit for a database: {} — {}\n",
        v.fit.name(),
        v.for_
    );
    for b in &v.because {
        out.push_str(&format!("    {b}\n"));
    }
    out
}

/// A latency (ns) at quantile `q` of `n` values, or "-" where `n` cannot support it.
fn at(h: &hdrhistogram::Histogram<u64>, q: f64) -> String {
    if h.is_empty() || (q < 1.0 && !supports(h.len(), q)) {
        "-".into()
    } else {
        fmt_us(h.value_at_quantile(q) as f64 / 1e3)
    }
}

/// The whole suite: verdict, setup, workloads, commits, findings.
pub fn render_suite(r: &SuiteResult, v: &DiskVerdict, found: &[Finding]) -> String {
    let mut out = verdict_text(v);
    let layout = match r.layout {
        Some((bytes, t)) => format!("{} laid out in {:.1} s", fmt_bytes(bytes), t.as_secs_f64()),
        None => format!("existing file, {}, read-only", fmt_bytes(r.setup.size)),
    };
    out.push_str(&format!(
        "\ndisk {} ({layout}{})\n  database suite: {} workloads and the commit test in {:.1} s \
         (about {SUITE_SECONDS} s on any volume) · {} · engine {}\n",
        r.setup.file.display(),
        if r.setup.created {
            ", removed afterwards"
        } else {
            ""
        },
        r.runs.len(),
        r.elapsed.as_secs_f64(),
        if r.setup.direct {
            "direct I/O"
        } else {
            "buffered I/O"
        },
        r.setup.engine.name(),
    ));
    if r.interrupted {
        out.push_str("\n  interrupted: the numbers cover what was measured\n");
    }
    let mut t = Table::new([
        "workload", "IOPS", "MiB/s", "I/Os", "p50", "p99", "p99.9", "max",
    ]);
    for w in &r.runs {
        let res = &w.result;
        let [read, write, fsync] = res.latencies();
        let (h, d) = if w.workload.pattern.writes() {
            (write, res.write())
        } else {
            (read, res.read())
        };
        t.row([
            w.workload.name.to_string(),
            format!("{:.0}", d.iops),
            format!("{:.1}", d.bw_mib_s),
            d.ios.to_string(),
            at(h, 0.5),
            at(h, 0.99),
            at(h, 0.999),
            at(h, 1.0),
        ]);
        if !fsync.is_empty() {
            t.row([
                "  + fdatasync".to_string(),
                String::new(),
                String::new(),
                fsync.len().to_string(),
                at(fsync, 0.5),
                at(fsync, 0.99),
                at(fsync, 0.999),
                at(fsync, 1.0),
            ]);
        }
    }
    if let Some(c) = &r.commit {
        let secs = c.steady_elapsed.as_secs_f64();
        let row = |t: &mut Table, name: &str, h: &CommitHists, per_s: String| {
            t.row([
                name.to_string(),
                per_s,
                String::new(),
                h.count().to_string(),
                at(&h.commit, 0.5),
                at(&h.commit, 0.99),
                at(&h.commit, 0.999),
                at(&h.commit, 1.0),
            ]);
        };
        let per_s = if secs > 0.0 {
            format!("{:.0}", c.steady.count() as f64 / secs)
        } else {
            String::new()
        };
        row(&mut t, "commit", &c.steady, per_s);
        t.row([
            "  write | fdatasync".to_string(),
            String::new(),
            String::new(),
            String::new(),
            format!(
                "{} | {}",
                at(&c.steady.write, 0.5),
                at(&c.steady.fsync, 0.5)
            ),
            format!(
                "{} | {}",
                at(&c.steady.write, 0.99),
                at(&c.steady.fsync, 0.99)
            ),
            String::new(),
            String::new(),
        ]);
        row(&mut t, "commit, appending", &c.append, String::new());
    }
    out.push('\n');
    out.push_str(&t.render(2));
    if let Some(c) = &r.commit {
        out.push_str(&format!(
            "  commit: 8 KiB through the page cache + fdatasync into a pre-zeroed 16 MiB \
             segment (a database's WAL); appending: into a file that grows; a new segment \
             (16 MiB of zeros, synced) took {:.2} s{}\n",
            c.segment_estimate().as_secs_f64(),
            if c.segment_complete() {
                String::new()
            } else {
                format!(
                    " (extrapolated from {} in {:.1} s)",
                    fmt_bytes(c.segment_written),
                    c.segment_time.as_secs_f64()
                )
            }
        ));
        if c.starved.count() > 0 {
            out.push_str(&format!(
                "  {} commits in {:.1} s while latscope itself waited for a CPU{}\n",
                c.starved.count(),
                c.starved_elapsed.as_secs_f64(),
                if c.starved_kept {
                    " — kept (too little time without): the commit tail may be the machine's"
                } else {
                    ": left out of the commit row"
                }
            ));
        }
    }
    out.push_str(
        "  percentiles only where the I/Os support them (p99 from 100, p99.9 from 1,000)\n",
    );
    for w in r
        .runs
        .first()
        .map(|r| r.result.warnings())
        .unwrap_or_default()
    {
        out.push_str(&format!("\n  warning: {w}\n"));
    }
    for n in &r.notes {
        out.push_str(&format!("\n  note: {n}\n"));
    }
    out.push('\n');
    out.push_str(&findings::render(found));
    out
}
