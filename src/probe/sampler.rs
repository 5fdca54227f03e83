//! Adaptive, interleaved sampling, the way hyperfine and Criterion decide how many
//! runs they need: the probe takes rounds (a fresh and a reused sample each, `run`)
//! of every target it compares — the URL and its origin (`--origin`) — alternating
//! which goes first, so drift on the path or the machine hits both series alike. It
//! takes at least `min_rounds` clean rounds (a round during which latscope waited for
//! a CPU is re-taken: `noise`), then asks the caller whether the deciding quantities
//! are settled (diagnose: no finding is still undecided) and takes more rounds until
//! they are, or until `max_rounds` or `max_time`. How it ended is in each result's
//! `sampling`. HTTP/3 and `tcp://` targets are probed one after the other, as before.
//! Nothing here prints.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::result::ProbeResult;
use super::run::{ProbeConfig, Runner};
use super::stop::Stop;
use crate::net::{NetError, Scheme};

/// How many rounds to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampling {
    /// Clean rounds to take at least (`-n`).
    pub min_rounds: u32,
    /// Rounds to take at most, re-taken ones included.
    pub max_rounds: u32,
    /// No round starts once this much time has passed since the first.
    pub max_time: Duration,
}

/// Rounds at most, as a multiple of `-n`, when sampling adapts…
pub const ADAPTIVE_FACTOR: u32 = 5;
/// …but never fewer than this many.
pub const ADAPTIVE_MIN_MAX: u32 = 40;
/// No round of an adaptive sampling starts after this much time.
pub const ADAPTIVE_MAX_TIME: Duration = Duration::from_secs(20);

impl Sampling {
    /// Exactly `n` clean rounds (each disturbed one re-taken, up to `n` more).
    pub fn fixed(n: u32) -> Sampling {
        Sampling {
            min_rounds: n,
            max_rounds: n.saturating_mul(2).max(n),
            max_time: Duration::MAX,
        }
    }

    /// At least `n` clean rounds, more until the caller is satisfied: at most
    /// [`ADAPTIVE_FACTOR`] × n rounds (≥ [`ADAPTIVE_MIN_MAX`]) and
    /// [`ADAPTIVE_MAX_TIME`].
    pub fn adaptive(n: u32) -> Sampling {
        Sampling {
            min_rounds: n,
            max_rounds: n
                .saturating_mul(ADAPTIVE_FACTOR)
                .max(ADAPTIVE_MIN_MAX)
                .max(n),
            max_time: ADAPTIVE_MAX_TIME,
        }
    }
}

/// How a probe's sampling went (the probe JSON's `sampling`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingReport {
    /// Rounds taken (a fresh and a reused sample each), re-taken ones included.
    pub rounds: u32,
    /// Of them, rounds during which latscope waited for a CPU (left out, re-taken).
    pub retaken: u32,
    /// The bounds: at least this many clean rounds, at most `max_rounds` rounds and
    /// `max_time_s` seconds (null: no time bound).
    pub min_rounds: u32,
    pub max_rounds: u32,
    pub max_time_s: Option<f64>,
    /// Why sampling stopped: "decided" (the deciding quantities were settled),
    /// "fixed" (no adaptation asked), "max-rounds", "max-time", "interrupted",
    /// "failed" (nothing answered).
    pub stopped: String,
    /// The other targets sampled in the same rounds, alternating with this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interleaved_with: Vec<String>,
    /// Time the rounds took, s.
    pub seconds: f64,
}

/// Samples every target of `configs` in interleaved rounds (see the module doc);
/// `decided` is asked, with the results so far (in `configs` order), whether the
/// deciding quantities are settled. One result per config: the first error of a
/// target that never answered.
pub async fn sample(
    configs: &[ProbeConfig],
    sampling: &Sampling,
    stop: &Stop,
    decided: &mut (dyn FnMut(&[ProbeResult]) -> bool + Send),
) -> Vec<Result<ProbeResult, NetError>> {
    if configs.len() > 1 && configs.iter().any(|c| c.client.http3) {
        let mut out = Vec::new();
        for c in configs {
            let one = Box::pin(sample(std::slice::from_ref(c), sampling, stop, decided)).await;
            out.extend(one);
        }
        return out;
    }
    if let [c] = configs {
        if c.client.http3 {
            return vec![super::run_h3::probe(c, stop).await];
        }
    }
    let mut runners: Vec<Result<Runner<'_>, NetError>> =
        configs.iter().map(|c| Runner::new(c, stop)).collect();
    let start = Instant::now();
    let (mut rounds, mut retaken) = (0u32, 0u32);
    let mut clean = vec![0u32; configs.len()];
    let mut next_check = sampling.min_rounds;
    let adaptive = sampling.max_rounds > sampling.min_rounds.saturating_mul(2);
    let stopped = loop {
        if stop.is_stopped() {
            break "interrupted";
        }
        let live: Vec<usize> = (0..runners.len())
            .filter(|&i| runners[i].as_ref().is_ok_and(|r| !r.done()))
            .collect();
        if live.is_empty() {
            break "failed";
        }
        let least = live.iter().map(|&i| clean[i]).min().unwrap_or(0);
        // A disturbed round is re-taken up to `min_rounds` more times; past that the
        // machine is busy all the time (a large body over a wire on this machine
        // waits for a CPU on every round), and sampling goes on as if every round
        // were clean: `noise::keep_enough` keeps the disturbed samples of a series
        // too short without them, so waiting for clean ones would only run to
        // `max_time`.
        let enough = least >= sampling.min_rounds
            || (adaptive && rounds >= sampling.min_rounds.saturating_mul(2));
        if enough {
            if !adaptive {
                break "fixed";
            }
            if rounds >= next_check {
                let snaps: Vec<ProbeResult> = runners
                    .iter()
                    .filter_map(|r| r.as_ref().ok().map(Runner::snapshot))
                    .collect();
                if snaps.len() == runners.len() && decided(&snaps) {
                    break "decided";
                }
                // Check again after a tenth more rounds: the interval narrows
                // slowly, and judging costs more than a loopback round.
                next_check = rounds + (rounds / 10).max(1);
            }
        }
        if rounds >= sampling.max_rounds {
            break "max-rounds";
        }
        if start.elapsed() >= sampling.max_time {
            break "max-time";
        }
        // ABBA: the first target leads in even rounds, the last in odd ones.
        let order: Vec<usize> = if rounds % 2 == 0 {
            live.clone()
        } else {
            live.iter().rev().copied().collect()
        };
        let mut disturbed = false;
        for i in order {
            let Ok(runner) = runners[i].as_mut() else {
                continue;
            };
            let ok = if runner.is_ping() {
                runner.ping_once().await;
                true
            } else {
                runner.round().await
            };
            if ok {
                clean[i] += 1;
            } else {
                disturbed = true;
            }
        }
        retaken += u32::from(disturbed);
        rounds += 1;
    };
    let seconds = start.elapsed().as_secs_f64();
    let mut out = Vec::with_capacity(runners.len());
    for (i, r) in runners.into_iter().enumerate() {
        let mut runner = match r {
            Ok(r) => r,
            Err(e) => {
                out.push(Err(e));
                continue;
            }
        };
        if configs[i].target.scheme == Scheme::Https && !stop.is_stopped() {
            runner.resumed_series().await;
        }
        out.push(runner.finish().map(|mut p| {
            p.sampling = Some(SamplingReport {
                rounds,
                retaken,
                min_rounds: sampling.min_rounds,
                max_rounds: sampling.max_rounds,
                max_time_s: (sampling.max_time != Duration::MAX)
                    .then_some(sampling.max_time.as_secs_f64()),
                stopped: stopped.to_string(),
                interleaved_with: configs
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, c)| c.target.url.clone())
                    .collect(),
                seconds: (seconds * 1000.0).round() / 1000.0,
            });
            p
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fixed sampling re-takes up to n rounds; adaptive allows 5 n (at least 40)
    /// within 20 s.
    #[test]
    fn bounds() {
        let f = Sampling::fixed(10);
        assert_eq!((f.min_rounds, f.max_rounds), (10, 20));
        let a = Sampling::adaptive(10);
        assert_eq!((a.min_rounds, a.max_rounds), (10, 50));
        assert_eq!(Sampling::adaptive(3).max_rounds, 40);
        assert_eq!(a.max_time, Duration::from_secs(20));
    }
}
