//! `latscope demo`'s lab: the problems it plants (a 40 ms round trip on the wire, a
//! cold start, cookies that defeat caching, no validators, uncompressed text, a
//! server that saturates, periodic stalls), the finding that must show each, and the
//! tally of a diagnosis' findings against them.

use std::time::Duration;

use super::{LabOptions, StallOptions};

/// The round trip the demo's wire adds.
pub const RTT: Duration = Duration::from_millis(40);

/// The demo's routes, and whether each is ramped under load.
pub const ROUTES: [(&str, bool); 3] = [
    ("/cold", false),
    ("/cache/no-validators", false),
    ("/cache/private-cookie", true),
];

/// What the lab plants, for the line that introduces the run.
pub fn described(with_wire: bool) -> &'static str {
    if with_wire {
        "40 ms RTT, cold start, cookies, no validators, uncompressed text, 100 req/s capacity, a 0.5 s stall every 3 s"
    } else {
        "cold start, cookies, no validators, uncompressed text, 100 req/s capacity, a 0.5 s stall every 3 s"
    }
}

/// How often the lab stalls.
pub const STALL_EVERY: Duration = Duration::from_secs(3);

/// The demo's ramp steps last one stall period, so every step holds the same share of
/// stall (0.5 s in 3 s) wherever the stalls fall: with shorter steps a step with a
/// stall lost a quarter of its throughput and one without none, and on a busy machine,
/// where the phase shifts, the knee hid behind that difference.
pub const RAMP_STEP: Duration = STALL_EVERY;

/// The lab's problems.
pub fn lab_options() -> LabOptions {
    LabOptions {
        capacity: Some(100.0),
        stall: Some(StallOptions {
            every: STALL_EVERY,
            length: Duration::from_millis(500),
        }),
        cold: Duration::from_millis(1500),
        ..LabOptions::default()
    }
}

/// What the demo plants, and the finding that must show each.
pub fn planted(with_wire: bool) -> Vec<&'static str> {
    let mut ids = vec![
        "cold-start",
        "not-shared-cacheable",
        "no-validators",
        "no-compression",
        "knee",
        "periodic-spikes",
    ];
    if with_wire {
        ids.push("handshake-dominates");
    }
    ids
}

/// Findings that follow from a planted problem without being one, and what they
/// follow from.
pub const FOLLOWS: &[(&str, &str)] = &[
    ("network-dominates", "the 40 ms round trip"),
    ("tail-heavy", "the periodic stalls"),
    ("errors-under-load", "the saturating server"),
];

/// The findings of a demo run against what it planted.
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    pub planted: Vec<String>,
    /// Planted, not found.
    pub missing: Vec<String>,
    /// Found, neither planted nor following from a planted problem.
    pub unexpected: Vec<String>,
    /// Found, following from a planted problem: (id, what it follows from).
    pub follows: Vec<(String, String)>,
}

/// `found` (finding ids, repeats allowed) against what the demo planted.
pub fn tally(found: &[&str], with_wire: bool) -> Tally {
    let planted = planted(with_wire);
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let missing: Vec<&str> = planted
        .iter()
        .copied()
        .filter(|id| !found.contains(id))
        .collect();
    let mut unexpected: Vec<&str> = found
        .iter()
        .copied()
        .filter(|id| !planted.contains(id) && !FOLLOWS.iter().any(|(f, _)| f == id))
        .collect();
    unexpected.sort_unstable();
    unexpected.dedup();
    Tally {
        planted: owned(&planted),
        missing: owned(&missing),
        unexpected: owned(&unexpected),
        follows: FOLLOWS
            .iter()
            .filter(|(id, _)| found.contains(id))
            .map(|(id, why)| (id.to_string(), why.to_string()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_names_what_is_missing_what_follows_and_what_was_not_planted() {
        let t = tally(
            &["cold-start", "knee", "tail-heavy", "slow-dns", "slow-dns"],
            true,
        );
        assert!(t.missing.contains(&"no-validators".to_string()));
        assert!(t.missing.contains(&"handshake-dominates".to_string()));
        assert!(!t.missing.contains(&"knee".to_string()));
        assert_eq!(t.unexpected, ["slow-dns"]);
        assert_eq!(
            t.follows,
            [("tail-heavy".to_string(), "the periodic stalls".to_string())]
        );
        // Without the wire, the handshake is not planted.
        assert!(!tally(&[], false)
            .planted
            .contains(&"handshake-dominates".to_string()));
    }
}
