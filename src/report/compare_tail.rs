//! The test behind each row of `latscope compare` ([`test`]), and the tail rows of
//! `latscope compare` (p99, p99.9, p99.99, max of load and disk
//! runs): tested on exceedances, not on per-second percentiles. A 3-second disk run
//! has 3 blocks, too few for any verdict on its p99.99, although every one of its
//! I/Os bears on it. Here both runs' seconds are pooled, the threshold is the pooled
//! percentile (for max: the value with the 10 largest above it), and
//! [`exceedance_test`] asks whether the runs pass it equally often, its variance
//! widened by how much the exceedances bunch into seconds.

use std::rc::Rc;

use hdrhistogram::Histogram;

use super::compare::{large_ratio, moved_with_test, negligible, Metric, Test};
use crate::stats::compare::{exceedance_test, mann_whitney_u, Exceedance, ALPHA};
use crate::stats::histogram::new_histogram;

/// The per-second histograms behind a run's tail rows, shared by its rows.
#[derive(Debug, Clone)]
pub struct TailData {
    /// Each full second's histogram (ns).
    pub seconds: Rc<Vec<Histogram<u64>>>,
    /// The rows' unit in ns (1e6 for ms, 1e3 for µs).
    pub unit_ns: f64,
    /// What the values are, for the basis ("I/Os", "requests").
    pub items: &'static str,
}

/// The quantiles tested on exceedances (q ≥ this); lower ones keep per-second blocks.
pub const TAIL_FROM: f64 = 0.99;

/// The outcome of one tail comparison.
#[derive(Debug, Clone)]
pub struct TailTest {
    pub basis: String,
    /// The threshold, in the row's unit.
    pub threshold: f64,
    pub result: Exceedance,
}

/// Quantile `q` (1.0: max) of all of a run's seconds, ns; `None` when empty.
fn quantile(d: &TailData, q: f64) -> Option<u64> {
    let mut all = new_histogram();
    for h in d.seconds.iter() {
        let _ = all.add(h);
    }
    (!all.is_empty()).then(|| {
        if q >= 1.0 {
            all.max()
        } else {
            all.value_at_quantile(q)
        }
    })
}

/// Tests quantile `q` (1.0: max) of `a` against `b`; `None` when either has no values.
pub fn tail_test(name: &str, q: f64, a: &TailData, b: &TailData) -> Option<TailTest> {
    let (qa, qb) = (quantile(a, q)?, quantile(b, q)?);
    let (t, whose) = if qa <= qb {
        (qa, "baseline's")
    } else {
        (qb, "compared run's")
    };
    let counts = |d: &TailData| -> Vec<(u64, u64)> {
        d.seconds.iter().map(|h| (h.len(), over(h, t))).collect()
    };
    let result = exceedance_test(&counts(a), &counts(b));
    Some(TailTest {
        basis: format!("{} over the {whose} {name}", a.items),
        threshold: t as f64 / a.unit_ns,
        result,
    })
}

/// The test of one metric of run `b` against the baseline `a` (values `va`, `vb`):
/// exceedances for tail rows that have per-second histograms on both sides, else
/// Mann-Whitney on blocks or samples; `None` when a side has neither.
pub(super) fn test(
    name: &str,
    a: &Metric,
    b: &Metric,
    va: Option<f64>,
    vb: Option<f64>,
    unit: &str,
) -> Option<Test> {
    let small = negligible(va, vb, unit);
    let large = large_ratio(va, vb);
    if let (Some((q, ta)), Some((_, tb))) = (&a.tail, &b.tail) {
        if let Some(t) = tail_test(name, *q, ta, tb) {
            let r = t.result;
            let p = r.p_value;
            let along = moved_with_test(va, vb, if r.b_higher { 1.0 } else { 0.0 });
            let sig = p.is_some_and(|p| p < ALPHA);
            let significant = p.map(|_| sig && !small && along);
            return Some(Test {
                basis: t.basis,
                n: [ta.seconds.len(), tb.seconds.len()],
                p_value: p,
                significant,
                negligible: small,
                against_test: sig && !small && !along,
                inconclusive: large && significant != Some(true) && (!sig || along),
                over: Some(r.over),
                of: Some(r.of),
                threshold: Some(t.threshold),
                dispersion: Some(r.dispersion),
            });
        }
    }
    let (basis, xa) = a.blocks.as_ref()?;
    let (_, xb) = b.blocks.as_ref()?;
    let r = mann_whitney_u(xa, xb);
    let along = r.is_some_and(|r| moved_with_test(va, vb, r.prob_b_greater));
    let sig = r.is_some_and(|r| r.significant());
    let significant = r.map(|r| r.significant() && !small && along);
    Some(Test {
        basis: basis.clone(),
        n: [xa.len(), xb.len()],
        p_value: r.map(|r| r.p_value),
        significant,
        negligible: small,
        // Only a significant shift has a direction to move against.
        against_test: sig && !small && !along,
        inconclusive: large && significant != Some(true) && (!sig || along),
        over: None,
        of: None,
        threshold: None,
        dispersion: None,
    })
}

/// Values in `h` above `t` (whole buckets above the one holding `t`).
fn over(h: &Histogram<u64>, t: u64) -> u64 {
    h.iter_recorded()
        .filter(|v| v.value_iterated_to() > t)
        .map(|v| v.count_at_value())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seconds(per_second: &[&[u64]]) -> TailData {
        TailData {
            seconds: Rc::new(
                per_second
                    .iter()
                    .map(|vals| {
                        let mut h = new_histogram();
                        for v in *vals {
                            h.record(*v).unwrap();
                        }
                        h
                    })
                    .collect(),
            ),
            unit_ns: 1e3,
            items: "I/Os",
        }
    }

    /// Three seconds a side: a tail ×13 higher in B (every 100th I/O at 100 ms
    /// instead of 8 ms) is found by exceedances; the same run against itself is not.
    #[test]
    fn tail_of_three_seconds_each() {
        let fast: Vec<u64> = (0..1000)
            .map(|i| if i % 100 == 0 { 8_000_000 } else { 100_000 })
            .collect();
        let slow: Vec<u64> = (0..1000)
            .map(|i| if i % 100 == 0 { 100_000_000 } else { 100_000 })
            .collect();
        let a = seconds(&[&fast, &fast, &fast]);
        let b = seconds(&[&slow, &slow, &slow]);
        let t = tail_test("p99.9", 0.999, &a, &b).unwrap();
        assert_eq!(t.result.over, [0, 30], "{t:?}");
        assert!(t.result.p_value.unwrap() < 0.001, "{t:?}");
        assert!(t.result.b_higher);
        assert_eq!(t.basis, "I/Os over the baseline's p99.9");
        assert!((t.threshold - 8000.0).abs() < 10.0, "{t:?}");
        let same = tail_test("max", 1.0, &a, &seconds(&[&fast, &fast, &fast])).unwrap();
        assert!(same.result.p_value.is_none_or(|p| p > 0.05), "{same:?}");
        assert!(tail_test("p99", 0.99, &a, &seconds(&[&[], &[]])).is_none());
    }
}
