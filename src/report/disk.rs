//! `latscope disk` as terminal text: what was measured and how (the header), then per
//! direction IOPS, bandwidth and completion-latency percentiles to p99.99, fdatasync
//! on its own line, a per-second timeline and the findings — fio's numbers, laid out
//! to be read. Also the one-line progress shown on stderr while a run goes on.

use crate::diagnose::Finding;
use crate::disk::{DirSummary, DiskOptions, DiskResult, Pattern, SecondStats, Setup};
use crate::report::findings;
use crate::report::table::Table;
use crate::stats::counts::supports;
use crate::stats::Percentiles;
use crate::units::fmt_bytes;

/// Most timeline rows shown; longer runs are shown in groups of seconds.
const MAX_ROWS: usize = 60;

/// The first lines: what is measured, where and how. Printed when the measurement
/// starts.
pub fn header(opts: &DiskOptions, setup: &Setup) -> String {
    let what = match opts.pattern {
        Pattern::RandRw => format!("randrw {}% reads", opts.read_pct),
        p => p.name().to_string(),
    };
    let file = if setup.created {
        format!(
            "{} test file{}, removed afterwards",
            fmt_bytes(setup.size),
            if setup.laid_out { ", laid out" } else { "" }
        )
    } else {
        format!(
            "existing file, {}{}",
            fmt_bytes(setup.size),
            if opts.pattern.writes() || opts.precondition {
                ", written"
            } else {
                ", read-only"
            }
        )
    };
    format!(
        "disk {} ({file})\n  {what} · bs {} · iodepth {} · {} · {}{} · engine {} · {}\n",
        setup.file.display(),
        fmt_bytes(opts.bs),
        opts.iodepth,
        if setup.direct {
            "direct I/O"
        } else {
            "buffered I/O"
        },
        if opts.fsync {
            "fdatasync after each write · "
        } else {
            ""
        },
        humantime::format_duration(opts.duration),
        setup.engine.name(),
        if setup.direct {
            format!("alignment {} B", setup.align.1)
        } else {
            "page cache".to_string()
        },
    )
}

/// The results after the header.
pub fn render(r: &DiskResult, found: &[Finding]) -> String {
    let mut out = String::new();
    if r.interrupted {
        out.push_str(&format!(
            "\n  interrupted after {:.1} s: the numbers cover what was measured\n",
            r.elapsed.as_secs_f64()
        ));
    }
    let (read, write) = (r.read(), r.write());
    let dirs: Vec<(&str, DirSummary)> = [("read", read), ("write", write)]
        .into_iter()
        .filter(|(n, d)| {
            d.ios > 0
                || (*n == "read" && r.options.pattern.reads())
                || (*n == "write" && r.options.pattern.writes())
        })
        .collect();
    let mut t = Table::new(["", "IOPS", "MiB/s", "I/Os"]);
    for (name, d) in &dirs {
        t.row([
            name.to_string(),
            group(d.iops.round() as u64),
            format!("{:.2}", d.bw_mib_s),
            group(d.ios),
        ]);
    }
    out.push('\n');
    out.push_str(&t.render(2));

    let mut t = Table::new([
        "latency", "min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max",
    ]);
    // Percentiles only where the I/Os support them (p99.9 from 1,000, p99.99 from
    // 10,000): "-" below, and the maximum stays the maximum.
    let lat_row = |t: &mut Table, name: &str, p: &Percentiles, n: u64| {
        let mut row = vec![name.to_string()];
        row.extend(
            [
                (p.min, 0.0),
                (p.mean, 0.0),
                (p.p50, 0.0),
                (p.p90, 0.9),
                (p.p99, 0.99),
                (p.p999, 0.999),
                (p.p9999, 0.9999),
                (p.max, 0.0),
            ]
            .into_iter()
            .map(|(v, q)| {
                if q == 0.0 || supports(n, q) {
                    fmt_us(v)
                } else {
                    "-".into()
                }
            }),
        );
        t.row(row);
    };
    for (name, d) in &dirs {
        lat_row(&mut t, name, &d.lat_us, d.ios);
    }
    if let Some((count, p)) = r.fsync() {
        lat_row(&mut t, &format!("fdatasync ({})", group(count)), &p, count);
    }
    out.push('\n');
    out.push_str(&t.render(2));

    if !r.timeline.is_empty() {
        out.push('\n');
        out.push_str(&timeline(r));
    }
    for w in r.warnings() {
        out.push_str(&format!("\n  warning: {w}\n"));
    }
    out.push('\n');
    out.push_str(&findings::render(found));
    out
}

/// The per-second table (grouped when the run is long).
fn timeline(r: &DiskResult) -> String {
    let reads = r.options.pattern.reads();
    let writes = r.options.pattern.writes();
    let fsync = r.options.fsync;
    let group_by = r.timeline.len().div_ceil(MAX_ROWS).max(1);
    let mut head = vec!["t".to_string()];
    if reads {
        head.extend(["read IOPS".into(), "read p50".into(), "read p99".into()]);
    }
    if writes {
        head.extend(["write IOPS".into(), "write p50".into(), "write p99".into()]);
    }
    if fsync {
        head.push("fsync p99".into());
    }
    let mut t = Table::new(head);
    for chunk in r.timeline.chunks(group_by) {
        let first = chunk[0].t;
        let len: f64 = chunk.iter().map(|s| s.length_s).sum();
        let sum = |f: fn(&SecondStats) -> u64| chunk.iter().map(f).sum::<u64>();
        let max = |f: fn(&SecondStats) -> f64| chunk.iter().map(f).fold(0.0, f64::max);
        let mut row = vec![if group_by == 1 {
            format!("{first}s")
        } else {
            format!("{first}-{}s", chunk[chunk.len() - 1].t + 1)
        }];
        if reads {
            row.push(group((sum(|s| s.read_ios) as f64 / len).round() as u64));
            row.push(fmt_us(max(|s| s.read_p50_us)));
            row.push(fmt_us(max(|s| s.read_p99_us)));
        }
        if writes {
            row.push(group((sum(|s| s.write_ios) as f64 / len).round() as u64));
            row.push(fmt_us(max(|s| s.write_p50_us)));
            row.push(fmt_us(max(|s| s.write_p99_us)));
        }
        if fsync {
            row.push(fmt_us(max(|s| s.fsync_p99_us)));
        }
        t.row(row);
    }
    let mut out = if group_by == 1 {
        "  per second\n".to_string()
    } else {
        format!("  per {group_by} seconds (latencies: the worst second)\n")
    };
    out.push_str(&t.render(2));
    out
}

/// The progress line while measuring (stderr, on a terminal only).
pub fn progress(s: &SecondStats, total_s: u64) -> String {
    format!("  {}/{} s{}", s.t + 1, total_s, progress_rates(s))
}

/// The rates and p99s of one second, for a progress line.
pub fn progress_rates(s: &SecondStats) -> String {
    let mut line = String::new();
    if s.read_ios > 0 {
        line.push_str(&format!(
            "  read {} IOPS p99 {}",
            group(s.read_iops().round() as u64),
            fmt_us(s.read_p99_us)
        ));
    }
    if s.write_ios > 0 {
        line.push_str(&format!(
            "  write {} IOPS p99 {}",
            group(s.write_iops().round() as u64),
            fmt_us(s.write_p99_us)
        ));
    }
    if s.fsyncs > 0 {
        line.push_str(&format!("  fsync p99 {}", fmt_us(s.fsync_p99_us)));
    }
    line
}

/// The progress line while laying out the test file.
pub fn layout_progress(done: u64, total: u64) -> String {
    format!(
        "  laying out the test file: {} of {}",
        fmt_bytes(done),
        fmt_bytes(total)
    )
}

/// A latency given in µs, in the unit that reads best: `7.4 µs`, `180 µs`,
/// `2.80 ms`, `1.30 s`.
pub fn fmt_us(us: f64) -> String {
    if !us.is_finite() || us <= 0.0 {
        "-".into()
    } else if us < 10.0 {
        format!("{us:.1} µs")
    } else if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 1_000_000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// 1234567 → `1,234,567`.
fn group(n: u64) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_latency_and_counts() {
        assert_eq!(fmt_us(7.44), "7.4 µs");
        assert_eq!(fmt_us(180.2), "180 µs");
        assert_eq!(fmt_us(2800.0), "2.80 ms");
        assert_eq!(fmt_us(1_300_000.0), "1.30 s");
        assert_eq!(fmt_us(0.0), "-");
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(group(999), "999");
        assert_eq!(group(0), "0");
    }
}
