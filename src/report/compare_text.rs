//! The terminal rendering of a [`Comparison`]: first each run's verdict against the
//! first (what changed, by how much, significant or not, and which findings came and
//! went), then one table per section with the rows that matter — each run after the
//! first with its ratio to the first and the verdict of the significance test. `--all`
//! shows every row, `--explain` the legend of the tests.

use super::compare::{Comparison, Row, Section, Test};
use super::compare_diagnose::{FindingRef, FindingsChange};
use super::compare_verdict::{changes, hidden, shown, Direction};
use super::table::{Align, Table};
use crate::units::fmt_ms;

/// Run letters: A is the baseline.
pub fn letter(i: usize) -> String {
    let letters = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    match letters.get(i) {
        Some(c) => (*c as char).to_string(),
        None => format!("R{}", i + 1),
    }
}

/// `s` without the sign of a number that rounded to zero ("-0", "-0.00 ms" → "0",
/// "0.00 ms"): negative zero means nothing to a reader.
pub fn no_negative_zero(s: String) -> String {
    match s.strip_prefix('-') {
        Some(rest)
            if rest
                .split(' ')
                .next()
                .is_some_and(|n| n.chars().all(|c| c == '0' || c == '.')) =>
        {
            rest.to_string()
        }
        _ => s,
    }
}

/// A value in its unit, for people.
pub fn fmt_value(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    no_negative_zero(fmt_unsigned(v, unit))
}

fn fmt_unsigned(v: f64, unit: &str) -> String {
    match unit {
        "ms" => fmt_ms(v),
        "µs" => {
            if v >= 1000.0 {
                fmt_ms(v / 1000.0)
            } else if v >= 100.0 {
                format!("{v:.0} µs")
            } else {
                format!("{v:.1} µs")
            }
        }
        // A ratio of 0 to 1 (a cache's hit ratio), shown as a percentage.
        "share" => {
            let p = 100.0 * v;
            if p == 0.0 || p >= 10.0 {
                format!("{p:.0} %")
            } else {
                format!("{p:.1} %")
            }
        }
        "" => {
            if v.fract() == 0.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.2}")
            }
        }
        u => {
            if v >= 100.0 {
                format!("{v:.0} {u}")
            } else {
                format!("{v:.1} {u}")
            }
        }
    }
}

/// A ratio as `×2.09`.
pub fn fmt_ratio(r: f64) -> String {
    let r = r + 0.0;
    if r > 0.0 && r < 0.01 {
        // ×0.00 would hide how large the drop is.
        return format!("×1/{:.0}", 1.0 / r);
    }
    if r >= 100.0 {
        format!("×{r:.0}")
    } else if r >= 10.0 {
        format!("×{r:.1}")
    } else {
        format!("×{r:.2}")
    }
}

/// A p value as `p=0.031` or `p<0.001`.
pub fn fmt_p(p: f64) -> String {
    if p < 0.001 {
        "p<0.001".into()
    } else {
        format!("p={p:.3}")
    }
}

/// A test's verdict: `yes p<0.001`, `no p=0.41`, `can't tell p=0.56` (not
/// significant beside a 2× change), `too few blocks 3 vs 3`; tail rows add their
/// exceedance counts (`10→40 over`: values over the threshold in the baseline and in
/// this run).
pub fn fmt_test(t: &Test) -> String {
    let over = match (t.over, t.of) {
        (Some(o), Some(n)) => format!(" ({}→{} over)", share(o[0], n[0]), share(o[1], n[1])),
        _ => String::new(),
    };
    match (t.significant, t.p_value) {
        (Some(true), Some(p)) => format!("yes {}{over}", fmt_p(p)),
        (Some(false), Some(p)) if t.negligible => format!("no, too small ({})", fmt_p(p)),
        (Some(false), Some(p)) if t.against_test => format!("no, moved against ({})", fmt_p(p)),
        (Some(false), Some(p)) if t.inconclusive => format!("can't tell {}{over}", fmt_p(p)),
        (Some(false), Some(p)) => format!("no {}{over}", fmt_p(p)),
        _ if t.over.is_some() => format!("too few to judge{over}"),
        _ => format!("too few blocks {} vs {}", t.n[0], t.n[1]),
    }
}

/// `k` of `n` as a share for people: "46 %", "0.13 %", "0.0040 %".
fn share(k: u64, n: u64) -> String {
    let p = 100.0 * k as f64 / n.max(1) as f64;
    if k == 0 || p >= 10.0 {
        format!("{p:.0} %")
    } else if p >= 1.0 {
        format!("{p:.1} %")
    } else {
        // Two significant digits.
        let digits = (1.0 - p.log10().floor()).max(0.0) as usize;
        format!("{p:.digits$} %")
    }
}

/// A section as a header and rows of text: the metric, the baseline's value, then
/// for each other run that has the section its value, ratio and verdict.
pub fn grid(s: &Section) -> (Vec<String>, Vec<Vec<String>>) {
    grid_of(s, |_| true)
}

/// [`grid`] of the rows `keep` keeps.
fn grid_of(s: &Section, keep: impl Fn(&Row) -> bool) -> (Vec<String>, Vec<Vec<String>>) {
    let base = letter(s.baseline);
    let mut header = vec!["metric".to_string(), base.clone()];
    for &i in s.present.iter().filter(|&&i| i != s.baseline) {
        let l = letter(i);
        header.push(l.clone());
        header.push(format!("{l}/{base}"));
        header.push(format!("{l} differs?"));
    }
    let rows = s
        .rows
        .iter()
        .filter(|row| keep(row))
        .map(|row| {
            let mut cells = vec![row.metric.clone()];
            for &i in &s.present {
                let v = row.values.get(i).copied().flatten();
                cells.push(v.map(|v| fmt_value(v, &row.unit)).unwrap_or("-".into()));
                if i != s.baseline {
                    cells.push(row.ratios[i].map(fmt_ratio).unwrap_or_default());
                    cells.push(row.tests[i].as_ref().map(fmt_test).unwrap_or_default());
                }
            }
            cells
        })
        .collect();
    (header, rows)
}

/// What the text shows beyond the verdict and the rows that matter.
#[derive(Debug, Clone, Copy, Default)]
pub struct View {
    /// Every row, not only those that matter (`--all`).
    pub all: bool,
    /// The legend of the columns and tests (`--explain`).
    pub explain: bool,
}

/// A run as the verdict names it: `B (cached)`.
fn run_name(c: &Comparison, i: usize) -> String {
    match c.runs.get(i).and_then(|r| r.label.as_deref()) {
        Some(l) if !l.is_empty() => format!("{} ({l})", letter(i)),
        _ => letter(i),
    }
}

/// The changes of at most this many rows lead the output; the tables hold the rest.
const HEADLINE: usize = 8;

/// Run `i`'s verdict against the first run: its largest changes that matter, each
/// with its direction, values, ratio and test, then its findings in one line.
pub fn verdict(c: &Comparison, i: usize) -> String {
    let list = changes(c, i);
    let mut out = String::new();
    let base = run_name(c, 0);
    if list.is_empty() {
        out.push_str(&format!(
            "{} against {base}: no change that matters (nothing significant, nothing \
             moved 2× or more)\n",
            run_name(c, i)
        ));
    } else {
        let better = list
            .iter()
            .filter(|ch| ch.direction == Direction::Better)
            .count();
        let worse = list
            .iter()
            .filter(|ch| ch.direction == Direction::Worse)
            .count();
        let significant = list
            .iter()
            .filter(|ch| test_of(ch.row, i).is_some_and(|t| t.significant == Some(true)))
            .count();
        out.push_str(&format!(
            "{} against {base}: {} {} changed ({better} better, {worse} worse; {significant} \
             significant by the test)\n",
            run_name(c, i),
            list.len(),
            if list.len() == 1 { "row" } else { "rows" },
        ));
        let mut t = Table::new(["", "what", "from → to", "ratio", "significant?"]);
        for k in 1..5 {
            t = t.align(k, if k == 3 { Align::Right } else { Align::Left });
        }
        for ch in list.iter().take(HEADLINE) {
            let s = ch.section;
            let v = |k: usize| {
                ch.row
                    .values
                    .get(k)
                    .copied()
                    .flatten()
                    .map_or("-".to_string(), |v| fmt_value(v, &ch.row.unit))
            };
            t.row([
                match ch.direction {
                    Direction::Better => "better",
                    Direction::Worse => "worse",
                    Direction::Changed => "changed",
                }
                .to_string(),
                format!("{}: {}", s.name, ch.row.metric),
                format!("{} → {}", v(s.baseline), v(i)),
                ch.row
                    .ratios
                    .get(i)
                    .copied()
                    .flatten()
                    .map(fmt_ratio)
                    .unwrap_or_default(),
                test_of(ch.row, i).map_or("no test".to_string(), fmt_test),
            ]);
        }
        out.push_str(&t.render(2));
        if list.len() > HEADLINE {
            out.push_str(&format!(
                "  … and {} more in the tables below\n",
                list.len() - HEADLINE
            ));
        }
    }
    if let Some(ch) = c.findings.iter().find(|f| f.run == i) {
        let ids = |l: &[FindingRef]| {
            if l.is_empty() {
                "none".to_string()
            } else {
                l.iter()
                    .map(|f| f.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        out.push_str(&format!(
            "  findings: went away: {}; appeared: {}; still there: {}\n",
            ids(&ch.gone),
            ids(&ch.appeared),
            ch.kept.len()
        ));
    }
    out
}

fn test_of(row: &Row, i: usize) -> Option<&Test> {
    row.tests.get(i).and_then(Option::as_ref)
}

/// Renders the comparison for the terminal: the verdicts, the runs, the tables (the
/// rows that matter, or all with `view.all`), the findings, the legend with
/// `view.explain`.
pub fn render(c: &Comparison, view: View) -> String {
    let mut out = String::new();
    for i in 1..c.runs.len() {
        out.push_str(&verdict(c, i));
    }
    out.push_str("\nRuns:\n");
    let mut t = Table::new(["", "id", "label", "kind", "target", "when (UTC)", "host"]);
    for i in 1..7 {
        t = t.align(i, Align::Left);
    }
    for (i, r) in c.runs.iter().enumerate() {
        t.row([
            letter(i),
            r.id.clone(),
            r.label.clone().unwrap_or_default(),
            r.kind.clone(),
            r.target.clone(),
            crate::units::utc(r.started_at_ms),
            match &r.merged {
                Some(m) => format!("merged: {m}"),
                None => r.hostname.clone(),
            },
        ]);
    }
    out.push_str(&t.render(2));
    if c.sections.is_empty() {
        out.push_str("\nThese runs have no measurement in common to compare.\n");
    }
    for s in &c.sections {
        if !view.all && !s.rows.iter().any(shown) {
            continue;
        }
        out.push('\n');
        out.push_str(&s.name);
        out.push('\n');
        let (header, rows) = grid_of(s, |r| view.all || shown(r));
        let mut t = Table::new(header);
        for k in 1..s.present.len() {
            t = t.align(1 + 3 * k, Align::Left);
        }
        for r in rows {
            t.row(r);
        }
        out.push_str(&t.render(2));
    }
    for ch in &c.findings {
        out.push('\n');
        out.push_str(&findings_change(ch));
    }
    out.push('\n');
    let (hid, total) = hidden(c);
    if !view.all && hid > 0 {
        out.push_str(&format!(
            "{hid} of {total} rows hidden: not significant and under 2× (--all shows them).\n"
        ));
    }
    if view.explain {
        out.push_str(&legend(c));
    } else {
        out.push_str("--explain says how the rows are tested and what the columns mean.\n");
    }
    out
}

/// The legend of the columns and tests (`--explain`).
pub fn legend(c: &Comparison) -> String {
    wrap(
        &format!(
            "Ratios and significance are against the first run in each table, A unless A \
             lacks that measurement. Differs?: {}; yes when p < {}, the values differ by at \
             least 5 % (and 0.1 ms, or 5 µs for disk latencies) and the row moved the way \
             the test found the blocks shift: smaller differences are called too small, and \
             a row that moved the other way than a significant shift 'moved against'. Tail \
             rows (p99 and up) of load and disk runs are tested on exceedances instead: the \
             share of requests or I/Os of each run over the midpoint of their values (A→B over), \
             against an even split by run size, widened when they bunch into seconds. can't \
             tell: not significant although the value moved 2× or more — not a 'no'. too \
             few blocks: fewer than {} on a side; too few to judge: fewer than 6 over the \
             threshold; blank: no per-second data or samples for that metric (a cache hit \
             ratio, a flag, a count). Shown by default: rows whose change is significant, \
             2× or more, or — without a test — at least 10 % (and 0.1 ms, 5 µs, or one \
             point of a ratio).",
            c.test, c.alpha, c.min_blocks
        ),
        88,
    )
}

/// Which findings appeared, went away or stayed in one run against the baseline.
pub fn findings_change(ch: &FindingsChange) -> String {
    let mut out = format!(
        "findings, {} against {}:\n",
        letter(ch.run),
        letter(ch.baseline)
    );
    let line = |f: &FindingRef| {
        let was = f
            .was
            .as_ref()
            .map(|w| format!(" (was {})", w.to_uppercase()))
            .unwrap_or_default();
        format!(
            "    {:<5} {:<22} {}{was}\n",
            f.severity.to_uppercase(),
            f.id,
            f.title
        )
    };
    for (what, list) in [
        ("appeared", &ch.appeared),
        ("went away", &ch.gone),
        ("still there", &ch.kept),
    ] {
        if list.is_empty() {
            out.push_str(&format!("  {what}: none\n"));
            continue;
        }
        out.push_str(&format!("  {what}:\n"));
        for f in list.iter() {
            out.push_str(&line(f));
        }
    }
    out
}

/// Wraps text at `width` columns on spaces.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}
