//! The report's charts, drawn by `plotters` into SVG strings that the HTML report
//! inlines (no scripts, no fonts to load, no network): time panels on one shared
//! time axis (the Grafana panel of DESIGN.md's story 5), percentile distributions on
//! a log "nines" axis (HdrHistogram style), and httpstat-style phase bars.
//!
//! Chart text (run labels) is escaped by plotters' SVG backend.

use plotters::coord::Shift;
use plotters::prelude::*;

mod capacity;
pub use capacity::{capacity, CapacityChart, LevelSeries};

/// A chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw the {chart} chart: {reason}")]
pub struct ChartError {
    chart: &'static str,
    reason: String,
}

fn err<E: std::fmt::Debug>(chart: &'static str) -> impl Fn(E) -> ChartError {
    move |e| ChartError {
        chart,
        reason: format!("{e:?}"),
    }
}

/// Colours for runs (overlays) and for lines within one run.
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// The colour of run `i`.
pub fn run_color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub color: RGBColor,
    pub width: u32,
    pub dashed: bool,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// A solid line, 2 px wide.
    pub fn new(label: impl Into<String>, color: RGBColor, points: Vec<(f64, f64)>) -> Series {
        Series {
            label: label.into(),
            color,
            width: 2,
            dashed: false,
            points,
        }
    }

    /// The same line, dashed.
    pub fn dashed(mut self) -> Series {
        self.dashed = true;
        self
    }
}

/// One panel of a time chart: a y axis of its own, the shared time axis.
#[derive(Debug, Clone)]
pub struct Panel {
    pub title: String,
    pub y_desc: String,
    pub series: Vec<Series>,
}

/// Chart width in pixels.
pub const WIDTH: u32 = 960;
const PANEL_HEIGHT: u32 = 210;

fn y_max(series: &[Series]) -> f64 {
    let m = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    if m > 0.0 {
        m * 1.1
    } else {
        1.0
    }
}

/// The y axis of a line chart: linear from 0, or log10 (values are drawn as their
/// logarithm, and labelled back in the unit).
#[derive(Debug, Clone, Copy, PartialEq)]
enum YScale {
    Linear,
    /// log10 from `lo` to `hi` (in log10 units).
    Log {
        lo: f64,
        hi: f64,
    },
}

impl YScale {
    /// Log when the curves span more than two decades (a 1.6 s cold start over
    /// 10 ms samples), so both the bulk and the tail are visible.
    fn for_series(series: &[Series]) -> YScale {
        let vals = || {
            series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.1))
                .filter(|v| v.is_finite() && *v > 0.0)
        };
        let (min, max) = (vals().fold(f64::MAX, f64::min), vals().fold(0.0, f64::max));
        if max > 0.0 && max / min > 100.0 {
            YScale::Log {
                lo: min.log10().floor(),
                hi: max.log10() + 0.1,
            }
        } else {
            YScale::Linear
        }
    }

    fn range(self, series: &[Series]) -> std::ops::Range<f64> {
        match self {
            YScale::Linear => 0f64..y_max(series),
            YScale::Log { lo, hi } => lo..hi,
        }
    }

    /// Where a value is drawn.
    fn map(self, v: f64) -> f64 {
        match self {
            YScale::Linear => v,
            YScale::Log { lo, .. } => {
                if v > 0.0 {
                    v.log10().max(lo)
                } else {
                    lo
                }
            }
        }
    }

    /// A y label: the value in the unit.
    fn label(self, y: f64) -> String {
        let v = match self {
            YScale::Linear => y,
            YScale::Log { .. } => 10f64.powf(y),
        };
        let v = v + 0.0;
        if v.abs() >= 100.0 || v == 0.0 {
            format!("{v:.0}")
        } else if v.abs() >= 1.0 {
            format!("{}", (v * 10.0).round() / 10.0)
        } else {
            format!("{v:.3}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        }
    }
}

/// The x axis of a line chart.
struct XAxis<'a> {
    range: std::ops::Range<f64>,
    desc: &'a str,
    fmt: &'a dyn Fn(&f64) -> String,
    labels: usize,
}

fn draw_lines<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    caption: &str,
    x: XAxis<'_>,
    (y_desc, y_scale): (&str, YScale),
    series: &[Series],
) -> Result<(), String> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 16))
        .margin(8)
        .margin_right(28)
        .x_label_area_size(34)
        .y_label_area_size(64)
        .build_cartesian_2d(x.range, y_scale.range(series))
        .map_err(|e| format!("{e:?}"))?;
    let y_fmt = |y: &f64| y_scale.label(*y);
    chart
        .configure_mesh()
        .x_desc(x.desc)
        .y_desc(y_desc)
        .x_labels(x.labels)
        .x_label_formatter(x.fmt)
        .y_labels(match y_scale {
            // One label a decade: 1, 10, 100, 1000.
            YScale::Log { lo, hi } => (hi - lo).ceil() as usize + 1,
            YScale::Linear => 10,
        })
        .y_label_formatter(&y_fmt)
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(|e| format!("{e:?}"))?;
    for s in series.iter().filter(|s| !s.points.is_empty()) {
        let style = ShapeStyle::from(s.color).stroke_width(s.width);
        let color = s.color;
        let points = s.points.iter().map(|&(x, y)| (x, y_scale.map(y)));
        let anno = if s.dashed {
            chart.draw_series(DashedLineSeries::new(points, 6, 4, style))
        } else {
            chart.draw_series(LineSeries::new(points, style))
        }
        .map_err(|e| format!("{e:?}"))?;
        anno.label(s.label.clone()).legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
        });
    }
    if series.iter().any(|s| !s.points.is_empty()) {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .draw()
            .map_err(|e| format!("{e:?}"))?;
    }
    Ok(())
}

/// Panels stacked on one shared time axis 0 ..= `x_max` seconds.
pub fn time_panels(panels: &[Panel], x_max: f64) -> Result<String, ChartError> {
    let mut svg = String::new();
    let height = PANEL_HEIGHT * panels.len().max(1) as u32;
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err("timeline"))?;
        let areas = root.split_evenly((panels.len().max(1), 1));
        let x_max = if x_max > 0.0 { x_max } else { 1.0 };
        for (panel, area) in panels.iter().zip(&areas) {
            draw_lines(
                area,
                &panel.title,
                XAxis {
                    range: 0f64..x_max,
                    desc: "time (s)",
                    fmt: &|x| format!("{x:.0}"),
                    labels: 12,
                },
                (&panel.y_desc, YScale::Linear),
                &panel.series,
            )
            .map_err(err("timeline"))?;
        }
        root.present().map_err(err("timeline"))?;
    }
    Ok(svg)
}

/// A percentile as people write it, from its "nines": 1 → 90%, 2 → 99%, 3 → 99.9%.
pub fn nines_label(n: f64) -> String {
    if (n - n.round()).abs() > 1e-9 || n < 0.0 {
        return String::new();
    }
    let n = n.round() as i32;
    if n == 0 {
        return "0%".into();
    }
    let pct = 100.0 * (1.0 - 10f64.powi(-n));
    let decimals = (n - 2).max(0) as usize;
    format!("{pct:.decimals$}%")
}

/// Percentile distributions: `curves` hold (nines, value) points where nines =
/// −log10(1 − q). The y axis reaches the largest value; it is a log scale when the
/// values span more than two decades (and then says so).
pub fn nines(curves: &[Series], y_desc: &str, caption: &str) -> Result<String, ChartError> {
    let y_scale = YScale::for_series(curves);
    let y_desc = match y_scale {
        YScale::Linear => y_desc.to_string(),
        YScale::Log { .. } => format!("{y_desc} (log scale)"),
    };
    let mut svg = String::new();
    let x_max = curves
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(1.0, f64::max)
        .ceil();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(err("percentile"))?;
        draw_lines(
            &root,
            caption,
            XAxis {
                range: 0f64..x_max,
                desc: "percentile",
                fmt: &|x| nines_label(*x),
                labels: x_max as usize + 1,
            },
            (&y_desc, y_scale),
            curves,
        )
        .map_err(err("percentile"))?;
        root.present().map_err(err("percentile"))?;
    }
    Ok(svg)
}

/// One stacked bar of request phases (ms), e.g. "fresh p50".
#[derive(Debug, Clone)]
pub struct Bar {
    pub label: String,
    pub segments: Vec<(String, f64)>,
}

/// Horizontal stacked bars of request phases, httpstat style: each phase a colour,
/// bars top to bottom in the given order.
pub fn phase_bars(bars: &[Bar]) -> Result<String, ChartError> {
    let mut svg = String::new();
    let n = bars.len().max(1);
    let x_max = bars
        .iter()
        .map(|b| b.segments.iter().map(|s| s.1.max(0.0)).sum::<f64>())
        .fold(0.0, f64::max);
    // Room on the right for the legend.
    let x_max = if x_max > 0.0 { x_max * 1.3 } else { 1.0 };
    let mut phases: Vec<String> = Vec::new();
    for b in bars {
        for (p, _) in &b.segments {
            if !phases.contains(p) {
                phases.push(p.clone());
            }
        }
    }
    {
        let height = (70 + 46 * n as u32).max(90 + 18 * phases.len() as u32);
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err("phase"))?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Where a request's time goes (ms)", ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(10)
            .build_cartesian_2d(0f64..x_max, 0f64..n as f64)
            .map_err(err("phase"))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc("ms")
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err("phase"))?;
        for (pi, phase) in phases.iter().enumerate() {
            let color = PALETTE[pi % PALETTE.len()];
            let mut rects = Vec::new();
            for (bi, b) in bars.iter().enumerate() {
                let y = (n - 1 - bi) as f64;
                let start: f64 = b
                    .segments
                    .iter()
                    .take_while(|(p, _)| p != phase)
                    .map(|s| s.1.max(0.0))
                    .sum();
                if let Some((_, v)) = b.segments.iter().find(|(p, _)| p == phase) {
                    rects.push(Rectangle::new(
                        [(start, y + 0.1), (start + v.max(0.0), y + 0.55)],
                        color.filled(),
                    ));
                }
            }
            chart
                .draw_series(rects)
                .map_err(err("phase"))?
                .label(phase.clone())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled())
                });
        }
        let text = ("sans-serif", 13).into_font().color(&BLACK);
        chart
            .draw_series(bars.iter().enumerate().map(|(bi, b)| {
                let total: f64 = b.segments.iter().map(|s| s.1.max(0.0)).sum();
                Text::new(
                    format!("{}: {:.2} ms", b.label, total),
                    (0.0, (n - 1 - bi) as f64 + 0.9),
                    text.clone(),
                )
            }))
            .map_err(err("phase"))?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .draw()
            .map_err(err("phase"))?;
        root.present().map_err(err("phase"))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nines_labels() {
        assert_eq!(nines_label(0.0), "0%");
        assert_eq!(nines_label(1.0), "90%");
        assert_eq!(nines_label(2.0), "99%");
        assert_eq!(nines_label(3.0), "99.9%");
        assert_eq!(nines_label(4.0), "99.99%");
        assert_eq!(nines_label(1.5), "");
    }

    /// Charts render to SVG without system fonts, and run labels are escaped.
    #[test]
    fn charts_render_svg_with_escaped_text() {
        let s = Series::new("<b>run</b>", run_color(0), vec![(0.0, 1.0), (1.0, 2.0)]);
        let svg = time_panels(
            &[Panel {
                title: "latency".into(),
                y_desc: "ms".into(),
                series: vec![s.clone(), s.clone().dashed()],
            }],
            10.0,
        )
        .unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("<text"), "{svg}");
        assert!(svg.contains("&lt;b&gt;run") && !svg.contains("<b>"));
        let curve = Series::new("a", run_color(1), vec![(0.0, 1.0), (2.0, 5.0)]);
        let svg = nines(&[curve], "ms", "distribution").unwrap();
        assert!(svg.contains("90%") && svg.contains("99%"), "{svg}");
        let svg = phase_bars(&[Bar {
            label: "fresh p50".into(),
            segments: vec![("dns".into(), 1.0), ("connect".into(), 2.0)],
        }])
        .unwrap();
        assert!(svg.contains("<rect") && svg.contains("fresh p50: 3.00 ms"));
    }
}
