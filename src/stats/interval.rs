//! Confidence intervals for the quantities findings decide on, and the decision
//! itself: a timing-based finding fires only when the interval of its quantity clears
//! the threshold, stays quiet when the interval lies wholly on the other side, and
//! says "not enough evidence" when the interval straddles it (DESIGN.md, Findings).
//!
//! Every interval here is distribution-free and deterministic (no resampling, so the
//! same samples always give the same verdict):
//! - a quantile (the median, p99…) from order statistics: the ranks between which the
//!   true quantile lies with the stated probability, from the binomial distribution
//!   ([`quantile`], [`median`]);
//! - a shift between two series (edge − origin, fresh − reused) as the Hodges–Lehmann
//!   estimate — the median of every pairwise difference — with the interval that
//!   inverts the Mann–Whitney test of `stats::compare` ([`shift`]); on logarithms, a
//!   ratio ([`ratio`]);
//! - a share of events (I/Os over a threshold, failed requests) as Wilson's score
//!   interval ([`share`]).
//!
//! It also says how many samples would decide an undecided case ([`Confidence::needed`]:
//! an interval's width shrinks as 1/√n). This module computes; it never prints.

use serde::{Deserialize, Serialize};

/// The confidence every finding's interval is computed at (two-sided).
pub const LEVEL: f64 = 0.95;

/// Fewest samples a side for a median interval at [`LEVEL`]: with 6 the widest
/// interval (min..max) holds the median with probability 1 − 2/2⁶ ≈ 0.969.
pub const MIN_MEDIAN_SAMPLES: usize = 6;

/// An interval around an estimate. `low`/`high` are infinite when the samples bound
/// only one side (a p99 from 50 samples has a lower bound, no upper one).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
    /// Samples behind it, per side (one side for a quantile or a share).
    pub n: [usize; 2],
}

impl Interval {
    /// Whether the whole interval lies at or above `threshold`.
    pub fn above(&self, threshold: f64) -> bool {
        self.low >= threshold
    }

    /// Whether the whole interval lies below `threshold`.
    pub fn below(&self, threshold: f64) -> bool {
        self.high < threshold
    }

    /// The interval's decision against a threshold the quantity must reach.
    pub fn against(&self, threshold: f64) -> Decision {
        if self.above(threshold) {
            Decision::Above
        } else if self.below(threshold) {
            Decision::Below
        } else {
            Decision::Undecided
        }
    }

    /// The interval of `f(x)` for an increasing `f` (a share of a known total).
    pub fn map(self, f: impl Fn(f64) -> f64) -> Interval {
        Interval {
            estimate: f(self.estimate),
            low: f(self.low),
            high: f(self.high),
            n: self.n,
        }
    }

    /// The interval of `-x` (what saves instead of what costs).
    pub fn negated(self) -> Interval {
        Interval {
            estimate: -self.estimate,
            low: -self.high,
            high: -self.low,
            n: self.n,
        }
    }
}

/// Where an interval lies against a threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Wholly at or above it: the finding fires.
    Above,
    /// Wholly below it: the finding stays quiet.
    Below,
    /// It straddles the threshold: more samples would tell.
    Undecided,
}

impl Decision {
    /// "above", "below", "undecided" (the JSON `confidence.verdict`).
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Above => "above",
            Decision::Below => "below",
            Decision::Undecided => "undecided",
        }
    }
}

/// The interval a finding decided on, as its JSON `confidence` carries it (beside the
/// evidence): what the quantity is, its estimate and interval, the threshold, the
/// verdict and the samples behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confidence {
    /// What the interval is of, in words ("edge − origin TTFB on reused connections, ms").
    pub quantity: String,
    pub estimate: f64,
    /// Bounds at `level`; null when the samples bound only the other side.
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// Two-sided confidence level (0.95).
    pub level: f64,
    /// What the quantity had to clear for the finding to fire.
    pub threshold: f64,
    /// "above" (fired), "below" (would stay quiet) or "undecided".
    pub verdict: String,
    /// Samples behind the interval, per side.
    pub samples: Vec<u64>,
    /// How the interval was computed.
    pub method: String,
}

impl Confidence {
    /// The confidence of `iv` decided against `threshold` (numbers rounded to 3
    /// decimals; infinite bounds become null).
    pub fn new(quantity: &str, iv: &Interval, threshold: f64, method: Method) -> Confidence {
        let round = |v: f64| (v * 1000.0).round() / 1000.0;
        let bound = |v: f64| v.is_finite().then(|| round(v));
        let sides = if iv.n[1] == 0 { 1 } else { 2 };
        Confidence {
            quantity: quantity.to_string(),
            estimate: round(iv.estimate),
            low: bound(iv.low),
            high: bound(iv.high),
            level: LEVEL,
            threshold: round(threshold),
            verdict: iv.against(threshold).as_str().to_string(),
            samples: iv.n[..sides].iter().map(|n| *n as u64).collect(),
            method: method.as_str().to_string(),
        }
    }

    /// Whether the finding could not tell.
    pub fn undecided(&self) -> bool {
        self.verdict == Decision::Undecided.as_str()
    }

    /// About how many samples a side would decide it: an interval's half-width
    /// shrinks as 1/√n, so it clears the threshold once it is narrower than the
    /// estimate's distance from it (with a fifth to spare). None when the estimate
    /// sits on the threshold (no number of samples would tell) or the interval is
    /// unbounded on the side that matters.
    pub fn needed(&self) -> Option<u64> {
        let n = self.samples.iter().copied().min()? as f64;
        let gap = (self.estimate - self.threshold).abs();
        let half = if self.estimate >= self.threshold {
            self.estimate - self.low?
        } else {
            self.high? - self.estimate
        };
        if gap <= 0.0 || n <= 0.0 {
            return None;
        }
        let want = (n * (half / gap).powi(2) * 1.2).ceil();
        (want.is_finite()).then(|| (want as u64).max(n as u64 + 1).min(10_000))
    }
}

/// How an interval was computed (named in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Order statistics of one series (a median or another quantile).
    OrderStatistic,
    /// Hodges–Lehmann shift with its Mann–Whitney interval.
    HodgesLehmann,
    /// Hodges–Lehmann on logarithms: a ratio.
    LogRatio,
    /// Wilson's score interval of a share.
    Wilson,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::OrderStatistic => "order statistics (binomial ranks)",
            Method::HodgesLehmann => "Hodges-Lehmann shift, Mann-Whitney interval",
            Method::LogRatio => "Hodges-Lehmann on logarithms (ratio), Mann-Whitney interval",
            Method::Wilson => "Wilson score interval",
        }
    }
}

/// The finite values, sorted.
pub(crate) fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The median of sorted values.
pub(crate) fn median_of(v: &[f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The interval of quantile `q` (0..1) of `values` at [`LEVEL`], from order
/// statistics: `[x(l), x(u)]` with the ranks chosen so that the number of values below
/// the true quantile (binomial, n and q) falls between them with probability ≥ LEVEL.
/// A side the samples cannot bound is infinite (a p99 from 50 values has no upper
/// bound). None without values; also None when neither side is bounded.
pub fn quantile(values: &[f64], q: f64) -> Option<Interval> {
    let v = sorted(values);
    let n = v.len();
    if n == 0 || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let alpha = (1.0 - LEVEL) / 2.0;
    // Ranks are 1-based: x(l) is v[l - 1]. P(B ≤ l − 1) ≤ α/2 for the lower rank,
    // P(B ≤ u − 1) ≥ 1 − α/2 for the upper one, B ~ Bin(n, q).
    let cdf = binomial_cdf_table(n, q);
    let lower = (1..=n).rev().find(|&l| cdf[l - 1] <= alpha);
    let upper = (1..=n).find(|&u| cdf[u - 1] >= 1.0 - alpha);
    if lower.is_none() && upper.is_none() {
        return None;
    }
    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
    let estimate = if (q - 0.5).abs() < 1e-12 {
        median_of(&v)
    } else {
        v[rank - 1]
    };
    Some(Interval {
        estimate,
        low: lower.map_or(f64::NEG_INFINITY, |l| v[l - 1]),
        high: upper.map_or(f64::INFINITY, |u| v[u - 1]),
        n: [n, 0],
    })
}

/// The interval of quantile `q` of a histogram's values (ns, returned in ms), from
/// the same binomial ranks as [`quantile`] (their normal approximation past 20,000
/// values). A side the values cannot bound is infinite.
pub fn histogram_quantile(h: &hdrhistogram::Histogram<u64>, q: f64) -> Option<Interval> {
    let n = h.len();
    if n == 0 || !(0.0..1.0).contains(&q) {
        return None;
    }
    let alpha = (1.0 - LEVEL) / 2.0;
    let (lower, upper) = if n <= 20_000 {
        let cdf = binomial_cdf_table(n as usize, q);
        (
            (1..=n as usize).rev().find(|&l| cdf[l - 1] <= alpha),
            (1..=n as usize).find(|&u| cdf[u - 1] >= 1.0 - alpha),
        )
    } else {
        let (nf, z) = (n as f64, normal_quantile(1.0 - alpha));
        let sd = (nf * q * (1.0 - q)).sqrt();
        let l = (nf * q - z * sd).floor();
        let u = (nf * q + z * sd).ceil() + 1.0;
        (
            (l >= 1.0).then_some(l as usize),
            (u <= nf).then_some(u as usize),
        )
    };
    // The value of rank r (1-based) among the n values.
    let at = |r: usize| h.value_at_quantile(r as f64 / n as f64) as f64 / 1e6;
    Some(Interval {
        estimate: h.value_at_quantile(q) as f64 / 1e6,
        low: lower.map_or(f64::NEG_INFINITY, at),
        high: upper.map_or(f64::INFINITY, at),
        n: [n as usize, 0],
    })
}

/// The interval of the median (None below [`MIN_MEDIAN_SAMPLES`] values: fewer cannot
/// bound it on both sides at [`LEVEL`]).
pub fn median(values: &[f64]) -> Option<Interval> {
    let n = values.iter().filter(|x| x.is_finite()).count();
    if n < MIN_MEDIAN_SAMPLES {
        return None;
    }
    quantile(values, 0.5)
}

/// P(B ≤ k) for k = 0..n, B ~ Bin(n, p): exact sums in log space (stable to tens of
/// thousands of values).
fn binomial_cdf_table(n: usize, p: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(n + 1);
    if p <= 0.0 {
        return vec![1.0; n + 1];
    }
    if p >= 1.0 {
        let mut v = vec![0.0; n + 1];
        v[n] = 1.0;
        return v;
    }
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    let nf = n as f64;
    let mut log_choose = 0.0; // ln C(n, 0)
    let mut acc = 0.0;
    for k in 0..=n {
        if k > 0 {
            log_choose += ((nf - k as f64 + 1.0) / k as f64).ln();
        }
        acc += (log_choose + k as f64 * lp + (nf - k as f64) * lq).exp();
        out.push(acc.min(1.0));
    }
    out
}

/// Largest total at which the exact distribution of U is used for a shift's interval.
const EXACT_MAX_TOTAL: usize = 40;

/// Most values a side used for a shift (the differences grow as n1·n2): beyond it,
/// every k-th value of the sorted series is kept, which keeps its shape.
const SHIFT_MAX_SIDE: usize = 400;

/// The shift `b − a` (how much later or larger `b`'s values are than `a`'s): the
/// Hodges–Lehmann estimate (median of every difference `b_j − a_i`) and its interval
/// at [`LEVEL`] from the Mann–Whitney distribution (exact for small samples, normal
/// with the usual variance otherwise). None when a side has fewer than 4 values or
/// the samples are too few for any interval at that level (4 vs 4 is the least).
pub fn shift(a: &[f64], b: &[f64]) -> Option<Interval> {
    let (a, b) = (thin(sorted(a)), thin(sorted(b)));
    let (n1, n2) = (a.len(), b.len());
    if n1 < 4 || n2 < 4 {
        return None;
    }
    let mut d: Vec<f64> = Vec::with_capacity(n1 * n2);
    for x in &a {
        for y in &b {
            d.push(y - x);
        }
    }
    d.sort_by(f64::total_cmp);
    let total = n1 * n2;
    let alpha = (1.0 - LEVEL) / 2.0;
    // k: the rank (1-based) of the interval's lower end among the differences.
    let k = if n1 + n2 <= EXACT_MAX_TOTAL {
        let counts = super::compare::u_distribution(n1, n2);
        let all: f64 = counts.iter().sum();
        let mut cum = 0.0;
        let mut k = 0usize;
        for (u, c) in counts.iter().enumerate() {
            cum += c / all;
            if cum <= alpha {
                k = u + 1;
            } else {
                break;
            }
        }
        k
    } else {
        let (f1, f2) = (n1 as f64, n2 as f64);
        let sd = (f1 * f2 * (f1 + f2 + 1.0) / 12.0).sqrt();
        let z = normal_quantile(1.0 - alpha);
        (total as f64 / 2.0 - z * sd - 0.5).floor().max(0.0) as usize
    };
    if k == 0 {
        return None;
    }
    Some(Interval {
        estimate: median_of(&d),
        low: d[k - 1],
        high: d[total - k],
        n: [n1, n2],
    })
}

/// Every k-th value of a long sorted series, so a side has at most
/// [`SHIFT_MAX_SIDE`] values.
fn thin(v: Vec<f64>) -> Vec<f64> {
    if v.len() <= SHIFT_MAX_SIDE {
        return v;
    }
    let step = v.len() as f64 / SHIFT_MAX_SIDE as f64;
    (0..SHIFT_MAX_SIDE)
        .map(|i| v[((i as f64 + 0.5) * step) as usize])
        .collect()
}

/// The ratio `b / a` of two series of positive values (how many times slower `b`
/// is), as the shift of their logarithms. Values at or below 1 µs count as 1 µs.
pub fn ratio(a: &[f64], b: &[f64]) -> Option<Interval> {
    let ln = |v: &[f64]| -> Vec<f64> { v.iter().map(|x| x.max(1e-3).ln()).collect() };
    shift(&ln(a), &ln(b)).map(|iv| iv.map(f64::exp))
}

/// The share `k / n` with Wilson's score interval at [`LEVEL`]. None when `n` is 0.
pub fn share(k: u64, n: u64) -> Option<Interval> {
    if n == 0 {
        return None;
    }
    let (k, nf) = (k.min(n) as f64, n as f64);
    let p = k / nf;
    let z = normal_quantile(1.0 - (1.0 - LEVEL) / 2.0);
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * nf)) / (1.0 + z2 / nf);
    let half = z / (1.0 + z2 / nf) * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt();
    Some(Interval {
        estimate: p,
        low: (centre - half).max(0.0),
        high: (centre + half).min(1.0),
        n: [n as usize, 0],
    })
}

/// The standard normal quantile (Acklam's rational approximation, relative error
/// below 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let low = 0.02425;
    if p < low {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - low {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -normal_quantile(1.0 - p)
    }
}

#[cfg(test)]
#[path = "interval_tests.rs"]
mod tests;
