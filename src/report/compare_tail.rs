//! The test behind each row of `latscope compare` ([`test`]), and the tail rows of
//! `latscope compare` (p99, p99.9, p99.99, max of load and disk
//! runs): tested on exceedances, not on per-second percentiles. A 3-second disk run
//! has 3 blocks, too few for any verdict on its p99.99, although every one of its
//! I/Os bears on it. Here the threshold is the geometric midpoint of the two runs'
//! values of the row (for max: of their maxima), and [`exceedance_test`] asks whether
//! the runs pass it equally often, its variance widened by how much the exceedances
//! bunch into seconds.
//!
//! Why the midpoint and not the lower run's value: at the lower run's value that run
//! sits exactly at its own quantile, and for a p50 that is where its per-second shares
//! wander most (a noisy second puts 30 % over, the next 70 %). Two such seconds made a
//! 3000× faster cached ramp step "inconclusive". At the midpoint each run is as far
//! from the threshold as the other, on its own side, on a log scale (latency's). On the
//! same server the two values are close and so is the midpoint to each; and the
//! statistic no longer always leans to the higher run, as it did when the threshold
//! was the lower run's own quantile.

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

/// The geometric midpoint of two latencies (ns); the plain one when either is 0.
fn midpoint(a: u64, b: u64) -> u64 {
    if a == 0 || b == 0 {
        return (a + b) / 2;
    }
    ((a as f64).sqrt() * (b as f64).sqrt()).round() as u64
}

/// Tests quantile `q` (1.0: max) of `a` against `b`; `None` when either has no values.
pub fn tail_test(name: &str, q: f64, a: &TailData, b: &TailData) -> Option<TailTest> {
    let (qa, qb) = (quantile(a, q)?, quantile(b, q)?);
    let t = midpoint(qa, qb);
    let counts = |d: &TailData| -> Vec<(u64, u64)> {
        d.seconds.iter().map(|h| (h.len(), over(h, t))).collect()
    };
    let result = exceedance_test(&counts(a), &counts(b));
    Some(TailTest {
        basis: format!("{} over the midpoint of both runs' {name}", a.items),
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

/// Values in `h` above `t` (whole buckets above the one holding `t`, whose top
/// `t` need not be).
fn over(h: &Histogram<u64>, t: u64) -> u64 {
    let top = h.highest_equivalent(t);
    h.iter_recorded()
        .filter(|v| v.value_iterated_to() > top)
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
        assert_eq!(t.basis, "I/Os over the midpoint of both runs' p99.9");
        // √(8 ms × 100 ms) ≈ 28.3 ms, in µs.
        assert!((t.threshold - 28_284.0).abs() < 150.0, "{t:?}");
        let same = tail_test("max", 1.0, &a, &seconds(&[&fast, &fast, &fast])).unwrap();
        assert!(same.result.p_value.is_none_or(|p| p > 0.05), "{same:?}");
        assert!(tail_test("p99", 0.99, &a, &seconds(&[&[], &[]])).is_none());
    }

    /// A value repeated `n` times.
    fn times(v: u64, n: usize) -> Vec<u64> {
        vec![v; n]
    }

    /// The flake of compare_real's cached ramp step, by hand: the origin's 32
    /// requests at ~5 ms against a cache's 33,216 at 50 or 150 µs whose share at
    /// 150 µs wanders from 10 % in one second to 90 % in the next. Over the cache's
    /// own p50 (the old threshold) that wander is a dispersion of thousands and the
    /// 100× step was not significant; over the midpoint (~0.48 ms) no cached request
    /// is over and every origin request is. Two runs of that same cache are not told
    /// apart.
    #[test]
    fn a_wandering_p50_does_not_hide_a_large_step() {
        let mut origin = times(5_000_000, 16);
        origin.extend(times(4_600_000, 16));
        let second = |slow: usize, n: usize| {
            let mut v = times(150_000, slow);
            v.extend(times(50_000, n - slow));
            v
        };
        let (s1, s2) = (second(2_000, 20_000), second(11_900, 13_216));
        let a = TailData {
            items: "requests",
            ..seconds(&[&origin[..16], &origin[16..]])
        };
        let b = seconds(&[&s1, &s2]);
        let t = tail_test("p50", 0.5, &a, &b).unwrap();
        assert_eq!(t.result.over, [32, 0], "{t:?}");
        assert!(t.result.p_value.unwrap() < 0.001, "{t:?}");
        assert!(!t.result.b_higher);
        let again = seconds(&[&second(9_000, 20_000), &second(7_000, 13_216)]);
        let same = tail_test("p50", 0.5, &b, &again).unwrap();
        assert!(same.result.p_value.is_none_or(|p| p > 0.05), "{same:?}");
    }
}
