//! Rates from counts, with the confidence a count can give: exact (Garwood) Poisson
//! bounds on how many events a period really holds when `k` were seen, and which
//! percentiles a sample of `n` values can support at all (a p99.99 of 8,000 values
//! is their maximum: one slow value decides it).

/// Confidence of the one-sided bounds the rules use.
pub const CONFIDENCE: f64 = 0.95;

/// P(X ≤ k) for X ~ Poisson(λ).
fn poisson_cdf(k: u64, lambda: f64) -> f64 {
    if lambda <= 0.0 {
        return 1.0;
    }
    // Summed in log space term by term: fine for the small k a tail count has.
    let mut term = (-lambda).exp();
    let mut sum = term;
    for i in 1..=k {
        term *= lambda / i as f64;
        sum += term;
    }
    sum.min(1.0)
}

/// The λ at which `f(λ)` (decreasing in λ) crosses `target`, by bisection.
fn solve(mut lo: f64, mut hi: f64, target: f64, f: impl Fn(f64) -> f64) -> f64 {
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The smallest expected count consistent with seeing `k` events, at [`CONFIDENCE`]
/// (one-sided): 0 for k = 0; 0.051 for k = 1; 0.355 for 2; 0.818 for 3.
pub fn poisson_lower(k: u64) -> f64 {
    if k == 0 {
        return 0.0;
    }
    // P(X ≥ k | λ) = 1 − P(X ≤ k−1 | λ) rises with λ: find where it reaches 1 − conf.
    solve(0.0, k as f64 + 10.0, CONFIDENCE, |l| poisson_cdf(k - 1, l))
}

/// The largest expected count consistent with seeing `k` events, at [`CONFIDENCE`]
/// (one-sided): 3.0 for k = 0, 4.74 for 1.
pub fn poisson_upper(k: u64) -> f64 {
    let hi = 2.0 * k as f64 + 20.0;
    solve(0.0, hi, 1.0 - CONFIDENCE, |l| poisson_cdf(k, l))
}

/// Fewest values for a percentile to be more than the largest few: p99.99 needs
/// 10,000, p99.9 1,000, p99 100 (a percentile q needs 1 / (1 − q) values).
pub fn supports(n: u64, q: f64) -> bool {
    q < 1.0 && n as f64 * (1.0 - q) >= 1.0 - 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bounds match the chi-square tables (Garwood 1936) to three digits.
    #[test]
    fn poisson_bounds_match_the_tables() {
        assert_eq!(poisson_lower(0), 0.0);
        for (k, lo, hi) in [
            (1, 0.0513, 4.744),
            (2, 0.3554, 6.296),
            (3, 0.8177, 7.754),
            (10, 5.425, 16.96),
        ] {
            assert!(
                (poisson_lower(k) - lo).abs() < 2e-3,
                "{k}: {}",
                poisson_lower(k)
            );
            assert!(
                (poisson_upper(k) - hi).abs() < 2e-2,
                "{k}: {}",
                poisson_upper(k)
            );
        }
        assert!((poisson_upper(0) - 2.996).abs() < 2e-3);
    }

    /// p99.99 needs 10,000 values, p99.9 1,000.
    #[test]
    fn percentiles_need_their_sample_size() {
        assert!(!supports(9_999, 0.9999));
        assert!(supports(10_000, 0.9999));
        assert!(!supports(999, 0.999));
        assert!(supports(1_000, 0.999));
        assert!(supports(100, 0.99));
        assert!(!supports(5, 1.0));
    }
}
