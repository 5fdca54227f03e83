//! The capacity chart of a `--find-max` run: a latency percentile against the load
//! level, one line per endpoint with each step marked pass or fail, the objective's
//! limit as a dashed line, and the final bracket (last pass, first fail) shaded.

use plotters::prelude::*;

use super::{err, ChartError, PALETTE, WIDTH};

/// One endpoint's points: (level, latency ms, passed).
#[derive(Debug, Clone)]
pub struct LevelSeries {
    pub label: String,
    pub points: Vec<(f64, f64, bool)>,
}

/// What the capacity chart draws.
#[derive(Debug, Clone)]
pub struct CapacityChart {
    /// "p99", "p90", …: the percentile drawn.
    pub metric: String,
    /// "req/s" or "connections".
    pub unit: String,
    pub series: Vec<LevelSeries>,
    /// Latency objectives on the drawn percentile: (label, limit ms).
    pub objectives: Vec<(String, f64)>,
    /// The last pass and the first fail.
    pub bracket: (Option<f64>, Option<f64>),
}

const PASS: RGBColor = RGBColor(44, 160, 44);
const FAIL: RGBColor = RGBColor(214, 39, 40);

/// Draws the chart; the y axis is logarithmic when the values span more than two
/// decades (a hockey stick from 5 ms to 2 s), and says so.
pub fn capacity(c: &CapacityChart) -> Result<String, ChartError> {
    let values = || {
        c.series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(c.objectives.iter().map(|o| o.1))
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    let (lo, hi) = (
        values().fold(f64::MAX, f64::min),
        values().fold(0.0, f64::max),
    );
    let log = hi > 0.0 && hi / lo > 100.0;
    let map = |v: f64| if log { v.max(lo).log10() } else { v };
    let y_range = if log {
        lo.log10().floor()..hi.log10() + 0.1
    } else {
        0.0..(hi * 1.15).max(1.0)
    };
    let x_max = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.05;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 360)).into_drawing_area();
        root.fill(&WHITE).map_err(err("capacity"))?;
        let caption = format!("{} against load", c.metric);
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 16))
            .margin(8)
            .margin_right(28)
            .x_label_area_size(34)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..x_max, y_range.clone())
            .map_err(err("capacity"))?;
        let y_fmt = |y: &f64| {
            let v = if log { 10f64.powf(*y) } else { *y };
            crate::units::fmt_ms(v)
        };
        chart
            .configure_mesh()
            .x_desc(format!("load ({})", c.unit))
            .y_desc(if log {
                format!("{} (log scale)", c.metric)
            } else {
                c.metric.clone()
            })
            .y_label_formatter(&y_fmt)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(err("capacity"))?;
        // The bracket, shaded, with its two ends.
        if let (Some(p), Some(f)) = c.bracket {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(p, y_range.start), (f, y_range.end)],
                    RGBColor(255, 235, 150).mix(0.5).filled(),
                )))
                .map_err(err("capacity"))?
                .label(format!("bracket {} – {}", fmt(p), fmt(f)))
                .legend(|(x, y)| {
                    Rectangle::new(
                        [(x, y - 5), (x + 14, y + 5)],
                        RGBColor(255, 220, 120).filled(),
                    )
                });
        }
        for (edge, color) in [(c.bracket.0, PASS), (c.bracket.1, FAIL)] {
            if let Some(x) = edge {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(x, y_range.start), (x, y_range.end)],
                        color.stroke_width(1),
                    )))
                    .map_err(err("capacity"))?;
            }
        }
        for (label, limit) in &c.objectives {
            let y = map(*limit);
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(0.0, y), (x_max, y)],
                    8,
                    5,
                    BLACK.stroke_width(2),
                ))
                .map_err(err("capacity"))?
                .label(format!("objective {label}"))
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], BLACK.stroke_width(2))
                });
        }
        for (i, s) in c.series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let mut pts = s.points.clone();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|p| (p.0, map(p.1))),
                    color.stroke_width(2),
                ))
                .map_err(err("capacity"))?
                .label(s.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
                });
            chart
                .draw_series(pts.iter().map(|p| {
                    let c = if p.2 { PASS } else { FAIL };
                    Circle::new((p.0, map(p.1)), 4, c.filled())
                }))
                .map_err(err("capacity"))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .draw()
            .map_err(err("capacity"))?;
        root.present().map_err(err("capacity"))?;
    }
    Ok(svg)
}

fn fmt(v: f64) -> String {
    crate::load::steps::fmt_level(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chart draws the endpoint lines, the objective and the bracket.
    #[test]
    fn draws_objective_and_bracket() {
        let svg = capacity(&CapacityChart {
            metric: "p99".into(),
            unit: "req/s".into(),
            series: vec![LevelSeries {
                label: "/search".into(),
                points: vec![
                    (50.0, 5.0, true),
                    (200.0, 30.0, true),
                    (400.0, 1600.0, false),
                ],
            }],
            objectives: vec![("p99<100ms".into(), 100.0)],
            bracket: (Some(200.0), Some(210.0)),
        })
        .unwrap();
        assert!(svg.contains("objective p99&lt;100ms"), "{svg}");
        assert!(svg.contains("bracket 200 – 210"));
        assert!(svg.contains("/search") && svg.contains("log scale"));
    }
}
