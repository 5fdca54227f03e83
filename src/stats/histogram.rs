//! Latency histograms (HdrHistogram, ns, 1 µs .. 1 h, 3 significant digits) and the
//! percentile summary every report shows.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Lowest discernible value: 1 µs, in ns.
pub const LOWEST_NS: u64 = 1_000;
/// Highest trackable value: 1 h, in ns. Larger values saturate.
pub const HIGHEST_NS: u64 = 3_600 * 1_000_000_000;
/// Significant digits kept.
pub const SIGFIG: u8 = 3;

/// A new, empty latency histogram in nanoseconds.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGFIG).expect("static bounds are valid")
}

/// A latency histogram in nanoseconds with [`new_histogram`]'s resolution that starts
/// with the counts up to ~1 ms (16 KiB) and grows to the largest value recorded (by
/// [`record`] / [`record_ns`], never `saturating_record`, which would clamp). A full
/// 1 µs .. 1 h histogram is 188 KiB, every byte of it written when it is made, so a
/// load worker's six of them were over 1 MiB resident (issue 21). Merge it into a
/// [`new_histogram`] before storing it: a decoded histogram does not grow, so what is
/// stored keeps the full range.
pub fn growing_histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(LOWEST_NS, 2 * LOWEST_NS, SIGFIG)
        .expect("static bounds are valid");
    h.auto(true);
    h
}

/// Records a duration, saturating at one hour.
pub fn record(h: &mut Histogram<u64>, d: Duration) {
    record_ns(h, u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
}

/// Records `ns`, saturating at one hour; a [`growing_histogram`] grows to hold it.
#[inline]
pub fn record_ns(h: &mut Histogram<u64>, ns: u64) {
    let v = ns.min(HIGHEST_NS);
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
}

/// Whether `n` values support quantile `q`: at least one value must lie above it
/// (p99 needs 100 values, p99.9 1,000, p99.99 10,000). Below that, the "percentile"
/// is the maximum and is shown as the maximum.
pub fn supports(n: u64, q: f64) -> bool {
    n as f64 * (1.0 - q) >= 1.0 - 1e-9
}

/// The percentiles of a [`Percentiles`] summary (JSON names) that `n` values support.
pub fn supported(n: u64) -> Vec<&'static str> {
    [
        ("p50", 0.5),
        ("p90", 0.9),
        ("p99", 0.99),
        ("p999", 0.999),
        ("p9999", 0.9999),
    ]
    .into_iter()
    .filter(|(_, q)| supports(n, *q))
    .map(|(name, _)| name)
    .collect()
}

/// The unit a [`Percentiles`] summary is expressed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds (HTTP latencies).
    Millis,
    /// Microseconds (disk latencies).
    Micros,
}

impl Unit {
    fn convert(self, ns: f64) -> f64 {
        match self {
            Unit::Millis => ns / 1e6,
            Unit::Micros => ns / 1e3,
        }
    }
}

/// min/mean/p50/p90/p99/p99.9/p99.99/max of a distribution, in the unit asked for.
/// The JSON field names are part of DESIGN.md's contract.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Percentiles {
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub p9999: f64,
    pub max: f64,
}

impl Percentiles {
    /// Summarises a histogram (ns) in `unit`. An empty histogram gives all zeros.
    pub fn from_histogram(h: &Histogram<u64>, unit: Unit) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        let q = |q: f64| unit.convert(h.value_at_quantile(q) as f64);
        Percentiles {
            min: unit.convert(h.min() as f64),
            mean: unit.convert(h.mean()),
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p999: q(0.999),
            p9999: q(0.9999),
            max: unit.convert(h.max() as f64),
        }
    }

    /// Exact summary of a small set of samples (already in the wanted unit), by the
    /// nearest-rank method. Used where every sample is kept (the probe).
    pub fn from_samples(samples: &[f64]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return Self::default();
        }
        v.sort_by(|a, b| a.total_cmp(b));
        let rank = |q: f64| {
            let idx = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
            v[idx]
        };
        Percentiles {
            min: v[0],
            mean: v.iter().sum::<f64>() / v.len() as f64,
            p50: rank(0.50),
            p90: rank(0.90),
            p99: rank(0.99),
            p999: rank(0.999),
            p9999: rank(0.9999),
            max: v[v.len() - 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// p99.99 needs 10,000 values, p99.9 1,000, p99 100.
    #[test]
    fn percentiles_the_data_supports() {
        assert!(supports(10_000, 0.9999) && !supports(9_999, 0.9999));
        assert!(supports(1_000, 0.999) && !supports(999, 0.999));
        assert!(supports(100, 0.99) && !supports(99, 0.99));
        assert_eq!(supported(500), ["p50", "p90", "p99"]);
        assert_eq!(supported(5), ["p50"]);
        assert!(supported(0).is_empty());
    }

    #[test]
    fn histogram_summary_in_ms_and_us() {
        let mut h = new_histogram();
        for ms in 1..=100u64 {
            record(&mut h, Duration::from_millis(ms));
        }
        let p = Percentiles::from_histogram(&h, Unit::Millis);
        assert!((p.p50 - 50.0).abs() < 0.1, "{p:?}");
        assert!((p.p99 - 99.0).abs() < 0.1, "{p:?}");
        assert!((p.min - 1.0).abs() < 0.01 && (p.max - 100.0).abs() < 0.1);
        let us = Percentiles::from_histogram(&h, Unit::Micros);
        assert!((us.p50 - 50_000.0).abs() < 100.0);
    }

    #[test]
    fn saturates_instead_of_failing() {
        let mut h = new_histogram();
        record(&mut h, Duration::from_secs(10_000));
        assert_eq!(h.len(), 1);
        let mut g = growing_histogram();
        record(&mut g, Duration::from_secs(10_000));
        assert_eq!(g.max(), h.max());
    }

    /// Issue 21: a growing histogram holds exactly what a full one does (same
    /// buckets, so merged into a full one it gives the same percentiles), while it
    /// only takes the memory of the range it saw: 16 KiB up to ~1 ms instead of the
    /// full range's 188 KiB.
    #[test]
    fn a_growing_histogram_records_what_a_full_one_does() {
        let (mut full, mut grown) = (new_histogram(), growing_histogram());
        assert!(
            grown.distinct_values() * 8 <= 16 * 1024,
            "{}",
            grown.distinct_values()
        );
        assert!(
            full.distinct_values() * 8 > 180 * 1024,
            "{}",
            full.distinct_values()
        );
        let mut x = 1u64;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // 0 ns .. ~4.4 s, denser at the low end, as latencies are.
            let ns = (x >> 33) >> ((x >> 7) % 24);
            record_ns(&mut full, ns);
            record_ns(&mut grown, ns);
        }
        record_ns(&mut full, u64::MAX);
        record_ns(&mut grown, u64::MAX);
        let mut merged = new_histogram();
        merged.add(&grown).unwrap();
        for h in [&grown, &merged] {
            assert_eq!(h.len(), full.len());
            assert_eq!((h.min(), h.max()), (full.min(), full.max()));
            for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
                assert_eq!(h.value_at_quantile(q), full.value_at_quantile(q), "q {q}");
            }
        }
        assert!(merged.iter_recorded().eq(full.iter_recorded()));
    }

    #[test]
    fn nearest_rank_on_samples() {
        let p = Percentiles::from_samples(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!(p.min, 1.0);
        assert_eq!(p.p50, 3.0);
        assert_eq!(p.p90, 5.0);
        assert_eq!(p.max, 5.0);
        assert_eq!(p.mean, 3.0);
        assert_eq!(Percentiles::from_samples(&[]), Percentiles::default());
    }
}
