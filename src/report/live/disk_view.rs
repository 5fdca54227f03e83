//! The disk view's widgets, drawn from a [`DiskState`]: a header (the path and
//! the workload, a progress bar, the last second's IOPS, MiB/s and p99), the latency chart (p50,
//! p99, max per second of reads and writes), an IOPS chart on the same time axis
//! (its top also in MiB/s), a table per operation (read, write, fdatasync: I/Os,
//! IOPS, MiB/s, p50/p99/max so far), the file measured with the setup's notes, and
//! the key line. The parts every view shares are in [`chrome`]. Draws only; never
//! measures.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Row, Table, Wrap};
use ratatui::Frame;

use super::chrome::{self, group, label, short, ChartFrame, Series, WINDOW_S};
use super::disk::{DiskPoint, DiskState};
use crate::report::disk::fmt_us;

const P50: Color = Color::Green;
const P99: Color = Color::LightRed;
const MAX: Color = Color::DarkGray;
const IOPS: Color = Color::Cyan;
const READS: Color = Color::Blue;
const WRITES: Color = Color::Yellow;

/// Help lines about what the disk view shows.
const ABOUT: [&str; 4] = [
    "Each point is one second: the p50, p99 and max completion",
    "latency of its reads and writes together, and its IOPS",
    "(MiB/s = IOPS × block size). The table has each operation",
    "so far. --no-tui gives the progress line.",
];

/// Draws the whole view into `frame`.
pub fn draw(frame: &mut Frame, st: &DiskState) {
    let area = frame.area();
    let rows = st.shown_ops().count() as u16 + 3;
    let (title, bar, numbers, parts, keys) = chrome::frame_areas(
        area,
        &[
            Constraint::Min(6),
            Constraint::Length(7),
            Constraint::Length(rows.max(st.setup.notes.len() as u16 + 3).clamp(5, 8)),
        ],
    );
    header(frame, [title, bar, numbers], st);
    let range = st.x_range(WINDOW_S);
    let points = st.visible(range);
    latency_chart(frame, parts[0], st, range, points);
    rate_chart(frame, parts[1], st, range, points);
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)])
            .areas(parts[2]);
    op_table(frame, left, st);
    file_box(frame, right, st);
    chrome::key_line(frame, keys, &st.keys);
    if st.keys.help {
        chrome::help(frame, area, &ABOUT);
    }
}

fn header(frame: &mut Frame, [title, bar, numbers]: [Rect; 3], st: &DiskState) {
    chrome::title_line(
        frame,
        title,
        &st.setup.title,
        &st.setup.workload,
        st.keys.stopping,
    );
    let (ratio, of) = chrome::timed(st.elapsed, Some(st.setup.length));
    chrome::progress_bar(frame, bar, ratio, of);
    let last = st.points.last().copied().unwrap_or_default();
    let mut spans = Vec::new();
    spans.extend(label("IOPS", group(last.ios())));
    spans.extend(label(
        "MiB/s",
        format!("{:.1}", st.setup.mib_s(last.ios() as f64)),
    ));
    spans.extend(label("p99", fmt_us(last.p99_us)));
    spans.extend(label("I/Os", group(st.ios())));
    if st.setup.ops[2] {
        spans.extend(label("fdatasyncs", group(st.ops[2].latency.len())));
    }
    if let Some(cpu) = st.cpu_pct {
        spans.extend(label(
            "latscope CPU",
            format!("{cpu:.0}% of {}%", st.setup.cores * 100),
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), numbers);
}

fn series(points: &[DiskPoint], f: impl Fn(&DiskPoint) -> f64) -> Vec<(f64, f64)> {
    points.iter().map(|p| (p.t as f64, f(p))).collect()
}

fn latency_chart(
    frame: &mut Frame,
    area: Rect,
    st: &DiskState,
    range: (u32, u32),
    points: &[DiskPoint],
) {
    let show_max = st.keys.show_max;
    let top_of = |p: &DiskPoint| if show_max { p.max_us } else { p.p99_us };
    let top = points.iter().map(top_of).fold(0.0, f64::max).max(1.0) * 1.05;
    let p50 = series(points, |p| p.p50_us);
    let p99 = series(points, |p| p.p99_us);
    let max = series(points, |p| p.max_us);
    let mut lines = vec![
        Series::line("━ p50", P50, &p50),
        Series::line("━ p99", P99, &p99),
    ];
    if show_max {
        lines.push(Series::line("━ max", MAX, &max));
    }
    let what = match st.setup.ops {
        [true, true, _] => "reads and writes",
        [false, true, _] => "writes",
        _ => "reads",
    };
    let how = ChartFrame {
        title: format!(" I/O latency per second ({what})  "),
        range,
        top,
        y_labels: vec!["0".into(), fmt_us(top / 2.0), fmt_us(top)],
        time_labels: false,
        paused: st.keys.paused_at.is_some(),
    };
    chrome::chart(frame, area, how, &lines);
}

fn rate_chart(
    frame: &mut Frame,
    area: Rect,
    st: &DiskState,
    range: (u32, u32),
    points: &[DiskPoint],
) {
    let top = points
        .iter()
        .map(|p| p.ios() as f64)
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.1;
    let iops = series(points, |p| p.ios() as f64);
    let reads = series(points, |p| p.read_ios as f64);
    let writes = series(points, |p| p.write_ios as f64);
    let mut lines = vec![Series::line("━ IOPS", IOPS, &iops)];
    if st.setup.ops[0] && st.setup.ops[1] {
        lines.push(Series::line("━ reads", READS, &reads));
        lines.push(Series::line("━ writes", WRITES, &writes));
    }
    let how = ChartFrame {
        title: format!(
            " top {} IOPS = {:.1} MiB/s  ",
            short(top),
            st.setup.mib_s(top)
        ),
        range,
        top,
        y_labels: vec!["0".into(), short(top)],
        time_labels: true,
        paused: false,
    };
    chrome::chart(frame, area, how, &lines);
}

fn us_of(h: &hdrhistogram::Histogram<u64>, q: f64) -> String {
    if h.is_empty() {
        "-".into()
    } else {
        fmt_us(h.value_at_quantile(q) as f64 / 1e3)
    }
}

fn op_table(frame: &mut Frame, area: Rect, st: &DiskState) {
    let secs = st.elapsed.as_secs_f64().max(1e-9);
    let rows = st.shown_ops().map(|op| {
        let n = op.latency.len();
        let per_s = n as f64 / secs;
        let mib = if op.name == "fdatasync" {
            "-".to_string()
        } else {
            format!("{:.1}", st.setup.mib_s(per_s))
        };
        Row::new([
            op.name.to_string(),
            group(n),
            group(per_s.round() as u64),
            mib,
            us_of(&op.latency, 0.5),
            us_of(&op.latency, 0.99),
            us_of(&op.latency, 1.0),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Min(9),
            Constraint::Length(9),
            Constraint::Length(7),
            Constraint::Length(6),
            Constraint::Length(8),
            Constraint::Length(8),
            Constraint::Length(8),
        ],
    )
    .header(
        Row::new(["op", "I/Os", "IOPS", "MiB/s", "p50", "p99", "max"])
            .style(Style::new().add_modifier(Modifier::BOLD)),
    )
    .block(Block::bordered().title(" so far "));
    frame.render_widget(table, area);
}

fn file_box(frame: &mut Frame, area: Rect, st: &DiskState) {
    let mut lines = vec![Line::from(st.setup.file.clone())];
    lines.extend(
        st.setup
            .notes
            .iter()
            .filter(|n| !n.is_empty())
            .map(|n| Line::styled(n.clone(), Style::new().fg(Color::DarkGray))),
    );
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::bordered().title(" file ")),
        area,
    );
}

#[cfg(test)]
mod tests {
    use super::super::chrome::tests::render;
    use super::super::disk::tests::fixed;
    use super::*;

    /// The fixed disk state at 110×32: the header (workload, progress, the last
    /// second's IOPS, MiB/s and p99, the I/Os so far, latscope's CPU), both charts
    /// on one time axis with drawn points, the table per operation with its numbers
    /// so far, the file box and the key line.
    #[test]
    fn renders_every_part() {
        let st = fixed();
        let s = render(110, 32, |f| draw(f, &st));
        let lines: Vec<&str> = s.lines().collect();
        assert!(
            lines[0].starts_with(
                "latscope disk /srv/db — randrw 70% reads · bs 4.0 KiB · iodepth 8 · io_uring"
            ),
            "{}",
            lines[0]
        );
        assert!(lines[1].contains("10s / 30s") && lines[1].contains('━'));
        for want in [
            "IOPS 10,900",
            "MiB/s 42.6",
            "I/Os 104,501",
            "fdatasyncs 30,000",
            "latscope CPU 39% of 200%",
        ] {
            assert!(lines[2].contains(want), "{want:?} in {}", lines[2]);
        }
        assert!(lines[2].contains("p99 "), "{}", lines[2]);
        assert!(s.contains("I/O latency per second (reads and writes)"));
        assert!(s.contains("━ p99") && s.contains("━ max") && s.contains("━ IOPS"));
        assert!(s.contains("━ reads") && s.contains("━ writes"));
        assert!(s.contains("MiB/s"));
        assert!(s.contains("0s") && s.contains("30s"), "time axis:\n{s}");
        assert!(s.chars().any(|c| ('\u{2801}'..='\u{28ff}').contains(&c)));
        // The 40 ms write stall is the latency chart's top.
        assert!(s.contains("42.") && s.contains(" ms"), "{s}");
        let row = |name: &str| {
            lines
                .iter()
                .find(|l| l.contains(&format!("│{name} ")))
                .unwrap_or_else(|| panic!("row {name}:\n{s}"))
                .to_string()
        };
        let read = row("read");
        assert!(read.contains("74,500") && read.contains("7,450"), "{read}");
        assert!(read.contains("29.1"), "read MiB/s: {read}");
        assert!(read.contains(" µs"), "{read}");
        let write = row("write");
        assert!(
            write.contains("30,001") && write.contains("40.0"),
            "{write}"
        );
        let sync = row("fdatasync");
        assert!(sync.contains("30,000") && sync.contains(" ms"), "{sync}");
        assert!(s.contains(".latscope-disk-4242.tmp"), "{s}");
        assert!(s.contains("removed afterwards"), "{s}");
        assert!(lines[31].contains("q stop and keep the run"));
    }

    /// The y labels of both charts have one width, so their time axes line up.
    #[test]
    fn charts_share_the_time_axis() {
        let st = fixed();
        let s = render(110, 32, |f| draw(f, &st));
        let axis_cols: Vec<usize> = s
            .lines()
            .filter(|l| {
                let label: String = l.chars().take(10).collect();
                l.starts_with('│') && (label.contains("s│") || label.contains("k│"))
            })
            .filter_map(|l| l.chars().skip(1).position(|c| c == '│'))
            .collect();
        assert!(axis_cols.len() >= 3, "{s}");
        assert!(
            axis_cols.iter().all(|c| *c == axis_cols[0]),
            "{axis_cols:?}\n{s}"
        );
    }

    /// A read-only run shows only the read row and no reads/writes lines; paused,
    /// help open, max hidden and stopping show; small terminals do not panic.
    #[test]
    fn renders_reads_only_switches_and_small_terminals() {
        let mut st = fixed();
        st.setup.ops = [true, false, false];
        for op in &mut st.ops[1..] {
            op.latency.reset();
        }
        let s = render(110, 32, |f| draw(f, &st));
        assert!(s.contains("│read ") && !s.contains("│write "), "{s}");
        assert!(!s.contains("━ writes") && !s.contains("fdatasyncs"), "{s}");
        assert!(s.contains("I/O latency per second (reads)"), "{s}");
        let newest = st.points.last().unwrap().t;
        st.keys.toggle_pause(newest);
        st.keys.show_max = false;
        st.keys.stopping = true;
        let s = render(110, 32, |f| draw(f, &st));
        assert!(s.contains("paused (p resumes)") && !s.contains("━ max"));
        assert!(s.contains("stopping"));
        st.keys.help = true;
        let s = render(110, 32, |f| draw(f, &st));
        assert!(s.contains("pause / resume the chart") && s.contains("IOPS × block size"));
        for (w, h) in [(20, 5), (1, 1), (80, 24), (300, 80)] {
            render(w, h, |f| draw(f, &st));
        }
    }
}
