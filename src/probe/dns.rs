//! A probe's lookups told apart (issue 30 item 2): the first one — what a first
//! visitor's resolver does with its cache cold or expired — and the repeated ones, a
//! returning visitor's, which a caching resolver answers from its cache. Only lookups
//! latscope really made count: not an IP literal, not a `--resolve` override.

use serde::{Deserialize, Serialize};

use super::sample::Sample;

/// The first lookup apart from the repeated ones, ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DnsSummary {
    /// The first request's lookup.
    pub first_ms: f64,
    /// The median lookup of the requests after it that opened a connection.
    pub repeat_p50_ms: f64,
    /// How many lookups that median is of.
    pub repeats: usize,
    /// The address record's TTL as the resolver gave it (its remaining time when it
    /// answered from its cache); absent when latscope did not ask DNS itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_s: Option<u32>,
}

/// The lookups of the successful requests that opened a connection, in order: the
/// first apart from the rest (None without at least one repeat, or when `looked_up`
/// is false: the host needed no lookup).
pub fn summary(samples: &[Sample], looked_up: bool) -> Option<DnsSummary> {
    if !looked_up {
        return None;
    }
    let mut lookups = samples
        .iter()
        .filter(|s| s.error.is_none() && s.new_connection)
        .map(|s| s.phases_ms.dns);
    let first_ms = lookups.next()?;
    let rest: Vec<f64> = lookups.collect();
    if rest.is_empty() {
        return None;
    }
    Some(DnsSummary {
        first_ms,
        repeat_p50_ms: crate::stats::median(&rest),
        repeats: rest.len(),
        ttl_s: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(dns: f64, new_connection: bool) -> Sample {
        serde_json::from_value(serde_json::json!({
            "series": if new_connection { "fresh" } else { "reused" },
            "new_connection": new_connection,
            "phases_ms": { "dns": dns },
        }))
        .unwrap()
    }

    /// The first lookup apart, the median of the rest; reused requests (no lookup)
    /// and failed ones left out; nothing without a lookup or a repeat.
    #[test]
    fn the_first_lookup_apart_from_the_repeats() {
        let mut failed = lookup(900.0, true);
        failed.error = Some("refused".into());
        let samples = [
            failed,
            lookup(140.0, true),
            lookup(0.0, false),
            lookup(0.4, true),
            lookup(0.2, true),
            lookup(0.3, true),
        ];
        let d = summary(&samples, true).unwrap();
        assert_eq!((d.first_ms, d.repeat_p50_ms, d.repeats), (140.0, 0.3, 3));
        assert_eq!(summary(&samples, false), None);
        assert_eq!(summary(&samples[..2], true), None);
    }
}
