//! `latscope runs` as text: a row per stored run — id, label, kind, target, when
//! (UTC) and its headline numbers — everything a run's owner chose cleaned of
//! terminal controls and secrets.

use crate::record::RunListing;
use crate::redact::redact_urls;

use super::table::{Align, Table};

/// The table of `runs`.
pub fn table(runs: &[RunListing]) -> String {
    let mut t = Table::new(["id", "label", "kind", "target", "when (UTC)", "headline"]);
    for col in 1..=5 {
        t = t.align(col, Align::Left);
    }
    let clean = |s: &str| crate::visible::visible(s).into_owned();
    for r in runs {
        t.row([
            clean(&r.id),
            clean(r.label.as_deref().unwrap_or_default()),
            clean(&r.kind),
            clean(&redact_urls(&r.target)),
            crate::units::utc(r.started_at_ms),
            headline(&r.headline),
        ]);
    }
    t.render(0)
}

/// A run's headline numbers as `key=value` pairs: whole numbers without decimals,
/// small ones (a loopback min RTT of some µs) with three.
pub fn headline(h: &serde_json::Value) -> String {
    let Some(map) = h.as_object() else {
        return String::new();
    };
    map.iter()
        .filter_map(|(k, v)| v.as_f64().map(|x| (k, x)))
        .map(|(k, x)| {
            let shown = if x.fract() == 0.0 && x.abs() < 1e12 {
                format!("{x:.0}")
            } else if x.abs() < 1.0 {
                format!("{x:.3}")
            } else {
                format!("{x:.2}")
            };
            format!("{k}={shown}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whole numbers lose their decimals, µs keep three, the rest two; text is left
    /// out; a token in a target never shows.
    #[test]
    fn a_row_per_run_with_its_headline() {
        let h =
            serde_json::json!({"lcp_ms": 104.0, "min_rtt_ms": 0.0123, "rps": 812.456, "x": "y"});
        assert_eq!(headline(&h), "lcp_ms=104 min_rtt_ms=0.012 rps=812.46");
        let run = RunListing {
            id: "abc123".into(),
            kind: "page".into(),
            label: None,
            target: "http://127.0.0.1:1/?token=s3cr3t".into(),
            started_at_ms: 0,
            duration_s: 1.0,
            headline: h,
        };
        let text = table(&[run]);
        assert!(text.contains("1970-01-01 00:00:00"), "{text}");
        assert!(
            text.contains("lcp_ms=104") && !text.contains("s3cr3t"),
            "{text}"
        );
    }
}
