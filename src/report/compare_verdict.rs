//! What `latscope compare` leads with (issue 37, item 3): which rows matter, and per
//! run a verdict built from them — what changed, by how much, better or worse, and
//! whether the test calls it significant — before any table.
//!
//! A row matters for a run when its test calls the change significant, when the value
//! moved 2× or more and the test cannot tell ("can't tell" is not "no"), or, for rows
//! no test covers (a hit ratio, a flag, a count, a knee), when the value clearly moved
//! (10 % and the unit's floor: 0.1 ms, 5 µs, one point of a ratio) or appeared or went
//! away. Everything else — sub-millisecond loopback noise above all — is hidden from
//! the text unless `--all`. This module judges; [`super::compare_text`] prints.

use super::compare::{large_ratio, Better, Comparison, Row, Section, Test};

/// Whether run `i`'s value of a row (`values`, its `test` against the section's
/// `baseline`) differs enough to show by default. The baseline itself never does.
pub fn matters(
    values: &[Option<f64>],
    test: Option<&Test>,
    unit: &str,
    baseline: usize,
    i: usize,
) -> bool {
    if i == baseline {
        return false;
    }
    let (a, b) = (
        values.get(baseline).copied().flatten(),
        values.get(i).copied().flatten(),
    );
    match test {
        // A change under the floor (0.1 ms, 5 µs, 5 %) is noise even at 2× (30 µs →
        // 70 µs of a loopback connect): "can't tell" matters only above it.
        Some(t) => {
            t.significant == Some(true)
                || (!t.negligible
                    && (t.inconclusive || (t.significant.is_none() && large_ratio(a, b))))
        }
        None => match (a, b) {
            (Some(a), Some(b)) => moved(a, b, unit),
            (None, None) => false,
            // A knee, a capacity, a cache signal that one run has and the other not.
            _ => true,
        },
    }
}

/// An untested value that clearly moved: by the unit's floor and 10 % at least.
fn moved(a: f64, b: f64, unit: &str) -> bool {
    let floor = match unit {
        "ms" => 0.1,
        "µs" | "us" => 5.0,
        "share" => 0.01,
        _ => 0.0,
    };
    let d = (a - b).abs();
    d > 0.0 && d >= floor && d >= 0.10 * a.abs().max(b.abs())
}

/// Whether a row is shown by default: it matters for at least one run.
pub fn shown(row: &Row) -> bool {
    row.notable.iter().any(|n| *n)
}

/// Which way a change went for the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Better,
    Worse,
    /// Appeared or went away (no value on one side), or a row with no better side.
    Changed,
}

/// One change in a run's verdict.
#[derive(Debug, Clone)]
pub struct Change<'a> {
    pub section: &'a Section,
    pub row: &'a Row,
    pub direction: Direction,
    /// How large, for ordering: |ln(b/a)|, infinite when one side is zero or missing.
    pub size: f64,
}

/// Run `i`'s changes that matter, largest first.
pub fn changes(c: &Comparison, i: usize) -> Vec<Change<'_>> {
    let mut out = Vec::new();
    for s in &c.sections {
        if s.baseline == i || !s.present.contains(&i) {
            continue;
        }
        for row in &s.rows {
            if !row.notable.get(i).copied().unwrap_or(false) {
                continue;
            }
            let a = row.values.get(s.baseline).copied().flatten();
            let b = row.values.get(i).copied().flatten();
            let (direction, size) = match (a, b) {
                (Some(a), Some(b)) => {
                    let up = b > a;
                    let better = match row.better {
                        Better::Higher => up,
                        Better::Lower => !up,
                    };
                    let size = if a > 0.0 && b > 0.0 {
                        (b / a).ln().abs()
                    } else {
                        f64::INFINITY
                    };
                    let d = if better {
                        Direction::Better
                    } else {
                        Direction::Worse
                    };
                    (d, size)
                }
                _ => (Direction::Changed, f64::INFINITY),
            };
            out.push(Change {
                section: s,
                row,
                direction,
                size,
            });
        }
    }
    // Largest first; equal sizes (two zero-to-something rows) keep the tables' order.
    out.sort_by(|x, y| y.size.total_cmp(&x.size));
    out
}

/// Rows hidden by default, of all rows.
pub fn hidden(c: &Comparison) -> (usize, usize) {
    let all: Vec<&Row> = c.sections.iter().flat_map(|s| s.rows.iter()).collect();
    let hidden = all.iter().filter(|r| !shown(r)).count();
    (hidden, all.len())
}
