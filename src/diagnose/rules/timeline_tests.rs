//! Unit tests of the timeline rules on constructed timelines.

use super::*;

/// A run of `n` seconds, 100 requests each, p99 from `p99(t)`.
fn timeline(n: u32, p99: impl Fn(u32) -> f64) -> Vec<Second> {
    (0..n)
        .map(|t| Second {
            t,
            requests: 100,
            p50_ms: 5.0,
            p99_ms: p99(t),
            ..Second::default()
        })
        .collect()
}

/// Deterministic noise in [0, 1).
fn noise(t: u32) -> f64 {
    let x = (t as u64 + 1)
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((x >> 33) % 1000) as f64 / 1000.0
}

/// Stalls every 5 s (seconds 3, 8, 13, …; some spilling over two seconds) give a
/// period of 5 s.
#[test]
fn stalls_every_five_seconds() {
    let tl = timeline(30, |t| match t % 5 {
        3 => 800.0 + 100.0 * noise(t),
        4 if t == 9 => 400.0,
        _ => 10.0 + 4.0 * noise(t),
    });
    let s = detect_spikes(&tl);
    assert_eq!(s.onsets, [3, 8, 13, 18, 23, 28]);
    assert_eq!(s.period_s, Some(5.0));
    let l = LoadFacts {
        timeline: tl,
        ..LoadFacts::default()
    };
    let f = periodic_spikes(&l).expect("fires");
    assert_eq!(f.evidence_f64("period_s"), Some(5.0));
    assert_eq!(f.evidence_f64("spikes"), Some(6.0));
    assert_eq!(
        f.evidence_str("spike_times_s"),
        Some("3, 8, 13, 18, 23, 28")
    );
}

/// A ramp whose p99 climbs step by step (a knee) is not a spike train; stalls on
/// top of it still are.
#[test]
fn ramp_is_not_spikes() {
    let step = |t: u32| 10.0 * 2f64.powi((t / 4) as i32);
    let s = detect_spikes(&timeline(28, step));
    assert!(s.onsets.is_empty(), "{:?}", s.onsets);
    let s = detect_spikes(&timeline(28, |t| {
        if t % 4 == 1 {
            step(t) * 10.0 + 500.0
        } else {
            step(t)
        }
    }));
    assert_eq!(s.period_s, Some(4.0));
}

/// A stall every 2 s spikes half of the seconds: still a period of 2 s (the lab's
/// `--stall-every 2s --stall-for 400ms` over an 8 s step).
#[test]
fn stalls_every_two_seconds() {
    let tl = timeline(9, |t| {
        if t % 2 == 0 && t > 0 {
            400.0 + 20.0 * noise(t)
        } else {
            21.0 + 4.0 * noise(t)
        }
    });
    let s = detect_spikes(&tl);
    assert_eq!(s.onsets, [2, 4, 6, 8]);
    assert_eq!(s.period_s, Some(2.0));
}

/// The same 8 s step as CI measured it on a busy machine: per-second p99 22, 22, 415,
/// 192, 423, 22, 405, 404 ms. Seconds 2–4 are all spikes, but 3 is a valley between
/// two (a stall's tail): three spikes 2 s apart, not one 3 s spike and one more. A
/// run that stays up (a stall spilling over two seconds, 415 then 400) is one spike.
#[test]
fn a_valley_between_spikes_splits_them() {
    let ci = [22.0, 22.0, 415.0, 192.0, 423.0, 22.0, 405.0, 404.0];
    let s = detect_spikes(&timeline(8, |t| ci[t as usize]));
    assert_eq!(s.onsets, [2, 4, 6]);
    assert_eq!(s.period_s, Some(2.0));
    let l = LoadFacts {
        timeline: timeline(8, |t| ci[t as usize]),
        ..LoadFacts::default()
    };
    assert_eq!(
        periodic_spikes(&l).expect("fires").evidence_f64("spikes"),
        Some(3.0)
    );
    // No valley: 300 is not 1.5× below 415 and 423.
    let up = [22.0, 22.0, 415.0, 300.0, 423.0, 22.0, 405.0, 404.0];
    assert_eq!(
        detect_spikes(&timeline(8, |t| up[t as usize])).onsets,
        [2, 6]
    );
}

/// The demo's ramp (2 s steps up to 32 connections against 100 req/s, a 0.5 s
/// stall every 3 s; each step ends in a partial second): the stalls are spikes,
/// the p99 climbing with concurrency is not.
#[test]
fn stalls_on_a_saturating_ramp() {
    let seconds = [
        (22, 82.0),
        (18, 45.0),
        (1, 537.0),
        (45, 94.0),
        (48, 42.0),
        (2, 42.0),
        (41, 534.0),
        (95, 74.0),
        (4, 42.0),
        (92, 152.0),
        (55, 573.0),
        (8, 112.0),
        (92, 232.0),
        (100, 171.0),
        (16, 161.0),
        (70, 650.0),
        (100, 324.0),
        (32, 322.0),
    ];
    let tl: Vec<Second> = seconds
        .iter()
        .enumerate()
        .map(|(t, (requests, p99))| Second {
            t: t as u32,
            requests: *requests,
            p99_ms: *p99,
            ..Second::default()
        })
        .collect();
    let s = detect_spikes(&tl);
    // The fourth stall (second 15: 650 ms between 161 and 324) stands out from
    // its neighbours although its ±5 s baseline holds the knee's climb.
    assert_eq!(s.onsets, [2, 6, 10, 15]);
    assert_eq!(s.period_s, Some(4.3));
}

/// The demo's ramp as measured (2 s steps of 1 … 32 connections over a 40 ms RTT
/// against 100 req/s, a 0.5 s stall every 3 s), at the phase where the third stall
/// falls past the knee: its ±5 s baseline holds the queue's climb, so only the drop
/// after it tells it (up ≥ 3× the second before, back down ≥ 1.5× in the one after).
/// A ramp that climbs and stays up is no spike.
#[test]
fn stalls_past_a_ramps_knee() {
    let p99 = [
        82.0, 42.0, 531.0, 45.0, 113.0, 541.0, 152.0, 575.0, 232.0, 161.0, 807.0, 342.0,
    ];
    let s = detect_spikes(&timeline(12, |t| p99[t as usize]));
    assert_eq!(s.onsets, [2, 5, 7, 10]);
    assert_eq!(s.period_s, Some(2.7));
    let climb = [
        40.0, 40.0, 80.0, 80.0, 160.0, 160.0, 320.0, 320.0, 640.0, 640.0,
    ];
    let s = detect_spikes(&timeline(10, |t| climb[t as usize]));
    assert!(s.onsets.is_empty(), "{:?}", s.onsets);
}

/// A fast route (p50 0.05 ms, p99 1 ms, max ≈ 3 ms) stalled for 500 ms every
/// 3 s: p99 does not move, each stalled second's max is ≈ 505 ms — a max spike
/// with the stall's period. The same route without stalls, and max "spikes" of
/// 30 ms (under the 50 ms floor), are quiet.
#[test]
fn max_spikes_on_a_fast_route() {
    let fast = |stall: &dyn Fn(u32) -> Option<f64>| -> Vec<Second> {
        (0..15)
            .map(|t| Second {
                t,
                requests: if stall(t).is_some() { 75_000 } else { 150_000 },
                p50_ms: 0.05,
                p99_ms: 1.0 + 0.05 * noise(t),
                max_ms: stall(t).unwrap_or(2.0 + 2.0 * noise(t)),
                ..Second::default()
            })
            .collect()
    };
    let tl = fast(&|t| (t % 3 == 2).then(|| 505.0 + noise(t)));
    let s = detect_spikes(&tl);
    assert_eq!(s.onsets, [2, 5, 8, 11, 14]);
    assert_eq!(s.period_s, Some(3.0));
    assert_eq!(s.what(), "max");
    let f = periodic_spikes(&LoadFacts {
        timeline: tl,
        ..LoadFacts::default()
    })
    .expect("fires");
    assert_eq!(f.evidence_f64("period_s"), Some(3.0));
    assert_eq!(f.evidence_str("spiked"), Some("max"));
    assert!(f.evidence_f64("max_ms").unwrap() >= 505.0);
    assert!(f.evidence_f64("median_max_ms").unwrap() < 5.0);
    assert!(f.title.contains("every ≈3 s"), "{}", f.title);
    assert!(f.title.contains("slowest request"), "{}", f.title);
    // A stall every 2 s: half of the seconds spike; still a period of 2 s, and the
    // typical max is that of the seconds without a stall.
    let s = detect_spikes(&fast(&|t| (t % 2 == 1).then_some(305.0)));
    assert_eq!(s.period_s, Some(2.0));
    assert!(s.median_max_ms < 5.0, "{}", s.median_max_ms);
    let s = detect_spikes(&fast(&|_| None));
    assert!(s.onsets.is_empty(), "{:?}", s.onsets);
    let s = detect_spikes(&fast(&|t| (t % 3 == 2).then_some(30.0)));
    assert!(s.onsets.is_empty(), "under the 50 ms floor: {:?}", s.onsets);
}

/// A slow first second (connection set-up) and a trailing second of two
/// stragglers (the grace after the run) are not max spikes.
#[test]
fn first_second_and_stragglers_are_not_max_spikes() {
    let mut tl: Vec<Second> = (0..10)
        .map(|t| Second {
            t,
            requests: 150_000,
            p50_ms: 0.05,
            p99_ms: 1.0,
            max_ms: 2.0 + noise(t),
            ..Second::default()
        })
        .collect();
    tl[0].max_ms = 400.0;
    tl.push(Second {
        t: 10,
        requests: 2,
        p50_ms: 900.0,
        p99_ms: 900.0,
        max_ms: 900.0,
        ..Second::default()
    });
    let s = detect_spikes(&tl);
    assert!(!s.max_spiked, "{:?}", s.seconds);
}

/// A slow route's max varies with its p99: a 20 ms route with maxima of 25-45 ms
/// has no max spikes (under 10× the typical max).
#[test]
fn max_noise_on_a_slow_route_is_quiet() {
    let tl: Vec<Second> = (0..30)
        .map(|t| Second {
            t,
            requests: 100,
            p50_ms: 20.0,
            p99_ms: 22.0,
            max_ms: if t % 4 == 1 { 45.0 } else { 25.0 },
            ..Second::default()
        })
        .collect();
    assert!(detect_spikes(&tl).onsets.is_empty());
}

/// A second with no completed request amid busy ones is a stall, hence a spike.
#[test]
fn empty_seconds_are_stalls() {
    let mut tl = timeline(20, |_| 10.0);
    for t in [4, 10, 16] {
        tl[t].requests = 0;
        tl[t].p99_ms = 0.0;
    }
    assert_eq!(detect_spikes(&tl).period_s, Some(6.0));
}

/// Random noise, irregular spikes, too few spikes and tiny loopback spikes give
/// no period.
#[test]
fn no_period_in_noise() {
    let s = detect_spikes(&timeline(60, |t| 10.0 + 8.0 * noise(t)));
    assert!(s.onsets.is_empty());
    let irregular = [3, 11, 13, 27, 40];
    let s = detect_spikes(&timeline(50, |t| {
        if irregular.contains(&t) {
            500.0
        } else {
            10.0
        }
    }));
    assert_eq!(s.onsets, irregular);
    assert_eq!(s.period_s, None);
    let s = detect_spikes(&timeline(
        30,
        |t| if t == 5 || t == 10 { 500.0 } else { 10.0 },
    ));
    assert_eq!(s.period_s, None, "two spikes are not a period");
    // 0.3 ms median, 3 ms "spikes" every 5 s: 10× but under the 20 ms floor.
    let s = detect_spikes(&timeline(30, |t| if t % 5 == 0 { 3.0 } else { 0.3 }));
    assert!(s.onsets.is_empty());
    let l = LoadFacts::default();
    assert!(periodic_spikes(&l).is_none());
}

/// Retransmissions at the spike seconds warn; scattered ones away from spikes are
/// info; a handful are quiet.
#[test]
fn retransmits_joined_to_spikes() {
    let mut tl = timeline(30, |t| if t % 10 == 5 { 900.0 } else { 10.0 });
    for t in [5, 15, 25] {
        tl[t].retrans = 40;
    }
    let l = LoadFacts {
        timeline: tl.clone(),
        ..LoadFacts::default()
    };
    let f = retransmits(&l).expect("fires");
    assert_eq!(f.severity, Severity::Warn);
    assert_eq!(f.evidence_f64("total_retrans"), Some(120.0));
    assert_eq!(f.evidence_f64("spikes_with_retrans"), Some(3.0));
    assert_eq!(f.evidence_str("spike_times_s"), Some("5, 15, 25"));
    for t in [5, 15, 25] {
        tl[t].retrans = 0;
    }
    tl[1].retrans = 30;
    let f = retransmits(&LoadFacts {
        timeline: tl.clone(),
        ..LoadFacts::default()
    })
    .unwrap();
    assert_eq!(f.severity, Severity::Info);
    tl[1].retrans = 2;
    assert!(retransmits(&LoadFacts {
        timeline: tl.clone(),
        ..LoadFacts::default()
    })
    .is_none());
    // Issue 12.3/12.9: SYN retransmissions are not data loss; losses that were
    // none of latscope's own connections' are info, and when latscope lost only
    // handshakes, syn-retries speaks instead.
    for t in [5, 15, 25] {
        tl[t].retrans = 40;
        tl[t].syn_retrans = 40;
    }
    assert!(retransmits(&LoadFacts {
        timeline: tl.clone(),
        ..LoadFacts::default()
    })
    .is_none());
    for t in [5, 15, 25] {
        tl[t].syn_retrans = 0;
    }
    let mut l = LoadFacts {
        timeline: tl,
        client_syn_retrans: Some(0),
        client_early_retrans: Some(0),
        client_data_retrans: Some(0),
        ..LoadFacts::default()
    };
    let f = retransmits(&l).unwrap();
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.title.contains("none of them on latscope's own"),
        "{}",
        f.title
    );
    l.client_syn_retrans = Some(9);
    assert!(retransmits(&l).is_none());
}

/// Story 5 rebuilt (issue 12.9): outages 10 s apart, one of them missed (the gaps
/// read [10, 20, 10]) and one stray spike between two: still a period of 10 s.
/// Half-period and double-period readings lose.
#[test]
fn period_tolerates_a_missed_and_a_stray_spike() {
    assert_eq!(find_period(&[5, 15, 35, 45]), Some(10.0));
    assert_eq!(find_period(&[5, 15, 21, 25, 35, 45]), Some(10.0));
    assert_eq!(find_period(&[4, 8, 12, 16, 20, 24]), Some(4.0));
    // Second-granular onsets of a 4 s period that drift by one second.
    assert_eq!(find_period(&[3, 7, 12, 15, 19]), Some(4.0));
    assert_eq!(find_period(&[3, 30]), None);
    assert_eq!(find_period(&[2, 9, 13, 31, 50, 52]), None);
}

/// The outage second of a closed-model run: few requests complete (a collapse,
/// 3 % of the normal count), its stalled requests finish in the next second, and
/// the requests that *started* in it took ≈ 1.4 s. Judged by their start, every
/// outage is a spike even where the completed requests' percentiles show nothing
/// (here the later second's p99 and max are not given); with them, the end-based
/// reading finds the same period one second later. Without outages: quiet. A stall
/// every 2 s of a fast route makes start spikes in even seconds and max spikes in
/// odd ones: read apart, not merged into one run, the period is 2 s.
#[test]
fn outage_seconds_judged_by_started_requests() {
    let run = |outage: bool, end_data: bool| -> Vec<Second> {
        (0..24)
            .map(|t| {
                let hit = outage && t % 4 == 2;
                let after = outage && end_data && t % 4 == 3;
                Second {
                    t,
                    requests: if hit { 6 } else { 200 },
                    p50_ms: 8.0,
                    p99_ms: if after { 1400.0 } else { 12.0 + noise(t) },
                    max_ms: if after { 1450.0 } else { 0.0 },
                    started: if hit { 20 } else { 200 },
                    started_max_ms: if hit { 1450.0 } else { 15.0 + noise(t) },
                    ..Second::default()
                }
            })
            .collect()
    };
    let s = detect_spikes(&run(true, false));
    assert_eq!(s.onsets, [2, 6, 10, 14, 18, 22]);
    assert_eq!(s.period_s, Some(4.0));
    let s = detect_spikes(&run(true, true));
    assert_eq!(s.onsets, [3, 7, 11, 15, 19, 23]);
    assert_eq!(s.period_s, Some(4.0));
    let s = detect_spikes(&run(false, true));
    assert!(s.onsets.is_empty(), "{:?}", s.onsets);
    // The lab's fast route, stalled 500 ms every 2 s (measured).
    let fast: Vec<Second> = (0..8)
        .map(|t| Second {
            t,
            requests: if t % 2 == 1 { 35_000 } else { 70_000 },
            p50_ms: 0.05,
            p99_ms: 0.4,
            max_ms: if t % 2 == 1 { 502.0 } else { 5.0 + noise(t) },
            started: 50_000,
            started_max_ms: if t % 2 == 0 { 502.0 } else { 5.0 + noise(t) },
            ..Second::default()
        })
        .collect();
    assert_eq!(detect_spikes(&fast).period_s, Some(2.0));
}

/// In a scenario, the endpoints that use the stalled backend stall together and
/// healthz does not; the finding names both and states the client's own
/// retransmissions (0: the client path is clean). With the spikes explained by
/// the client's own SYN retransmissions it stays quiet (syn-retries' business).
#[test]
fn endpoints_that_stall_together() {
    let names = ["user", "order", "product", "healthz"];
    let tl: Vec<Second> = (0..24)
        .map(|t| {
            let hit = t % 4 == 2;
            let slow = |i: usize| {
                if hit && i < 3 {
                    1400.0
                } else {
                    5.0 + noise(t + i as u32)
                }
            };
            Second {
                t,
                requests: 200,
                p50_ms: 5.0,
                p99_ms: if hit { 1400.0 } else { 8.0 },
                started: 200,
                started_max_ms: if hit { 1400.0 } else { 8.0 },
                endpoints: (0..4).map(|i| (50, slow(i))).collect(),
                ..Second::default()
            }
        })
        .collect();
    let mut l = LoadFacts {
        timeline: tl,
        endpoints: names.iter().map(|s| s.to_string()).collect(),
        client_syn_retrans: Some(0),
        client_data_retrans: Some(0),
        ..LoadFacts::default()
    };
    let f = periodic_spikes(&l).expect("fires");
    assert_eq!(
        f.evidence_str("stalled_endpoints"),
        Some("user, order, product")
    );
    assert_eq!(f.evidence_str("unaffected_endpoints"), Some("healthz"));
    assert_eq!(f.evidence_f64("client_retrans"), Some(0.0));
    assert!(f.advice.contains("healthz did not"), "{}", f.advice);
    assert!(
        f.advice.contains("the client path is clean"),
        "{}",
        f.advice
    );
    assert!(!f.advice.contains("see retransmits"), "{}", f.advice);
    // The same seconds, but latscope's own connections resent SYNs right there.
    l.client_syn_retrans = Some(12);
    for t in [3, 7, 11, 15, 19, 23] {
        l.timeline[t].client_syn_retrans = 2;
    }
    assert!(periodic_spikes(&l).is_none());
}

/// One isolated spike in a short run: `lone-spike` says a longer run is needed;
/// none, or a regular train, keeps it quiet.
#[test]
fn lone_spike_asks_for_a_longer_run() {
    let mut tl = timeline(12, |t| if t == 7 { 1200.0 } else { 10.0 + noise(t) });
    let l = LoadFacts {
        timeline: tl.clone(),
        ..LoadFacts::default()
    };
    let f = lone_spike(&l).expect("fires");
    assert_eq!(f.evidence_str("spike_times_s"), Some("7"));
    assert!(f.advice.contains("at least 2P"), "{}", f.advice);
    assert!(periodic_spikes(&l).is_none());
    tl[7].p99_ms = 11.0;
    assert!(lone_spike(&LoadFacts {
        timeline: tl,
        ..LoadFacts::default()
    })
    .is_none());
    let train = timeline(30, |t| if t % 5 == 3 { 900.0 } else { 10.0 });
    assert!(lone_spike(&LoadFacts {
        timeline: train,
        ..LoadFacts::default()
    })
    .is_none());
}

/// The spikes' advice always says what the client lost: latscope's own
/// connections when watched (some lost → the way to the server loses packets
/// too), else the host-wide counter — never a bare "see retransmits".
#[test]
fn spikes_state_the_clients_retransmits() {
    let tl = timeline(30, |t| if t % 5 == 3 { 900.0 } else { 10.0 });
    let mut l = LoadFacts {
        timeline: tl,
        client_syn_retrans: Some(1),
        client_early_retrans: Some(0),
        client_data_retrans: Some(6),
        ..LoadFacts::default()
    };
    let f = periodic_spikes(&l).expect("fires");
    assert_eq!(f.evidence_f64("client_retrans"), Some(7.0));
    assert!(f.advice.contains("loses packets too"), "{}", f.advice);
    l.client_data_retrans = None;
    l.client_syn_retrans = None;
    let f = periodic_spikes(&l).expect("fires");
    assert_eq!(f.evidence_f64("client_retrans"), None);
    assert!(
        f.advice
            .contains("no TCP segment was retransmitted on this host"),
        "{}",
        f.advice
    );
    for s in &mut l.timeline {
        s.retrans = 3;
    }
    let f = periodic_spikes(&l).expect("fires");
    assert!(
        f.advice.contains("this host retransmitted 90"),
        "{}",
        f.advice
    );
}
