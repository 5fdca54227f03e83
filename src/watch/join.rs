//! The scrapes joined to the load's timeline by wall clock. Two back-to-back
//! successful scrapes of one target make an interval; its rates (counter increase
//! over its length) and its end's gauges belong to the second of the timeline its
//! middle falls in (second t spans `started + t` … `started + t + 1`). An interval
//! that spans a failed scrape, or is shorter than 0.2 s or longer than 2.5 s, is not
//! used, nor one that held none of the series latscope reads: that second is a
//! gap. With several targets each field comes from the first
//! `--watch` target (in flag order) that had it that second.

use std::time::{Duration, SystemTime};

use super::{Reading, Selector, ServerSecond, TargetLog};

/// Intervals outside these bounds are not turned into rates.
const MIN_INTERVAL: Duration = Duration::from_millis(200);
const MAX_INTERVAL: Duration = Duration::from_millis(2500);

/// One entry per second of a timeline that started at `started` (None: no target
/// had a usable interval in it).
pub fn server_seconds(
    logs: &[TargetLog],
    metrics: &[Selector],
    started: SystemTime,
    count: usize,
) -> Vec<Option<ServerSecond>> {
    let mut out: Vec<Option<ServerSecond>> = vec![None; count];
    for log in logs {
        for pair in log.scrapes.windows(2) {
            let (Some(a), Some(b)) = (&pair[0].reading, &pair[1].reading) else {
                continue;
            };
            let Ok(dt) = pair[1].at.duration_since(pair[0].at) else {
                continue;
            };
            if !(MIN_INTERVAL..=MAX_INTERVAL).contains(&dt) {
                continue;
            }
            let mid = pair[0].at + dt / 2;
            let Ok(offset) = mid.duration_since(started) else {
                continue;
            };
            let t = offset.as_secs() as usize;
            if t >= count {
                continue;
            }
            let s = interval(a, b, dt.as_secs_f64(), metrics);
            if s == ServerSecond::default() {
                continue; // nothing latscope reads (not an exporter): a gap
            }
            // A later interval in the same second (the last scrape at the stop)
            // refines what this target said; an earlier target keeps precedence.
            let slot = out[t].get_or_insert_with(ServerSecond::default);
            fill(slot, &s);
        }
    }
    out
}

/// Sets every field of `into` that is still unset.
fn fill(into: &mut ServerSecond, from: &ServerSecond) {
    let f = |a: &mut Option<f64>, b: Option<f64>| {
        if a.is_none() {
            *a = b;
        }
    };
    f(&mut into.cpu_pct, from.cpu_pct);
    f(&mut into.iowait_pct, from.iowait_pct);
    f(&mut into.steal_pct, from.steal_pct);
    f(&mut into.load1, from.load1);
    f(&mut into.mem_available_bytes, from.mem_available_bytes);
    f(&mut into.retrans, from.retrans);
    f(&mut into.listen_overflows, from.listen_overflows);
    f(&mut into.listen_drops, from.listen_drops);
    f(&mut into.syn_retrans, from.syn_retrans);
    f(&mut into.tcp_inuse, from.tcp_inuse);
    for (k, v) in &from.metrics {
        into.metrics.entry(k.clone()).or_insert(*v);
    }
}

/// What one interval says.
fn interval(a: &Reading, b: &Reading, dt: f64, metrics: &[Selector]) -> ServerSecond {
    // A counter that went down was reset (a restart): no rate this time.
    let rate = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) if y >= x => Some((y - x) / dt),
        _ => None,
    };
    let delta = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) if y >= x => Some(y - x),
        _ => None,
    };
    let total = delta(a.cpu_total, b.cpu_total).filter(|d| *d > 0.0);
    let share = |d: Option<f64>| total.zip(d).map(|(t, d)| (100.0 * d / t).clamp(0.0, 100.0));
    let (idle, iowait, steal) = (
        delta(a.cpu_idle, b.cpu_idle),
        delta(a.cpu_iowait, b.cpu_iowait),
        delta(a.cpu_steal, b.cpu_steal),
    );
    let busy = total
        .zip(idle)
        .map(|(t, i)| (t - i - iowait.unwrap_or(0.0) - steal.unwrap_or(0.0)).max(0.0));
    let mut out = ServerSecond {
        cpu_pct: share(busy),
        iowait_pct: share(iowait),
        steal_pct: share(steal),
        load1: b.load1,
        mem_available_bytes: b.mem_available,
        retrans: rate(a.retrans, b.retrans),
        listen_overflows: rate(a.listen_overflows, b.listen_overflows),
        listen_drops: rate(a.listen_drops, b.listen_drops),
        syn_retrans: rate(a.syn_retrans, b.syn_retrans),
        tcp_inuse: b.tcp_inuse,
        metrics: Default::default(),
    };
    for (i, m) in metrics.iter().enumerate() {
        let (x, y) = (
            a.metrics.get(i).copied().flatten(),
            b.metrics.get(i).copied().flatten(),
        );
        let v = match (x, y) {
            (Some((x, true)), Some((y, _))) => rate(Some(x), Some(y)),
            (_, Some((y, false))) => Some(y),
            _ => None,
        };
        if let Some(v) = v {
            out.metrics.insert(m.to_string(), v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::Scrape;
    use super::*;

    fn reading(cpu_idle: f64, cpu_total: f64, retrans: f64, q: f64) -> Reading {
        Reading {
            cpu_total: Some(cpu_total),
            cpu_idle: Some(cpu_idle),
            cpu_iowait: Some(0.0),
            cpu_steal: Some(0.0),
            retrans: Some(retrans),
            load1: Some(1.0),
            metrics: vec![Some((q, true))],
            ..Default::default()
        }
    }

    /// Scrapes a second apart become per-second rates in the second their interval's
    /// middle falls in; a failed scrape leaves a gap; a counter reset gives no rate.
    #[test]
    fn intervals_land_in_their_seconds() {
        let s0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let at = |ms: u64| s0 + Duration::from_millis(ms);
        let log = TargetLog {
            scrapes: vec![
                Scrape {
                    at: at(0),
                    reading: Some(reading(0.0, 0.0, 0.0, 0.0)),
                },
                // 2 CPUs over 1 s: 2 CPU-seconds, 0.5 idle → 75 % busy; 10 retrans.
                Scrape {
                    at: at(1000),
                    reading: Some(reading(0.5, 2.0, 10.0, 5.0)),
                },
                Scrape {
                    at: at(2000),
                    reading: None,
                },
                Scrape {
                    at: at(3000),
                    reading: Some(reading(1.0, 6.0, 20.0, 1.0)),
                },
                Scrape {
                    at: at(4000),
                    reading: Some(reading(2.0, 8.0, 20.0, 3.0)),
                },
            ],
            last_error: Some("connection refused".into()),
        };
        let m = [Selector::parse("q_total").unwrap()];
        let secs = server_seconds(&[log], &m, s0, 5);
        let first = secs[0].as_ref().expect("second 0");
        assert_eq!(first.cpu_pct, Some(75.0));
        assert_eq!(first.retrans, Some(10.0));
        assert_eq!(first.metrics["q_total"], 5.0);
        assert!(
            secs[1].is_none() && secs[2].is_none(),
            "the failed scrape is a gap"
        );
        let fourth = secs[3].as_ref().expect("second 3");
        assert_eq!(fourth.cpu_pct, Some(50.0));
        assert_eq!(fourth.retrans, Some(0.0));
        assert_eq!(fourth.metrics["q_total"], 2.0);
        assert!(secs[4].is_none());
    }
}
