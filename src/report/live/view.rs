//! The load view's widgets, drawn from a [`LiveState`]: a header (what runs, a
//! progress bar, the numbers of the last second), the latency chart (p50, p90, p99,
//! max per second), a req/s chart on the same time axis with errors per second in
//! red, a per-endpoint table (scenario runs) or the run's percentiles so far, status
//! codes and error kinds, and a key line. The parts every view shares are in
//! [`chrome`]. Draws only; never measures.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table};
use ratatui::Frame;

use super::chrome::{self, group, label, short, ChartFrame, Series, WINDOW_S};
use super::state::{LiveState, Point, Target};
use crate::units::fmt_ms;

const P50: Color = Color::Green;
const P90: Color = Color::Yellow;
const P99: Color = Color::LightRed;
const MAX: Color = Color::DarkGray;
const RPS: Color = Color::Cyan;
const ERR: Color = Color::Red;
const SERVER: Color = Color::Magenta;

/// Help lines about what the load view shows.
const ABOUT: [&str; 4] = [
    "Each point is one second: its p50, p90, p99 and max",
    "latency, the requests it completed (req/s) and its errors.",
    "latscope CPU near threads × 100% means the client, not the",
    "server, may be the limit. --no-tui gives the progress line.",
];

/// Draws the whole view into `frame`.
pub fn draw(frame: &mut Frame, st: &LiveState) {
    let area = frame.area();
    let table_rows = if st.endpoints.len() >= 2 {
        st.endpoints.len() as u16 + 3
    } else {
        6
    };
    let (title, bar, numbers, parts, keys) = chrome::frame_areas(
        area,
        &[
            Constraint::Min(6),
            Constraint::Length(7),
            Constraint::Length(table_rows.clamp(5, 12)),
        ],
    );
    header(frame, [title, bar, numbers], st);
    let range = st.x_range(WINDOW_S);
    let points = st.visible(range);
    latency_chart(frame, parts[0], st, range, points);
    rate_chart(frame, parts[1], range, points);
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)])
            .areas(parts[2]);
    if st.endpoints.len() >= 2 {
        endpoint_table(frame, left, st);
    } else {
        totals(frame, left, st);
    }
    statuses(frame, right, st);
    chrome::key_line(frame, keys, &st.keys);
    if st.keys.help {
        chrome::help(frame, area, &ABOUT);
    }
}

fn header(frame: &mut Frame, [title, bar, numbers]: [Rect; 3], st: &LiveState) {
    chrome::title_line(
        frame,
        title,
        &st.setup.title,
        &st.setup.model,
        st.keys.stopping,
    );
    let (ratio, of) = match st.setup.count {
        Some(n) if n > 0 => (
            st.requests as f64 / n as f64,
            format!(
                "{} / {} requests, {}s",
                group(st.requests),
                group(n),
                st.elapsed.as_secs()
            ),
        ),
        _ => chrome::timed(st.elapsed, st.setup.length),
    };
    chrome::progress_bar(frame, bar, ratio, of);

    let last = st.last().copied().unwrap_or_default();
    let mut spans = Vec::new();
    spans.extend(label("req/s", group(last.requests)));
    spans.extend(label("requests", group(st.requests)));
    let err = if st.requests > 0 {
        format!(
            "{} ({:.2}%)",
            group(st.errors),
            st.errors as f64 * 100.0 / st.requests as f64
        )
    } else {
        "0".into()
    };
    spans.extend(label("errors", err));
    if st.checks > 0 {
        let passed = st.checks.saturating_sub(st.checks_failed);
        spans.extend(label(
            "checks",
            format!(
                "{:.2}% of {}",
                passed as f64 * 100.0 / st.checks as f64,
                group(st.checks)
            ),
        ));
    }
    let t = st.elapsed.as_secs_f64();
    match &st.setup.target {
        _ if st.step.is_some() => {
            let (c, i, n) = st.step.unwrap_or_default();
            spans.extend(label("ramp step", format!("{i}/{n}, {c} connections")));
            spans.extend(label("conns", group(st.active)));
        }
        Target::Vus(r) => {
            spans.extend(label("VUs", format!("{:.0}", r.at(t).max(0.0))));
            spans.extend(label("conns", group(st.active)));
        }
        Target::Rate(r) => {
            spans.extend(label(
                "rate",
                format!("{} → {} req/s", short(r.at(t)), group(last.requests)),
            ));
            spans.extend(label("dropped", group(st.dropped)));
            spans.extend(label("conns", group(st.active)));
        }
    }
    if let Some(cpu) = st.cpu_pct {
        spans.extend(label(
            "latscope CPU",
            format!("{cpu:.0}% of {}%", st.setup.threads * 100),
        ));
    }
    if let Some(cpu) = st.points.iter().rev().find_map(|p| p.server_cpu) {
        spans.extend(label("server CPU", format!("{cpu:.0}%")));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), numbers);
}

fn series(points: &[Point], f: impl Fn(&Point) -> f64) -> Vec<(f64, f64)> {
    points.iter().map(|p| (p.t as f64, f(p))).collect()
}

fn latency_chart(
    frame: &mut Frame,
    area: Rect,
    st: &LiveState,
    range: (u32, u32),
    points: &[Point],
) {
    let show_max = st.keys.show_max;
    let top_of = |p: &Point| if show_max { p.max_ms } else { p.p99_ms };
    let top = points.iter().map(top_of).fold(0.0, f64::max).max(0.1) * 1.05;
    let p50 = series(points, |p| p.p50_ms);
    let p90 = series(points, |p| p.p90_ms);
    let p99 = series(points, |p| p.p99_ms);
    let max = series(points, |p| p.max_ms);
    let mut lines = vec![
        Series::line("━ p50", P50, &p50),
        Series::line("━ p90", P90, &p90),
        Series::line("━ p99", P99, &p99),
    ];
    if show_max {
        lines.push(Series::line("━ max", MAX, &max));
    }
    let how = ChartFrame {
        title: " latency per second  ".into(),
        range,
        top,
        y_labels: vec!["0".into(), fmt_ms(top / 2.0), fmt_ms(top)],
        time_labels: false,
        paused: st.keys.paused_at.is_some(),
    };
    chrome::chart(frame, area, how, &lines);
}

fn rate_chart(frame: &mut Frame, area: Rect, range: (u32, u32), points: &[Point]) {
    let top = points
        .iter()
        .map(|p| p.requests.max(p.errors) as f64)
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.1;
    let rps = series(points, |p| p.requests as f64);
    let errs: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.errors > 0)
        .map(|p| (p.t as f64, p.errors as f64))
        .collect();
    // `--watch`: the server's CPU on the same time axis, 0–100 % of the chart's height.
    let cpu: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|p| Some((p.t as f64, p.server_cpu? / 100.0 * top)))
        .collect();
    let mut lines = vec![
        Series::line("━ req/s", RPS, &rps),
        Series {
            legend: "▮ errors/s",
            color: ERR,
            bars: true,
            data: &errs,
        },
    ];
    if !cpu.is_empty() {
        lines.push(Series::line(
            "━ server CPU (0–100 % of the height)",
            SERVER,
            &cpu,
        ));
    }
    let how = ChartFrame {
        title: " ".into(),
        range,
        top,
        y_labels: vec!["0".into(), short(top)],
        time_labels: true,
        paused: false,
    };
    chrome::chart(frame, area, how, &lines);
}

fn ms_of(h: &hdrhistogram::Histogram<u64>, q: f64) -> String {
    if h.is_empty() {
        "-".into()
    } else {
        fmt_ms(h.value_at_quantile(q) as f64 / 1e6)
    }
}

fn endpoint_table(frame: &mut Frame, area: Rect, st: &LiveState) {
    let secs = st.elapsed.as_secs_f64().max(1e-9);
    let rows = st.endpoints.iter().map(|e| {
        let errors = e.requests.saturating_sub(e.ok);
        let err_style = if errors > 0 {
            Style::new().fg(ERR)
        } else {
            Style::new()
        };
        Row::new([
            Cell::from(e.name.clone()),
            Cell::from(group(e.requests)),
            Cell::from(format!("{:.0}", e.requests as f64 / secs)),
            Cell::from(ms_of(&e.latency, 0.5)),
            Cell::from(ms_of(&e.latency, 0.99)),
            Cell::from(group(errors)).style(err_style),
        ])
    });
    let shown = area.height.saturating_sub(3) as usize;
    let more = st.endpoints.len().saturating_sub(shown);
    let title = if more > 0 {
        format!(" endpoints so far (+{more} more) ")
    } else {
        " endpoints so far ".to_string()
    };
    let table = Table::new(
        rows,
        [
            Constraint::Fill(1),
            Constraint::Length(10),
            Constraint::Length(7),
            Constraint::Length(9),
            Constraint::Length(9),
            Constraint::Length(7),
        ],
    )
    .header(
        Row::new(["endpoint", "requests", "req/s", "p50", "p99", "errors"])
            .style(Style::new().add_modifier(Modifier::BOLD)),
    )
    .block(Block::bordered().title(title));
    frame.render_widget(table, area);
}

fn totals(frame: &mut Frame, area: Rect, st: &LiveState) {
    let h = &st.latency;
    let rows = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)]
        .map(|(n, q)| Row::new([n.to_string(), ms_of(h, q)]));
    let max = if h.is_empty() {
        "-".into()
    } else {
        fmt_ms(h.max() as f64 / 1e6)
    };
    let rows = rows.into_iter().chain([Row::new(["max".to_string(), max])]);
    let table = Table::new(rows, [Constraint::Length(7), Constraint::Length(10)])
        .block(Block::bordered().title(" latency so far "));
    frame.render_widget(table, area);
}

fn statuses(frame: &mut Frame, area: Rect, st: &LiveState) {
    let mut lines: Vec<Line> = st
        .statuses
        .iter()
        .map(|(code, n)| {
            let color = match code {
                200..=399 => Color::Green,
                400..=499 => Color::Yellow,
                _ => ERR,
            };
            Line::from(vec![
                Span::styled(format!("{code}  "), Style::new().fg(color)),
                Span::raw(group(*n)),
            ])
        })
        .collect();
    for (kind, n) in &st.error_kinds {
        lines.push(Line::from(vec![
            Span::styled(format!("{kind}  "), Style::new().fg(ERR)),
            Span::raw(group(*n)),
        ]));
    }
    if lines.is_empty() {
        lines.push(Line::from(Span::styled(
            "none yet",
            Style::new().fg(Color::DarkGray),
        )));
    }
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" status codes, errors ")),
        area,
    );
}

#[cfg(test)]
mod tests {
    use super::super::state::tests::fixed;
    use super::*;
    use crate::load::result::SecondResult;

    fn render(st: &LiveState, w: u16, h: u16) -> String {
        super::super::chrome::tests::render(w, h, |f| draw(f, st))
    }

    /// With `--watch`, the server's CPU is drawn on the req/s chart's time axis and
    /// its last value is in the header.
    #[test]
    fn renders_the_watched_servers_cpu() {
        let mut st = fixed();
        let plain = render(&st, 100, 32);
        assert!(!plain.contains("server CPU"), "{plain}");
        for (i, p) in st.points.iter_mut().enumerate() {
            p.server_cpu = Some(50.0 + i as f64);
        }
        // Wide enough for the header's last item.
        let s = render(&st, 140, 32);
        assert!(s.contains("━ server CPU"), "{s}");
        let last = 50 + st.points.len() - 1;
        assert!(
            s.lines()
                .nth(2)
                .unwrap()
                .contains(&format!("server CPU {last}%")),
            "{s}"
        );
    }

    /// A scenario's checks show in the numbers line as the share passed so far; a
    /// run without checks shows none.
    #[test]
    fn renders_the_checks() {
        let mut st = fixed();
        assert!(!render(&st, 160, 32).contains("checks"));
        let mut s = SecondResult {
            t: 12,
            requests: 1000,
            ok: 1000,
            checks: 2000,
            checks_failed: 4,
            ..Default::default()
        };
        st.push_second(&s, None);
        (s.t, s.checks_failed) = (13, 6);
        st.push_second(&s, None);
        assert_eq!((st.checks, st.checks_failed), (4000, 10));
        let out = render(&st, 160, 32);
        let line = out.lines().nth(2).unwrap();
        assert!(line.contains("checks 99.75% of 4,000"), "{line}");
    }

    /// The fixed state at 100×32: the header's numbers, both charts with their axes,
    /// the per-endpoint table with percentiles so far, the status codes and error
    /// kinds, and the key line are all on screen.
    #[test]
    fn renders_every_part() {
        let st = fixed();
        let s = render(&st, 100, 32);
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines[0]
            .starts_with("latscope load http://127.0.0.1:8080/ — closed model, 16 connections"));
        assert!(lines[1].contains("12s / 30s"), "{}", lines[1]);
        assert!(lines[1].contains('━'), "progress bar: {}", lines[1]);
        for want in [
            "req/s 5,100",
            "requests 54,600",
            "errors 25 (0.05%)",
            "VUs 16",
            "conns 16",
            "latscope CPU 131% of 200%",
        ] {
            assert!(lines[2].contains(want), "{want:?} in {}", lines[2]);
        }
        assert!(s.contains("latency per second"));
        assert!(s.contains("━ p99"));
        assert!(s.contains("errors/s"));
        assert!(s.contains("0s") && s.contains("30s"), "time axis:\n{s}");
        // Braille points are drawn.
        assert!(s.chars().any(|c| ('\u{2801}'..='\u{28ff}').contains(&c)));
        let row = lines
            .iter()
            .find(|l| l.contains("checkout"))
            .expect("checkout row");
        assert!(row.contains("9,100"), "{row}");
        assert!(row.contains("13.") && row.contains(" ms"), "{row}");
        let search = lines.iter().find(|l| l.contains("search")).unwrap();
        assert!(
            search.contains("18,200") && search.trim_end().ends_with("│"),
            "{search}"
        );
        assert!(s.contains("503  25"));
        assert!(s.contains("timeout  25"));
        assert!(lines[31].contains("q stop and keep the run"));
    }

    /// The y labels of both charts have one width, so their time axes line up.
    #[test]
    fn charts_share_the_time_axis() {
        let st = fixed();
        let s = render(&st, 100, 32);
        // Chart rows: a border, the padded y label, then the y axis.
        let axis_cols: Vec<usize> = s
            .lines()
            .filter(|l| l.starts_with('│') && (l.contains("ms│") || l.contains("k│")))
            .filter_map(|l| l.chars().skip(1).position(|c| c == '│'))
            .collect();
        assert!(axis_cols.len() >= 3, "{s}");
        assert!(
            axis_cols.iter().all(|c| *c == axis_cols[0]),
            "{axis_cols:?}\n{s}"
        );
    }

    /// The open model: the header shows the target rate against the achieved one and
    /// the dropped arrivals; count mode measures progress in requests.
    #[test]
    fn renders_the_open_model_and_count_mode() {
        use crate::load::stages::Ramp;
        let mut st = fixed();
        st.setup.target = Target::Rate(Ramp::constant(6000.0, None));
        st.dropped = 42;
        let s = render(&st, 120, 32);
        let line = s.lines().nth(2).unwrap();
        assert!(line.contains("rate 6.0k → 5,100 req/s"), "{line}");
        assert!(line.contains("dropped 42"), "{line}");
        st.setup.count = Some(100_000);
        let s = render(&st, 120, 32);
        assert!(s.contains("54,600 / 100,000 requests"), "{s}");
    }

    /// Paused, help open, max hidden, one endpoint, a small terminal: the overlay and
    /// the pause mark show, the totals replace the table, and nothing panics.
    #[test]
    fn renders_switches_and_small_terminals() {
        let mut st = fixed();
        st.toggle_pause();
        st.keys.show_max = false;
        st.keys.stopping = true;
        let s = render(&st, 100, 32);
        assert!(s.contains("paused (p resumes)"));
        assert!(!s.contains("━ max"));
        assert!(s.contains("stopping"));
        st.keys.help = true;
        let s = render(&st, 100, 32);
        assert!(s.contains("pause / resume the chart"));
        st.endpoints.truncate(1);
        st.keys.help = false;
        let s = render(&st, 100, 32);
        assert!(s.contains("latency so far") && !s.contains("endpoints so far"));
        for (w, h) in [(20, 5), (1, 1), (80, 24), (300, 80)] {
            render(&st, w, h);
        }
    }
}
