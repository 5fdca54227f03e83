//! `dns-cold`: the first lookup slow, the repeated ones fast — a caching resolver
//! answered the returning visitor from its cache, the first visitor waited for the
//! resolution behind it (the authoritative servers, a chain of referrals). Every
//! visitor whose resolver's cache has expired (the record's TTL) pays it again
//! (issue 30 item 2). A slow lookup every time is `slow-dns`'s.

use super::ms;
use crate::diagnose::facts::ProbeFacts;
use crate::diagnose::finding::{basis, Category, Finding, Severity};

/// The first lookup is at least this slow, ms…
const FLOOR_MS: f64 = 50.0;
/// …and this many times the repeated lookups' median…
const RATIO: f64 = 3.0;
/// …whose median stays under this (else every lookup is slow: `slow-dns`), ms.
const CACHED_MS: f64 = 50.0;
/// From this much the first visitor's wait is a warning, ms.
const WARN_MS: f64 = 100.0;
/// A TTL under this makes resolvers ask again often: worth raising, s.
const SHORT_TTL_S: u32 = 300;

/// `dns-cold`: the first lookup ≥ 50 ms and ≥ 3× the repeated lookups' median, which
/// stays under 50 ms (at least two repeats). Warn from 100 ms.
pub fn dns_cold(p: &ProbeFacts) -> Option<Finding> {
    let d = p.dns?;
    if d.repeats < 2
        || d.first_ms < FLOOR_MS
        || d.repeat_p50_ms >= CACHED_MS
        || d.first_ms < RATIO * d.repeat_p50_ms
    {
        return None;
    }
    let extra = d.first_ms - d.repeat_p50_ms;
    let sev = if extra >= WARN_MS {
        Severity::Warn
    } else {
        Severity::Info
    };
    let ttl = match d.ttl_s {
        Some(t) => format!("; the record's TTL is {t} s (as the resolver gave it)"),
        None => String::new(),
    };
    let mut advice = String::from(
        "the resolver's cache hides it from returning visitors, so a first visitor (and \
         every visitor after the record's TTL runs out at their resolver) pays the \
         whole resolution: ",
    );
    match d.ttl_s {
        Some(t) if t < SHORT_TTL_S => advice.push_str(&format!(
            "raise the record's TTL ({t} s now; 300–3600 s is common for a record that \
             rarely changes) so resolvers ask less often, and "
        )),
        _ => advice.push_str("keep the record's TTL long (300–3600 s), and "),
    }
    advice.push_str(
        "serve the zone from authoritative servers near your users (an anycast DNS \
         provider); avoid CNAME chains across providers, each a lookup of its own",
    );
    Some(
        Finding::new(
            "dns-cold",
            Category::Network,
            sev,
            format!(
                "the first DNS lookup took {}, the repeated ones {} (p50 of {}): a \
                 resolver cache answers returning visitors, first visitors wait for the \
                 resolution{ttl}",
                ms(d.first_ms),
                ms(d.repeat_p50_ms),
                d.repeats
            ),
        )
        .num("first_lookup_ms", d.first_ms)
        .num("repeat_lookup_p50_ms", d.repeat_p50_ms)
        .count("repeats", d.repeats as u64)
        .opt_num("ttl_s", d.ttl_s.map(f64::from))
        .saving(
            extra,
            p.first_total_ms.unwrap_or(d.first_ms),
            basis::FIRST_REQUEST,
        )
        .advice(advice),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::facts::DnsFacts;
    use crate::diagnose::rules::testutil::healthy_probe;

    fn with(first_ms: f64, repeat_p50_ms: f64, ttl_s: Option<u32>) -> ProbeFacts {
        ProbeFacts {
            dns: Some(DnsFacts {
                first_ms,
                repeat_p50_ms,
                repeats: 4,
                ttl_s,
            }),
            first_total_ms: Some(first_ms + 5.0),
            ..healthy_probe()
        }
    }

    /// A 140 ms first lookup through a resolver that answers the repeats from its
    /// cache in 0.3 ms: warn, priced at the difference, with the TTL; 70 ms: info; a
    /// slow lookup every time, a fast first one, or no lookup at all: quiet.
    #[test]
    fn dns_cold_both_ways() {
        let f = dns_cold(&with(140.0, 0.3, Some(60))).expect("fires");
        assert_eq!(f.severity, Severity::Warn);
        assert_eq!(f.evidence_f64("ttl_s"), Some(60.0));
        assert!(f.title.contains("TTL is 60 s"), "{}", f.title);
        assert!(
            f.advice.contains("raise the record's TTL (60 s"),
            "{}",
            f.advice
        );
        assert!((f.saving_ms.unwrap() - 139.7).abs() < 1e-9);
        let f = dns_cold(&with(70.0, 0.3, None)).expect("fires");
        assert_eq!(f.severity, Severity::Info);
        assert!(
            f.advice.contains("keep the record's TTL long"),
            "{}",
            f.advice
        );
        assert!(
            dns_cold(&with(140.0, 120.0, None)).is_none(),
            "slow every time"
        );
        assert!(
            dns_cold(&with(20.0, 0.3, None)).is_none(),
            "a fast first lookup"
        );
        assert!(dns_cold(&healthy_probe()).is_none(), "no lookup");
    }

    /// The case: a 140 ms cold lookup in front of an otherwise steady first
    /// request is `dns-cold`, never `cold-start` (first-only "a proxy opening its
    /// upstream connection"); without the lookups told apart it was.
    #[test]
    fn a_cold_lookup_is_no_cold_start() {
        use crate::diagnose::rules::cold::first_only;
        let p = healthy_probe();
        let steady = p.fresh.as_ref().unwrap().p50.total;
        let p = ProbeFacts {
            first_total_ms: Some(steady + 140.0),
            ..p
        };
        assert!(first_only(&p, None).is_some(), "the old reading");
        let p = ProbeFacts {
            dns: Some(DnsFacts {
                first_ms: 140.3,
                repeat_p50_ms: 0.3,
                repeats: 9,
                ttl_s: None,
            }),
            ..p
        };
        assert!(first_only(&p, None).is_none());
        assert!(dns_cold(&p).is_some());
    }
}
