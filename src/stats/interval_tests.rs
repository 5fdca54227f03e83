//! The interval logic on constructed samples: known order-statistic ranks, the
//! Hodges–Lehmann shift against textbook values, and the three verdicts a finding can
//! reach (fires / quiet / not enough evidence).

use super::*;

/// A small deterministic generator (xorshift), uniform in 0..1.
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

/// `n` values spread uniformly over `centre ± spread`.
fn around(seed: u64, n: usize, centre: f64, spread: f64) -> Vec<f64> {
    uniform(seed, n)
        .into_iter()
        .map(|u| centre + (2.0 * u - 1.0) * spread)
        .collect()
}

#[test]
fn normal_quantiles() {
    assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-5);
    assert!((normal_quantile(0.5)).abs() < 1e-9);
    assert!((normal_quantile(0.01) + 2.326_348).abs() < 1e-5);
}

/// The median of 1..10 lies between the 2nd and 9th values (binomial ranks:
/// P(B ≤ 1) = 11/1024 ≤ 2.5 %, P(B ≤ 8) = 1013/1024 ≥ 97.5 %), the textbook
/// interval; six values are the fewest that bound it, five are not enough.
#[test]
fn median_from_order_statistics() {
    let v: Vec<f64> = (1..=10).map(f64::from).collect();
    let iv = median(&v).unwrap();
    assert_eq!((iv.low, iv.estimate, iv.high), (2.0, 5.5, 9.0));
    let six = median(&[6.0, 1.0, 3.0, 2.0, 5.0, 4.0]).unwrap();
    assert_eq!((six.low, six.high), (1.0, 6.0));
    assert!(median(&[1.0, 2.0, 3.0, 4.0, 5.0]).is_none());
    assert!(median(&[1.0, 2.0, 3.0, 4.0, 5.0, f64::NAN]).is_none());
}

/// A p99 from 50 values has a lower bound (the 48th value) and no upper one: the
/// data cannot say how high it is.
#[test]
fn a_high_quantile_from_few_values_is_one_sided() {
    let v: Vec<f64> = (1..=50).map(f64::from).collect();
    let iv = quantile(&v, 0.99).unwrap();
    assert_eq!(iv.low, 48.0);
    assert!(iv.high.is_infinite());
    assert_eq!(iv.estimate, 50.0);
    // From 1,000 values both sides are bounded, around the 990th.
    let v: Vec<f64> = (1..=1000).map(f64::from).collect();
    let iv = quantile(&v, 0.99).unwrap();
    assert!(iv.low >= 980.0 && iv.low < 990.0, "{iv:?}");
    assert!(iv.high > 990.0 && iv.high <= 998.0, "{iv:?}");
}

/// Shift: 5 vs 5 uses U's exact distribution (critical U = 2 at 95 %, so the 3rd
/// smallest and largest of the 25 differences: the textbook interval); a copy moved
/// by 10 is estimated at 10 and the interval holds it.
#[test]
fn hodges_lehmann_shift() {
    let a = [1.0, 2.0, 3.0, 4.0, 5.0];
    let b = [6.0, 7.0, 8.0, 9.0, 10.0];
    let iv = shift(&a, &b).unwrap();
    // Differences b − a: 1 (once), 2 (twice), 3 (three times)… 9 (once).
    assert_eq!((iv.low, iv.estimate, iv.high), (2.0, 5.0, 8.0));
    let x = uniform(3, 30);
    let moved: Vec<f64> = x.iter().map(|v| v + 10.0).collect();
    let iv = shift(&x, &moved).unwrap();
    assert!((iv.estimate - 10.0).abs() < 1e-9, "{iv:?}");
    assert!(iv.low <= 10.0 && iv.high >= 10.0, "{iv:?}");
    assert!(shift(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0, 7.0]).is_none());
    // 4 vs 4 is the least that gives an interval (P(U = 0) = 1/70 ≤ 2.5 %).
    assert!(shift(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]).is_some());
}

/// The three verdicts of a finding that fires at a 20 ms shift:
/// - fires: 100 ± 5 ms against 150 ± 5 ms (20 each) is ≈ 50 ms, the whole interval
///   above 20;
/// - quiet: two samples of the same 100 ± 5 ms lie within a few ms of 0, the whole
///   interval below 20;
/// - not enough evidence: 12 samples of 100 ± 60 ms against 120 ± 60 ms straddle 20,
///   and about how many samples would tell is said.
#[test]
fn fires_quiet_or_undecided() {
    let base = around(11, 20, 100.0, 5.0);
    let slow = around(12, 20, 150.0, 5.0);
    let fires = shift(&base, &slow).unwrap();
    assert_eq!(fires.against(20.0), Decision::Above, "{fires:?}");
    let same = shift(&base, &around(13, 20, 100.0, 5.0)).unwrap();
    assert_eq!(same.against(20.0), Decision::Below, "{same:?}");
    assert_eq!(same.negated().against(20.0), Decision::Below, "{same:?}");
    let noisy = shift(&around(14, 12, 100.0, 60.0), &around(15, 12, 120.0, 60.0)).unwrap();
    assert_eq!(noisy.against(20.0), Decision::Undecided, "{noisy:?}");
    let c = Confidence::new("shift, ms", &noisy, 20.0, Method::HodgesLehmann);
    assert!(c.undecided());
    assert_eq!(c.samples, vec![12, 12]);
    // Sitting almost on the threshold: a very large number, capped; far from it: a
    // few more than now.
    if let Some(n) = c.needed() {
        assert!(n > 12, "{c:?}");
    }
    let decided = Confidence::new("shift, ms", &fires, 20.0, Method::HodgesLehmann);
    assert_eq!(decided.verdict, "above");
    let v = serde_json::to_value(&decided).unwrap();
    assert_eq!(v["samples"], serde_json::json!([20, 20]));
    assert!(v["low"].as_f64().unwrap() > 20.0, "{v}");
}

/// More samples of the same noisy pair decide what 12 could not: the interval
/// narrows as 1/√n, and `needed` says roughly how many that takes.
#[test]
fn more_samples_decide() {
    let (a, b) = (around(21, 12, 100.0, 30.0), around(22, 12, 140.0, 30.0));
    let few = shift(&a, &b).unwrap();
    let c = Confidence::new("shift, ms", &few, 20.0, Method::HodgesLehmann);
    let (a, b) = (around(21, 200, 100.0, 30.0), around(22, 200, 140.0, 30.0));
    let many = shift(&a, &b).unwrap();
    assert_eq!(many.against(20.0), Decision::Above, "{many:?}");
    assert!(many.high - many.low < few.high - few.low);
    if c.undecided() {
        let n = c.needed().unwrap();
        assert!((13..=200).contains(&n), "{n}");
    }
}

/// A ratio as a shift of logarithms: a series three times another is estimated at 3.
#[test]
fn ratio_of_two_series() {
    let a = around(31, 20, 10.0, 2.0);
    let b: Vec<f64> = a.iter().map(|x| 3.0 * x).collect();
    let iv = ratio(&a, &b).unwrap();
    assert!((iv.estimate - 3.0).abs() < 1e-9, "{iv:?}");
    assert!(iv.low <= 3.0 && iv.high >= 3.0);
}

/// Wilson's interval: 5 of 100 lies in 2.2 %..11.2 %; none of 100 is not zero for
/// sure (up to 3.7 %); 1 of 20 over a threshold does not show a 1 % share, 3 of 20 do.
#[test]
fn wilson_share() {
    let iv = share(5, 100).unwrap();
    assert!(
        (iv.low - 0.0215).abs() < 5e-4 && (iv.high - 0.1118).abs() < 5e-4,
        "{iv:?}"
    );
    let none = share(0, 100).unwrap();
    assert_eq!(none.low, 0.0);
    assert!((none.high - 0.037).abs() < 1e-3, "{none:?}");
    assert_eq!(share(1, 20).unwrap().against(0.01), Decision::Undecided);
    assert_eq!(share(3, 20).unwrap().against(0.01), Decision::Above);
    assert!(share(1, 0).is_none());
}

/// A histogram's p99 interval: 1,000 values 1..1000 ms put it between about the
/// 980th and the 997th; 50 values bound it only from below.
#[test]
fn histogram_quantiles() {
    let mut h = crate::stats::new_histogram();
    for v in 1..=1000u64 {
        h.record(v * 1_000_000).unwrap();
    }
    let iv = histogram_quantile(&h, 0.99).unwrap();
    assert!((980.0..=991.0).contains(&iv.low), "{iv:?}");
    assert!((990.0..=999.0).contains(&iv.high), "{iv:?}");
    let mut small = crate::stats::new_histogram();
    for v in 1..=50u64 {
        small.record(v * 1_000_000).unwrap();
    }
    let iv = histogram_quantile(&small, 0.99).unwrap();
    assert!(iv.high.is_infinite() && iv.low > 40.0, "{iv:?}");
}
