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

/// Records a duration, saturating at one hour.
pub fn record(h: &mut Histogram<u64>, d: Duration) {
    let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    h.saturating_record(ns);
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
