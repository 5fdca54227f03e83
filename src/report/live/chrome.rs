//! The widgets every live view shares: the header's title line and progress bar,
//! labelled numbers, charts over time with a legend in their title (all charts of a
//! view padded to one y-label width, so their time axes line up), the time window
//! the charts show (whole run, or scrolling, or paused), the key line and the help
//! overlay. Draws only; never measures.

use std::time::Duration;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Clear, Dataset, GraphType, LineGauge, Paragraph};
use ratatui::Frame;

use super::Keys;

/// Seconds the charts show before they scroll.
pub const WINDOW_S: u32 = 120;
/// Width every y-axis label is padded to, so a view's charts share one time axis.
const Y_LABEL_WIDTH: usize = 8;

/// 1234567 → `1,234,567`.
pub fn group(n: u64) -> String {
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

/// A rate or count for an axis label: 950, 12.3k, 4.1M.
pub fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// `name value` for the header's numbers line: the name dim, the value bold.
pub fn label(name: &str, value: String) -> Vec<Span<'static>> {
    vec![
        Span::styled(format!("{name} "), Style::new().fg(Color::DarkGray)),
        Span::styled(value, Style::new().add_modifier(Modifier::BOLD)),
        Span::raw("   "),
    ]
}

/// The header's first line: `title — detail`, and "stopping…" once the run winds
/// down.
pub fn title_line(frame: &mut Frame, area: Rect, title: &str, detail: &str, stopping: bool) {
    let mut spans = vec![
        Span::styled(title.to_string(), Style::new().add_modifier(Modifier::BOLD)),
        Span::raw(format!(" — {detail}")),
    ];
    if stopping {
        spans.push(Span::styled(
            "   stopping…",
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The progress bar: `ratio` of the run done, `text` ("12s / 30s") at its left.
pub fn progress_bar(frame: &mut Frame, area: Rect, ratio: f64, text: String) {
    frame.render_widget(
        LineGauge::default()
            .ratio(ratio.clamp(0.0, 1.0))
            .filled_symbol("━")
            .unfilled_symbol("─")
            .label(format!("{text:<24}"))
            .filled_style(Style::new().fg(Color::Cyan))
            .unfilled_style(Style::new().fg(Color::DarkGray)),
        area,
    );
}

/// The progress of a timed run: elapsed of planned seconds (`12s / 30s`).
pub fn timed(elapsed: Duration, planned: Option<Duration>) -> (f64, String) {
    let secs = elapsed.as_secs();
    match planned {
        Some(d) if !d.is_zero() => (
            elapsed.as_secs_f64() / d.as_secs_f64(),
            format!("{secs}s / {}s", d.as_secs()),
        ),
        _ => (0.0, format!("{secs}s")),
    }
}

/// The x range the charts show, seconds: the whole `planned` run when it fits in
/// `window` seconds, else the last `window` seconds up to `end` (the newest second,
/// or where the chart was paused).
pub fn x_range(planned: Option<Duration>, end: u32, window: u32) -> (u32, u32) {
    let end = end + 1;
    let planned = planned.map(|d| d.as_secs_f64().ceil() as u32).unwrap_or(0);
    if planned > 0 && planned <= window && end <= planned {
        return (0, planned);
    }
    if end <= window {
        return (0, window.min(end.max(planned).max(10)));
    }
    (end - window, end)
}

/// The items of `points` (in order of their second, `t`) inside `range` (end
/// excluded).
pub fn visible<P>(points: &[P], range: (u32, u32), t: impl Fn(&P) -> u32) -> &[P] {
    let a = points.partition_point(|p| t(p) < range.0);
    let b = points.partition_point(|p| t(p) < range.1);
    &points[a..b]
}

/// One line (or bars) of a chart.
pub struct Series<'a> {
    /// Its legend in the chart's title: `━ p50`, `▮ errors/s`.
    pub legend: &'a str,
    pub color: Color,
    /// Bars from the axis (errors), not a line.
    pub bars: bool,
    /// (second, value) points.
    pub data: &'a [(f64, f64)],
}

impl<'a> Series<'a> {
    /// A line.
    pub fn line(legend: &'a str, color: Color, data: &'a [(f64, f64)]) -> Series<'a> {
        Series {
            legend,
            color,
            bars: false,
            data,
        }
    }
}

/// How a chart is framed.
pub struct ChartFrame {
    /// The title before the legend (" latency per second ").
    pub title: String,
    /// The seconds shown.
    pub range: (u32, u32),
    /// The y axis: 0 up to `top`, with these labels (bottom first).
    pub top: f64,
    pub y_labels: Vec<String>,
    /// Label the time axis (the lowest chart does).
    pub time_labels: bool,
    /// Mark the chart paused.
    pub paused: bool,
}

/// Draws a chart over time: `series` in legend order (the first drawn on top).
pub fn chart(frame: &mut Frame, area: Rect, how: ChartFrame, series: &[Series]) {
    let mut title = vec![Span::raw(how.title.clone())];
    for s in series {
        title.push(Span::styled(
            format!("{} ", s.legend),
            Style::new().fg(s.color),
        ));
    }
    let mut block = Block::bordered().title(Line::from(title));
    if how.paused {
        block = block.title_top(
            Line::from(Span::styled(
                " paused (p resumes) ",
                Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            ))
            .right_aligned(),
        );
    }
    let sets: Vec<Dataset> = series
        .iter()
        .rev()
        .map(|s| {
            let (marker, kind) = if s.bars {
                (Marker::Block, GraphType::Bar)
            } else {
                (Marker::Braille, GraphType::Line)
            };
            Dataset::default()
                .marker(marker)
                .graph_type(kind)
                .style(Style::new().fg(s.color))
                .data(s.data)
        })
        .collect();
    let (a, b) = how.range;
    let mut x = Axis::default()
        .bounds([a as f64, b as f64])
        .style(Style::new().fg(Color::DarkGray));
    if how.time_labels {
        x = x.labels([
            format!("{a}s"),
            format!("{}s", (a + b) / 2),
            format!("{b}s"),
        ]);
    }
    let y = Axis::default()
        .bounds([0.0, how.top])
        .style(Style::new().fg(Color::DarkGray))
        .labels(
            how.y_labels
                .into_iter()
                .map(|l| format!("{l:>Y_LABEL_WIDTH$}")),
        );
    frame.render_widget(Chart::new(sets).block(block).x_axis(x).y_axis(y), area);
}

/// The key line at the bottom: the keys every view has, and "stopping" once it is.
pub fn key_line(frame: &mut Frame, area: Rect, keys: &Keys) {
    let key = |k: &'static str| Span::styled(k, Style::new().add_modifier(Modifier::BOLD));
    let dim = |t: &'static str| Span::styled(t, Style::new().fg(Color::DarkGray));
    let mut spans = vec![
        Span::raw(" "),
        key("q"),
        dim(" stop and keep the run   "),
        key("p"),
        dim(if keys.paused_at.is_some() {
            " resume chart   "
        } else {
            " pause chart   "
        }),
        key("m"),
        dim(if keys.show_max {
            " hide max   "
        } else {
            " show max   "
        }),
        key("?"),
        dim(" help"),
    ];
    if keys.stopping {
        spans.push(Span::styled(
            "   stopping: the summary follows",
            Style::new().fg(Color::Yellow),
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The help overlay: the keys, then `about` (what the view's numbers are).
pub fn help(frame: &mut Frame, area: Rect, about: &[&str]) {
    let mut text = vec![
        Line::from("q, Ctrl-C  stop the run now and keep it: the summary is"),
        Line::from("           printed and the run saved, as Ctrl-C always does"),
        Line::from("           (a second Ctrl-C quits at once)"),
        Line::from("p          pause / resume the chart's scroll"),
        Line::from("m          hide / show the max line"),
        Line::from("?, Esc     close this help"),
        Line::from(""),
    ];
    text.extend(about.iter().map(|l| Line::from(l.to_string())));
    let w = 64.min(area.width);
    let h = (text.len() as u16 + 2).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(text).block(Block::bordered().title(" keys ")),
        r,
    );
}

/// The header's three rows, the key line at the bottom, and the rows between them
/// split as `middle` asks: (title, bar, numbers, middle areas, keys).
pub fn frame_areas(
    area: Rect,
    middle: &[Constraint],
) -> (Rect, Rect, Rect, std::rc::Rc<[Rect]>, Rect) {
    let [head, body, keys] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    let [title, bar, numbers] = Layout::vertical([Constraint::Length(1); 3]).areas(head);
    let parts = Layout::vertical(middle.to_vec()).split(body);
    (title, bar, numbers, parts, keys)
}

#[cfg(test)]
pub(crate) mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use super::*;

    /// What `draw` puts on a `w`×`h` screen, as text lines.
    pub(crate) fn render(w: u16, h: u16, draw: impl FnOnce(&mut Frame)) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(draw).unwrap();
        let buf = t.backend().buffer().clone();
        let mut out = String::new();
        for y in 0..buf.area.height {
            for x in 0..buf.area.width {
                out.push_str(buf[(x, y)].symbol());
            }
            out.push('\n');
        }
        out
    }

    /// Thousands are grouped; axis numbers shorten.
    #[test]
    fn numbers_read_well() {
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(group(12), "12");
        assert_eq!(short(950.0), "950");
        assert_eq!(short(12_300.0), "12k");
        assert_eq!(short(4_100_000.0), "4.1M");
    }

    /// A run that fits the window is shown whole; a longer one scrolls.
    #[test]
    fn the_window_fits_or_scrolls() {
        let d = |s| Some(Duration::from_secs(s));
        assert_eq!(x_range(d(30), 11, 120), (0, 30));
        assert_eq!(x_range(d(600), 99, 60), (40, 100));
        assert_eq!(x_range(None, 3, 60), (0, 10));
        let pts = [0u32, 1, 5, 9];
        assert_eq!(visible(&pts, (1, 9), |p| *p), &[1, 5]);
    }
}
