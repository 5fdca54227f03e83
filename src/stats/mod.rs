//! Statistics over measurements: latency histograms and their percentile summaries,
//! comparison tests (`compare`) and the confidence intervals findings decide on
//! (`interval`).
//!
//! Every latency is recorded in nanoseconds into an HdrHistogram that resolves 1 µs
//! .. 1 h at 3 significant digits (DESIGN.md, Load). Histograms merge losslessly, so
//! per-thread recorders are added together at the end. This module computes; it never
//! prints.

pub mod compare;
pub mod counts;
pub mod histogram;
pub mod interval;
pub mod stored;
pub mod v2;

pub use histogram::{new_histogram, Percentiles, Unit};
pub use stored::StoredHistogram;

/// Median of the finite values: the middle one, or the mean of the middle two (NaN
/// when there are none).
pub fn median(values: &[f64]) -> f64 {
    interval::median_of(&interval::sorted(values))
}
