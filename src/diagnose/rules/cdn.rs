//! CDN and proxy rules: `cdn-cost` (through the CDN vs straight to `--origin`),
//! `cdn-not-caching` (repeated GETs still MISS/DYNAMIC/BYPASS) and `cache-status`
//! (the normalised status over repeated GETs, HIT vs MISS TTFB).

use super::cache::statuses;
use super::{median, ms};
use crate::cache::defaults::{common_unstorable, DefaultCaches};
use crate::cache::rfc::Unstorable;
use crate::cache::status::{apache_reason, cache_status as status_of, CacheKind, CacheState};
use crate::diagnose::audit::request_facts;
use crate::diagnose::facts::{CacheFacts, ProbeFacts};
use crate::diagnose::finding::{basis, Category, Finding, Severity};

/// `cdn-cost`: what the CDN or proxy hop costs (or saves) against the origin, on
/// fresh and reused connections (rules/cdn_cost.rs).
pub fn cdn_cost(cdn: &ProbeFacts, origin: &ProbeFacts) -> Option<Finding> {
    super::cdn_cost::cdn_cost(cdn, origin)
}

/// Normalised status and TTFB of each repeated GET (falling back to the first response).
fn samples(c: &CacheFacts) -> Vec<(CacheState, &'static str, f64)> {
    if c.repeats.is_empty() {
        let s = status_of(&c.headers);
        return vec![(s.state, s.source(), f64::NAN)];
    }
    statuses(c)
        .iter()
        .zip(&c.repeats)
        .map(|(s, r)| (s.state, s.source(), r.ttfb_ms))
        .collect()
}

/// `cdn-not-caching`: after the first GET, every repeated GET is still a MISS, DYNAMIC
/// or BYPASS (needs at least two repeats after the first). The cause comes from the
/// cache's own explanation first (Apache's `X-Cache-Detail`), then from the origin's
/// headers against that cache's defaults (Varnish's built-in VCL, Apache mod_cache,
/// nginx proxy_cache; the common defaults for a CDN); a cache rule is suggested only
/// when the headers allow caching.
pub fn cdn_not_caching(c: &CacheFacts) -> Option<Finding> {
    let all = samples(c);
    let later: Vec<_> = all.iter().skip(1).collect();
    if later.len() < 2 || !later.iter().all(|(s, _, _)| s.is_uncached()) {
        return None;
    }
    let (state, source, _) = later[later.len() - 1];
    let kind = statuses(c).iter().rev().find_map(|s| s.kind);
    let cache_name = kind.map_or("the cache in front", |k| k.name());
    let detail = c
        .repeats
        .iter()
        .rev()
        .find_map(|r| r.headers.get("x-cache-detail"))
        .map(|d| apache_reason(&d))
        .filter(|d| !d.to_ascii_lowercase().starts_with("cache miss"));
    let req = request_facts(c);
    let defaults = DefaultCaches::of(req, c.status, &c.headers);
    let (rules, verdict) = match kind {
        Some(CacheKind::Varnish) => ("Varnish's built-in VCL does", Some(&defaults.varnish)),
        Some(CacheKind::Apache) => ("Apache mod_cache's defaults do", Some(&defaults.apache)),
        Some(CacheKind::Nginx) => ("nginx proxy_cache's defaults do", Some(&defaults.nginx)),
        _ => ("the usual CDN and proxy defaults do", None),
    };
    let why: Vec<Unstorable> = match verdict {
        Some(v) if v.verdict.uncached() => v.why.clone(),
        Some(_) => Vec::new(),
        None => {
            let mut w = common_unstorable(req, c.status, &c.headers);
            if !c.anonymous {
                w.push(Unstorable::Credentials);
            }
            w
        }
    };
    let codes: Vec<&str> = why.iter().map(|r| r.as_str()).collect();
    let (severity, cause, advice) = if let Some(d) = &detail {
        (
            Severity::Warn,
            format!("{cache_name} says \"{d}\""),
            format!(
                "{cache_name} explains the miss itself: \"{d}\"; change what it names{}",
                if why.is_empty() {
                    String::new()
                } else {
                    let fixes: Vec<_> = why.iter().map(|r| r.fix()).collect();
                    format!(" ({})", fixes.join("; "))
                }
            ),
        )
    } else if why == [Unstorable::Credentials] {
        // Told apart by cookie name: a session cookie passed is right (a signed-in user
        // gets their own page); only analytics cookies are worth stripping.
        let (analytics, session, other) = crate::cache::cookies::split(&c.request_cookies);
        if session.is_empty() && other.is_empty() && !analytics.is_empty() {
            (
                Severity::Warn,
                format!(
                    "a request cookie/authorization, here only analytics cookies ({}), \
                     which {rules} pass",
                    analytics.join(", ")
                ),
                format!(
                    "strip the analytics cookies ({}) in the cache before its lookup: no \
                     server reads them, yet each one sends the reader to the origin",
                    analytics.join(", ")
                ),
            )
        } else {
            let kept: Vec<String> = session.iter().chain(&other).cloned().collect();
            (
                Severity::Info,
                format!(
                    "a request cookie/authorization, here {} ({}), which {rules} pass — \
                     correct for a signed-in or tracked visitor",
                    if session.is_empty() {
                        "cookies"
                    } else {
                        "a session cookie"
                    },
                    if kept.is_empty() {
                        "Authorization".to_string()
                    } else {
                        kept.join(", ")
                    }
                ),
                format!(
                    "nothing to fix for this request: a visitor with a session gets their \
                     own page, so never strip {} in the cache{}; measure the anonymous \
                     page without -H Cookie to see what readers get",
                    if kept.is_empty() {
                        "credentials".to_string()
                    } else {
                        kept.join(", ")
                    },
                    if analytics.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " (only the analytics cookies {} may go)",
                            analytics.join(", ")
                        )
                    }
                ),
            )
        }
    } else if !why.is_empty() {
        let mut fixes: Vec<&str> = Vec::new();
        for f in why.iter().map(|r| r.fix()) {
            if !fixes.contains(&f) {
                fixes.push(f);
            }
        }
        let severity = Severity::Warn;
        (
            severity,
            format!(
                "the origin's headers ({}), which {rules} not cache",
                codes.join(", ")
            ),
            format!(
                "the cause is the origin's headers, not a missing cache rule: {}",
                fixes.join("; ")
            ),
        )
    } else {
        (
            Severity::Warn,
            "not the origin's headers, which allow caching".to_string(),
            format!(
                "the response looks cacheable, yet {cache_name} does not keep it: add a \
                 cache rule for this path (some CDNs cache only static file extensions by \
                 default) and check the cache key (query strings, cookies, Vary)"
            ),
        )
    };
    Some(
        Finding::new(
            "cdn-not-caching",
            Category::Cache,
            severity,
            format!(
                "{cache_name} answered {} on {} of {} repeated GETs ({source}): every \
                 request goes to the origin; the cause: {cause}",
                state.as_str().to_ascii_uppercase(),
                later.len(),
                later.len()
            ),
        )
        .count("repeats", later.len() as u64)
        .count("hits", 0)
        .text("status", state.as_str())
        .text("source", *source)
        .text("cache", kind.map_or("unknown", |k| k.as_str()))
        .text("origin_says", codes.join(", "))
        .text("cache_says", detail.unwrap_or_default())
        .advice(advice),
    )
}

/// `cache-status`: what the CDN or proxy reported over the repeated GETs (and the
/// probe's first request when a cache missed it: the request that filled the cache),
/// with HIT vs MISS TTFB and the hit ratio under load. Quiet when no header says
/// anything.
pub fn cache_status(c: &CacheFacts) -> Option<Finding> {
    let mut all = samples(c);
    if let Some((state, ttfb)) = c.probe_first.filter(|(s, _)| s.is_uncached()) {
        all.insert(0, (state, "probe", ttfb));
    }
    let source = all
        .iter()
        .map(|s| s.1)
        .find(|s| !s.is_empty() && *s != "probe")?;
    let count = |st: CacheState| all.iter().filter(|s| s.0 == st).count();
    let (hits, misses) = (
        count(CacheState::Hit),
        all.iter().filter(|s| s.0.is_uncached()).count(),
    );
    let ttfb = |pred: &dyn Fn(CacheState) -> bool| {
        let v: Vec<f64> = all.iter().filter(|s| pred(s.0)).map(|s| s.2).collect();
        Some(median(&v)).filter(|m| m.is_finite())
    };
    let hit_ttfb = ttfb(&|s| s == CacheState::Hit);
    let miss_ttfb = ttfb(&|s| s.is_uncached());
    let kind = statuses(c).iter().rev().find_map(|s| s.kind);
    let mut title = format!(
        "cache status: {hits} of {} GETs were hits ({}{source}{})",
        all.len(),
        kind.map(|k| format!("{}, ", k.name())).unwrap_or_default(),
        if all[0].1 == "probe" {
            "; the probe's first request included"
        } else {
            ""
        }
    );
    if let (Some(h), Some(m)) = (hit_ttfb, miss_ttfb) {
        title.push_str(&format!(
            "; a hit answers in {}, a miss in {}",
            ms(h),
            ms(m)
        ));
    }
    if let Some(r) = c.load_hit_ratio {
        title.push_str(&format!("; {:.0}% hits under load", r * 100.0));
    }
    let last = all[all.len() - 1].0;
    Some(
        Finding::new("cache-status", Category::Cache, Severity::Info, title)
            .count("requests", all.len() as u64)
            .count("hits", hits as u64)
            .count("misses", misses as u64)
            .text("last", last.as_str())
            .text("source", source)
            .text("cache", kind.map_or("unknown", |k| k.as_str()))
            .opt_num("hit_ttfb_ms", hit_ttfb)
            .opt_num("miss_ttfb_ms", miss_ttfb)
            // A hit instead of a miss: "a hit answers in 0.2 ms, a miss in 18 ms".
            .saving(
                match (hit_ttfb, miss_ttfb) {
                    (Some(h), Some(m)) => m - h,
                    _ => f64::NAN,
                },
                miss_ttfb.unwrap_or(f64::NAN),
                basis::PER_MISS,
            )
            .opt_num("load_hit_ratio", c.load_hit_ratio)
            .advice(if hits == 0 {
                "nothing was served from cache: see cdn-not-caching / not-shared-cacheable"
            } else {
                "hits are what the cache saves you: raise the hit ratio with longer \
                 s-maxage, stale-while-revalidate and a tight cache key"
            }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::facts::{Headers, RepeatFacts};
    use crate::diagnose::rules::testutil::{far_probe, healthy_probe, set_ttfb};

    fn repeat(pairs: &[(&str, &str)], ttfb: f64) -> RepeatFacts {
        RepeatFacts {
            headers: Headers::from_pairs(pairs),
            ttfb_ms: ttfb,
        }
    }

    fn cdn_facts(status: &str, n: usize) -> CacheFacts {
        let h = [
            ("cf-cache-status", status),
            ("cache-control", "private, no-store"),
        ];
        CacheFacts {
            get: true,
            anonymous: true,
            status: 200,
            headers: Headers::from_pairs(&h),
            repeats: (0..n).map(|_| repeat(&h, 180.0)).collect(),
            ..CacheFacts::default()
        }
    }

    /// Story 1: 530 ms through a far, non-caching edge vs 230 ms direct fires, naming
    /// the edge; a CDN that saves time is info; equal times are quiet.
    #[test]
    fn cdn_cost_both_ways() {
        let mut via = far_probe();
        set_ttfb(via.fresh.as_mut().unwrap(), 530.0, 1.0);
        via.headers =
            Headers::from_pairs(&[("cf-ray", "8a1b-SJC"), ("cf-cache-status", "DYNAMIC")]);
        let f = cdn_cost(&via, &far_probe()).expect("fires");
        assert_eq!(f.severity, Severity::Warn);
        assert_eq!(f.evidence_f64("cost_ms"), Some(300.0));
        assert_eq!(f.evidence_str("edge"), Some("Cloudflare SJC"));
        assert_eq!(f.evidence_str("cache"), Some("dynamic"));
        let f = cdn_cost(&far_probe(), &via).unwrap();
        assert_eq!(f.severity, Severity::Info);
        assert!(cdn_cost(&far_probe(), &far_probe()).is_none());
        // Loopback: 0.47 vs 0.2 ms is 2× but far under 20 ms.
        let mut fast = healthy_probe();
        set_ttfb(fast.fresh.as_mut().unwrap(), 0.2, 0.02);
        assert!(cdn_cost(&healthy_probe(), &fast).is_none());
    }

    /// DYNAMIC on every repeat fires with the origin's reasons; HIT after the first
    /// MISS is quiet; no CDN headers is quiet.
    #[test]
    fn not_caching_both_ways() {
        let f = cdn_not_caching(&cdn_facts("DYNAMIC", 5)).expect("fires");
        assert_eq!(f.evidence_f64("repeats"), Some(4.0));
        assert_eq!(f.evidence_str("status"), Some("dynamic"));
        assert_eq!(f.evidence_str("origin_says"), Some("no-store, private"));
        assert!(f.advice.contains("no-store"));
        let mut c = cdn_facts("HIT", 5);
        c.repeats[0] = repeat(&[("cf-cache-status", "MISS")], 180.0);
        assert!(cdn_not_caching(&c).is_none());
        let plain = CacheFacts {
            repeats: (0..5)
                .map(|_| repeat(&[("server", "nginx")], 1.0))
                .collect(),
            ..CacheFacts::default()
        };
        assert!(cdn_not_caching(&plain).is_none());
        assert!(
            cdn_not_caching(&cdn_facts("MISS", 2)).is_none(),
            "one repeat is not enough"
        );
    }

    /// Fastly-style MISS then HITs: counts and HIT vs MISS TTFB; no headers: quiet.
    #[test]
    fn cache_status_both_ways() {
        let mut c = CacheFacts::default();
        c.repeats.push(repeat(&[("x-cache", "MISS, MISS")], 180.0));
        for _ in 0..4 {
            c.repeats.push(repeat(&[("x-cache", "HIT, MISS")], 20.0));
        }
        c.load_hit_ratio = Some(0.97);
        let f = cache_status(&c).expect("fires");
        assert_eq!(f.evidence_f64("hits"), Some(4.0));
        assert_eq!(f.evidence_f64("misses"), Some(1.0));
        assert_eq!(f.evidence_f64("hit_ttfb_ms"), Some(20.0));
        assert_eq!(f.evidence_f64("miss_ttfb_ms"), Some(180.0));
        assert!(f.title.contains("97% hits under load"), "{}", f.title);
        let plain = CacheFacts {
            repeats: vec![repeat(&[("server", "nginx")], 1.0); 3],
            ..CacheFacts::default()
        };
        assert!(cache_status(&plain).is_none());
    }

    /// Pricing `cache-status`: a hit instead of a miss saves miss − hit TTFB: 180 −
    /// 20 = 160 ms of 180 ms per cache miss; with no hit to compare, unpriced.
    #[test]
    fn pricing_cache_status() {
        let mut c = CacheFacts::default();
        c.repeats.push(repeat(&[("x-cache", "MISS, MISS")], 180.0));
        for _ in 0..4 {
            c.repeats.push(repeat(&[("x-cache", "HIT, MISS")], 20.0));
        }
        let f = cache_status(&c).unwrap();
        assert_eq!(f.saving_ms, Some(160.0));
        assert_eq!(f.saving_of_ms, Some(180.0));
        assert_eq!(f.saving_basis.as_deref(), Some("per miss"));
        let f = cache_status(&cdn_facts("MISS", 4)).unwrap();
        assert_eq!(f.saving_ms, None);
        assert_eq!(
            cdn_not_caching(&cdn_facts("MISS", 4)).unwrap().saving_ms,
            None
        );
    }
}
