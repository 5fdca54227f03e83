//! Linear ramps (`--stages 30s:10,2m:100,30s:0`), as k6's ramping executors read them:
//! each stage moves the target (VUs in the closed model, requests per second in the
//! open model) linearly from where the previous stage ended to its own value, starting
//! from 0. This module only computes; the scheduler and the VUs ask it questions.

use std::time::Duration;

/// One stage: reach `target` by the end of `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub duration: Duration,
    pub target: f64,
}

/// Why a stages text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("stages '{text}': {reason} (expected e.g. '30s:10,2m:100,30s:0')")]
pub struct StagesError {
    pub text: String,
    pub reason: String,
}

/// Parses `DUR:TARGET,DUR:TARGET,…`.
pub fn parse(text: &str) -> Result<Vec<Stage>, StagesError> {
    let err = |reason: String| StagesError {
        text: text.to_string(),
        reason,
    };
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (d, t) = part
            .split_once(':')
            .ok_or_else(|| err(format!("'{part}' has no ':'")))?;
        let duration = crate::units::parse_duration(d.trim()).map_err(err)?;
        let target: f64 = t
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| err(format!("'{}' is not a number ≥ 0", t.trim())))?;
        out.push(Stage { duration, target });
    }
    if out.is_empty() {
        return Err(err("no stage given".into()));
    }
    if out.iter().all(|s| s.target == 0.0) {
        return Err(err("every target is 0".into()));
    }
    if out.iter().all(|s| s.duration.is_zero()) {
        return Err(err("the stages last 0s: give a stage a duration".into()));
    }
    Ok(out)
}

/// The stages as one piecewise-linear function of time.
#[derive(Debug, Clone, PartialEq)]
pub struct Ramp {
    /// (start offset, end offset, value at start, value at end), in seconds.
    segments: Vec<(f64, f64, f64, f64)>,
}

impl Ramp {
    /// A ramp through `stages`, starting from 0.
    pub fn new(stages: &[Stage]) -> Ramp {
        let mut segments = Vec::with_capacity(stages.len());
        let (mut t, mut v) = (0.0, 0.0);
        for s in stages {
            let d = s.duration.as_secs_f64();
            segments.push((t, t + d, v, s.target));
            t += d;
            v = s.target;
        }
        Ramp { segments }
    }

    /// A constant value for `duration` (None: for ever).
    pub fn constant(value: f64, duration: Option<Duration>) -> Ramp {
        let end = duration.map_or(f64::INFINITY, |d| d.as_secs_f64());
        Ramp {
            segments: vec![(0.0, end, value, value)],
        }
    }

    /// Total length, seconds (infinite for a constant ramp without duration).
    pub fn total(&self) -> f64 {
        self.segments.last().map_or(0.0, |s| s.1)
    }

    /// The largest value anywhere.
    pub fn peak(&self) -> f64 {
        self.segments
            .iter()
            .map(|s| s.2.max(s.3))
            .fold(0.0, f64::max)
    }

    /// The value at `t` seconds (0 past the end).
    pub fn at(&self, t: f64) -> f64 {
        for &(a, b, va, vb) in &self.segments {
            if t >= a && t < b {
                if !b.is_finite() || b == a {
                    return va;
                }
                return va + (vb - va) * (t - a) / (b - a);
            }
        }
        0.0
    }

    /// The first time ≥ `from` at which the value is above `level` (None: never again).
    pub fn next_above(&self, level: f64, from: f64) -> Option<f64> {
        for &(a, b, va, vb) in &self.segments {
            if b <= from {
                continue;
            }
            let start = a.max(from);
            if self.at(start) > level {
                return Some(start);
            }
            if vb > level && b.is_finite() {
                // va + (vb - va) * x = level → x; a hair past it.
                let x = (level - va) / (vb - va);
                let t = a + x * (b - a) + 1e-6;
                if t < b {
                    return Some(t.max(start));
                }
            }
        }
        None
    }

    /// The time (seconds) at which the `k`-th event (0-based) is due when the value is
    /// a rate per second: the `k`-th arrival happens when the integral reaches `k`.
    /// None past the end.
    pub fn arrival(&self, k: f64) -> Option<f64> {
        let mut acc = 0.0;
        for &(a, b, va, vb) in &self.segments {
            let d = b - a;
            let area = if d.is_finite() {
                (va + vb) / 2.0 * d
            } else {
                f64::INFINITY
            };
            if acc + area > k || (k == 0.0 && va > 0.0) {
                let need = k - acc;
                // Solve va·x + (vb − va)/(2d)·x² = need for x in [0, d].
                let slope = if d.is_finite() && d > 0.0 {
                    (vb - va) / d
                } else {
                    0.0
                };
                let x = if slope.abs() < 1e-12 {
                    if va <= 0.0 {
                        return None;
                    }
                    need / va
                } else {
                    let disc = va * va + 2.0 * slope * need;
                    (-va + disc.max(0.0).sqrt()) / slope
                };
                return Some(a + x.clamp(0.0, d));
            }
            acc += area;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_interpolates() {
        let s = parse("10s:10, 10s:10,5s:0").unwrap();
        assert_eq!(s.len(), 3);
        let r = Ramp::new(&s);
        assert_eq!(r.total(), 25.0);
        assert!((r.at(5.0) - 5.0).abs() < 1e-9);
        assert!((r.at(15.0) - 10.0).abs() < 1e-9);
        assert!((r.at(22.5) - 5.0).abs() < 1e-9);
        assert_eq!(r.at(30.0), 0.0);
        assert_eq!(r.peak(), 10.0);
        assert!(parse("10s").is_err());
        assert!(parse("x:1").is_err());
        assert!(parse("1s:-1").is_err());
        assert!(parse("1s:0").is_err());
    }

    #[test]
    fn next_above_finds_activation() {
        let r = Ramp::new(&parse("10s:10,10s:0").unwrap());
        let t = r.next_above(4.0, 0.0).unwrap();
        assert!((t - 4.0).abs() < 1e-3, "{t}");
        assert_eq!(r.next_above(4.0, 5.0), Some(5.0));
        assert_eq!(r.next_above(10.0, 0.0), None);
        assert_eq!(r.next_above(4.0, 17.0), None);
    }

    #[test]
    fn arrivals_follow_the_integral() {
        let c = Ramp::constant(100.0, Some(Duration::from_secs(2)));
        assert_eq!(c.arrival(0.0), Some(0.0));
        assert!((c.arrival(150.0).unwrap() - 1.5).abs() < 1e-9);
        assert_eq!(c.arrival(200.0), None);
        // 0 → 100/s over 2 s: 100 arrivals in total; the 25th at t = 1 s.
        let r = Ramp::new(&parse("2s:100").unwrap());
        assert!((r.arrival(25.0).unwrap() - 1.0).abs() < 1e-6);
        assert_eq!(r.arrival(100.0), None);
        let forever = Ramp::constant(10.0, None);
        assert!((forever.arrival(1e6).unwrap() - 1e5).abs() < 1e-3);
    }
}
