//! Comparison statistics: is the difference between two runs more than noise?
//!
//! latscope never tests raw requests against each other: consecutive requests of a
//! load run share queues, connections and caches, so they are autocorrelated, and with
//! 10⁵ of them every difference looks "significant". The samples it tests are either
//! per-second blocks (one value per second of a load or disk run: that second's p99,
//! its request count, …) or the probe's samples, which are sequential independent
//! requests (one at a time, each on its own connection or one after another).
//!
//! The test is the two-sided Mann-Whitney U test (Wilcoxon rank-sum): it makes no
//! assumption about the shape of the distribution, which latency never has a nice
//! one of, and it is robust to the outliers latency always has. Small samples without
//! ties get the exact distribution of U; otherwise the normal approximation with tie
//! and continuity correction. This module computes; it never prints.

use serde::Serialize;

/// The test's name as reports show it.
pub const TEST_NAME: &str = "Mann-Whitney U (two-sided)";

/// Significance level: a difference with p below this is called significant.
pub const ALPHA: f64 = 0.05;

/// Fewest values per side for a verdict: with 4 vs 4 the smallest possible two-sided
/// p is 2/70 ≈ 0.029, so fewer could never be significant at [`ALPHA`].
pub const MIN_SAMPLES: usize = 4;

/// Largest n1 + n2 for which the exact distribution of U is computed.
const EXACT_MAX_TOTAL: usize = 40;

/// The result of a Mann-Whitney U test of `a` against `b`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MannWhitney {
    /// Values in `a` and in `b` (non-finite values are ignored).
    pub n1: usize,
    pub n2: usize,
    /// U of `a`: pairs (x from a, y from b) with x > y, ties counting one half.
    pub u: f64,
    /// Two-sided p value.
    pub p_value: f64,
    /// Whether `p_value` comes from the exact distribution of U (else the normal
    /// approximation).
    pub exact: bool,
    /// P(a value of `b` > a value of `a`) + ½ P(equal): 0.5 means no shift, 1.0
    /// means every value of `b` is larger.
    pub prob_b_greater: f64,
}

impl MannWhitney {
    /// Whether the difference is significant at [`ALPHA`].
    pub fn significant(&self) -> bool {
        self.p_value < ALPHA
    }
}

/// Tests `a` against `b`. `None` when a side has fewer than [`MIN_SAMPLES`] finite
/// values (no verdict is possible).
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let a: Vec<f64> = a.iter().copied().filter(|x| x.is_finite()).collect();
    let b: Vec<f64> = b.iter().copied().filter(|x| x.is_finite()).collect();
    let (n1, n2) = (a.len(), b.len());
    if n1 < MIN_SAMPLES || n2 < MIN_SAMPLES {
        return None;
    }
    // Rank the pooled values, ties getting the mean of their ranks.
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = pooled.len();
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0; // Σ (t³ − t) over groups of ties
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && pooled[j].0 == pooled[i].0 {
            j += 1;
        }
        let t = (j - i) as f64;
        let mean_rank = (i + 1 + j) as f64 / 2.0; // ranks i+1 ..= j
        rank_sum_a += mean_rank * pooled[i..j].iter().filter(|p| p.1).count() as f64;
        tie_term += t * t * t - t;
        i = j;
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let u = rank_sum_a - f1 * (f1 + 1.0) / 2.0;
    let pairs = f1 * f2;
    let u_small = u.min(pairs - u);
    let (p_value, exact) = if tie_term == 0.0 && n <= EXACT_MAX_TOTAL {
        // No ties: U is an integer, and its exact null distribution is known.
        let counts = u_distribution(n1, n2);
        let total: f64 = counts.iter().sum();
        let k = u_small.round() as usize;
        let tail: f64 = counts[..=k].iter().sum::<f64>() / total;
        ((2.0 * tail).min(1.0), true)
    } else {
        let mean = pairs / 2.0;
        let var = pairs / 12.0 * ((n as f64 + 1.0) - tie_term / (n as f64 * (n as f64 - 1.0)));
        if var <= 0.0 {
            // Every value is equal: nothing differs.
            (1.0, false)
        } else {
            let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
            (erfc(z / std::f64::consts::SQRT_2).min(1.0), false)
        }
    };
    Some(MannWhitney {
        n1,
        n2,
        u,
        p_value,
        exact,
        prob_b_greater: 1.0 - u / pairs,
    })
}

/// Number of arrangements of `n1` + `n2` distinct values giving each U = 0 ..= n1·n2
/// (recurrence f(m, n, u) = f(m−1, n, u−n) + f(m, n−1, u)).
pub(crate) fn u_distribution(n1: usize, n2: usize) -> Vec<f64> {
    let max_u = n1 * n2;
    // table[m][n] = distribution for sizes (m, n); built for m ≤ n1, n ≤ n2.
    let mut table: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); n2 + 1]; n1 + 1];
    for m in 0..=n1 {
        for n in 0..=n2 {
            let mut d = vec![0.0; m * n + 1];
            if m == 0 || n == 0 {
                d[0] = 1.0;
            } else {
                for (u, slot) in d.iter_mut().enumerate() {
                    let from_a = if u >= n {
                        table[m - 1][n].get(u - n).copied().unwrap_or(0.0)
                    } else {
                        0.0
                    };
                    let from_b = table[m][n - 1].get(u).copied().unwrap_or(0.0);
                    *slot = from_a + from_b;
                }
            }
            table[m][n] = d;
        }
    }
    let mut out = std::mem::take(&mut table[n1][n2]);
    out.resize(max_u + 1, 0.0);
    out
}

/// Fewest values over the threshold, both runs together, for an exceedance verdict:
/// with fewer, even all of them in one run says little.
pub const MIN_EXCEEDANCES: u64 = 6;

/// The result of [`exceedance_test`]: how many values of each run exceed a threshold
/// (the geometric midpoint of the two runs' values of a percentile) and whether the
/// two shares differ.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Exceedance {
    /// Values over the threshold in `a` and in `b`.
    pub over: [u64; 2],
    /// All values of `a` and of `b`.
    pub of: [u64; 2],
    /// Pearson dispersion of the per-second counts around the run's own share (≥ 1),
    /// the larger of the two runs': how much more the exceedances bunch into seconds
    /// than independent values would. Each run's variance is scaled by its own.
    pub dispersion: f64,
    /// Two-sided p value; `None` with fewer than [`MIN_EXCEEDANCES`] over the
    /// threshold.
    pub p_value: Option<f64>,
    /// `b`'s rate over the threshold is above `a`'s.
    pub b_higher: bool,
}

/// Tests whether two runs exceed a threshold equally often. Each run is given as its
/// seconds, `(values that second, values over the threshold)`. The two shares over the
/// threshold are compared with a z test whose variance is, for each run, the
/// binomial variance at the pooled share times that run's dispersion: stalls bunch
/// exceedances into a few seconds, and a share that wanders from second to second is
/// less certain than independent values would make it (quasi-binomial, estimated
/// from the run's per-second counts; 1 when it has a single second). This test has
/// power in a tail that per-second percentiles lack: a 3-second run has 3 blocks,
/// but its p99.99 rests on every I/O.
pub fn exceedance_test(a: &[(u64, u64)], b: &[(u64, u64)]) -> Exceedance {
    let total = |s: &[(u64, u64)]| {
        s.iter()
            .fold((0u64, 0u64), |(n, k), (ns, ks)| (n + ns, k + ks))
    };
    let ((na, ka), (nb, kb)) = (total(a), total(b));
    let rate = |n: u64, k: u64| if n > 0 { k as f64 / n as f64 } else { 0.0 };
    let (ra, rb) = (rate(na, ka), rate(nb, kb));
    let (da, db) = (dispersion(a, ra), dispersion(b, rb));
    let k = ka + kb;
    let p_value = (k >= MIN_EXCEEDANCES && na > 0 && nb > 0).then(|| {
        let pooled = k as f64 / (na + nb) as f64;
        let var = pooled * (1.0 - pooled) * (da / na as f64 + db / nb as f64);
        if var <= 0.0 {
            // Every value of both runs is over: nothing differs.
            return 1.0;
        }
        erfc((rb - ra).abs() / var.sqrt() / std::f64::consts::SQRT_2).min(1.0)
    });
    Exceedance {
        over: [ka, kb],
        of: [na, nb],
        dispersion: da.max(db),
        p_value,
        b_higher: rb > ra,
    }
}

/// Pearson dispersion (≥ 1) of a run's per-second counts over a threshold around its
/// own share `r`; 1 with fewer than two seconds to judge from.
fn dispersion(seconds: &[(u64, u64)], r: f64) -> f64 {
    let (mut chi2, mut cells) = (0.0, 0usize);
    for &(n, k) in seconds {
        let e = n as f64 * r;
        let var = e * (1.0 - r);
        if var > 0.0 {
            chi2 += (k as f64 - e).powi(2) / var;
            cells += 1;
        }
    }
    if cells >= 2 {
        (chi2 / (cells - 1) as f64).max(1.0)
    } else {
        1.0
    }
}

/// The complementary error function (Numerical Recipes' `erfcc`, fractional error
/// below 1.2e-7 everywhere).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift) for reproducible samples.
    fn uniform(seed: u64, n: usize) -> Vec<f64> {
        let mut s = seed.max(1);
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 11) as f64 / (1u64 << 53) as f64
            })
            .collect()
    }

    #[test]
    fn erfc_known_values() {
        assert!((erfc(0.0) - 1.0).abs() < 1e-6);
        assert!((erfc(1.0) - 0.157_299_207).abs() < 1e-6);
        assert!((erfc(-1.0) - 1.842_700_793).abs() < 1e-6);
        assert!((erfc(1.959_963_985 / std::f64::consts::SQRT_2) - 0.05).abs() < 1e-6);
    }

    /// Exact small-sample distribution: 5 vs 5 has C(10,5) = 252 arrangements.
    #[test]
    fn exact_distribution_counts() {
        let d = u_distribution(5, 5);
        assert_eq!(d.len(), 26);
        assert_eq!(d.iter().sum::<f64>(), 252.0);
        assert_eq!(d[0], 1.0);
        assert_eq!(d[1], 1.0);
        assert_eq!(d[2], 2.0);
        // Symmetric around n1·n2/2.
        for u in 0..=25 {
            assert_eq!(d[u], d[25 - u]);
        }
    }

    /// Completely separated samples: U = 0, exact two-sided p = 2/252.
    #[test]
    fn separated_small_samples_are_significant() {
        let r = mann_whitney_u(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!(r.exact);
        assert_eq!(r.u, 0.0);
        assert!((r.p_value - 2.0 / 252.0).abs() < 1e-12, "{r:?}");
        assert!(r.significant());
        assert_eq!(r.prob_b_greater, 1.0);
    }

    /// Interleaved samples: U = 10 of 25, exact two-sided p = 174/252 (scipy's
    /// `mannwhitneyu([1,3,5,7,9],[2,4,6,8,10])` gives 0.6905).
    #[test]
    fn interleaved_small_samples_are_not() {
        let r = mann_whitney_u(&[1.0, 3.0, 5.0, 7.0, 9.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
        assert!(r.exact);
        assert_eq!(r.u, 10.0);
        assert!((r.p_value - 0.690_476).abs() < 1e-5, "{r:?}");
        assert!(!r.significant());
    }

    /// Large samples from the same distribution are not called different; a shift of
    /// a quarter of the range is.
    #[test]
    fn large_samples_overlapping_and_shifted() {
        let a = uniform(7, 200);
        let same = uniform(8, 200);
        let r = mann_whitney_u(&a, &same).unwrap();
        assert!(!r.exact);
        assert!(r.p_value > 0.05, "{r:?}");
        assert!((r.prob_b_greater - 0.5).abs() < 0.1, "{r:?}");
        let shifted: Vec<f64> = same.iter().map(|x| x + 0.25).collect();
        let r = mann_whitney_u(&a, &shifted).unwrap();
        assert!(r.p_value < 1e-6, "{r:?}");
        assert!(r.significant() && r.prob_b_greater > 0.6);
    }

    /// Ties use the normal approximation with tie and continuity correction. By hand:
    /// ranks of a are 1, 3, 3, 5.5, 7.5 → U = 20 − 15 = 5; ties 2,2,2 / 3,3 / 4,4 give
    /// Σ(t³−t) = 24 + 6 + 6 = 36; var = 25/12 · (11 − 36/90); z = (|5 − 12.5| − ½)/σ.
    #[test]
    fn ties_use_the_corrected_normal_approximation() {
        let r = mann_whitney_u(&[1.0, 2.0, 2.0, 3.0, 4.0], &[2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        assert!(!r.exact);
        assert_eq!(r.u, 5.0);
        let var: f64 = 25.0 / 12.0 * (11.0 - 36.0 / 90.0);
        let z = 7.0 / var.sqrt();
        assert!((r.p_value - erfc(z / std::f64::consts::SQRT_2)).abs() < 1e-12);
        assert!((r.p_value - 0.136).abs() < 0.001, "{r:?}");
        assert!(!r.significant());
    }

    /// Exceedances: the ×13 tail of the issue (B has 40 of its 25,000 I/Os over the
    /// pooled p99.9, A has 10) is significant although each run has only 3 seconds;
    /// the same share on both sides is not; too few over the threshold gives no p.
    #[test]
    fn exceedances_have_power_in_the_tail() {
        let a = [(8000, 3), (8500, 4), (8500, 3)];
        let b = [(8000, 12), (8500, 15), (8500, 13)];
        let e = exceedance_test(&a, &b);
        assert_eq!((e.over, e.of), ([10, 40], [25000, 25000]));
        assert!(e.b_higher);
        assert!(e.p_value.unwrap() < 0.001, "{e:?}");
        let same = exceedance_test(&a, &[(8000, 4), (8500, 3), (8500, 4)]);
        assert!(same.p_value.unwrap() > 0.5, "{same:?}");
        let few = exceedance_test(&[(1000, 1)], &[(1000, 3)]);
        assert_eq!(few.p_value, None);
    }

    /// A small run wholly over a big run's p50 (32 of 32 requests against half of
    /// 33,216, whose seconds wander): the small run's own variance carries the
    /// verdict, and it is significant (a real before/after-cache ramp step).
    #[test]
    fn unbalanced_runs_keep_their_power() {
        let e = exceedance_test(&[(16, 16), (16, 16)], &[(20000, 9000), (13216, 7527)]);
        assert!(!e.b_higher);
        assert!(e.dispersion > 50.0, "{e:?}");
        assert!(e.p_value.unwrap() < 0.001, "{e:?}");
    }

    /// One stall second holding all of B's exceedances is overdispersed: the verdict
    /// weighs it as one event, not 30 independent ones. By hand: B's seconds 30, 0, 0
    /// around 10 each give χ² ≈ 60 on 2 degrees of freedom, a dispersion of ~30.
    #[test]
    fn bunched_exceedances_are_discounted() {
        let a = [(10000, 4), (10000, 3), (10000, 3)];
        let spread = [(10000, 10), (10000, 10), (10000, 10)];
        let bunched = [(10000, 30), (10000, 0), (10000, 0)];
        let s = exceedance_test(&a, &spread);
        let b = exceedance_test(&a, &bunched);
        assert!(s.dispersion < 1.5 && b.dispersion > 5.0, "{s:?} {b:?}");
        assert!(s.p_value.unwrap() < 0.01, "{s:?}");
        assert!(b.p_value.unwrap() > s.p_value.unwrap() * 10.0, "{b:?}");
    }

    #[test]
    fn all_equal_and_too_few() {
        let r = mann_whitney_u(&[3.0; 6], &[3.0; 6]).unwrap();
        assert_eq!(r.p_value, 1.0);
        assert!(mann_whitney_u(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0, 7.0]).is_none());
        assert!(mann_whitney_u(&[1.0, 2.0, 3.0, f64::NAN], &[4.0, 5.0, 6.0, 7.0]).is_none());
    }
}
