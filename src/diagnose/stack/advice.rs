//! Advice rendered for the detected stack: each finding's topics (its id; for the
//! cache findings, every blocker of the cache that is actually there — all of them,
//! so following the advice does not leave the page at MISS for the next reason),
//! looked up in the catalogue for every recognised component. The finding's generic
//! HTTP `advice` stays as it is; `advice_stack` goes beside it.

use serde::{Deserialize, Serialize};

use super::catalogue;
use super::{Role, Stack};
use crate::cache::cookies::{self, CookieKind};
use crate::cache::defaults::{common_unstorable, DefaultCaches};
use crate::cache::rfc::Unstorable;
use crate::diagnose::audit::request_facts;
use crate::diagnose::facts::{CacheFacts, Facts};
use crate::diagnose::finding::Finding;

/// One piece of stack-specific advice on a finding (`advice_stack[]` in JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackAdvice {
    /// The component's catalogue id ("nginx", "varnish", "wordpress").
    pub stack: String,
    /// The catalogue table's name ("nginx", "Varnish (VCL)").
    pub name: String,
    /// The role the component plays here.
    pub role: Role,
    /// What the advice is about: the finding id, or the cache's blocker
    /// (`cache:freshness`, `cache:set-cookie`, …).
    pub topic: String,
    pub advice: String,
    /// The documentation section it follows.
    pub source: String,
}

/// The cache blocker topic of one reason a cache does not keep a response
/// (`set_cookie_kind` tells an analytics Set-Cookie from the rest).
fn blocker_topic(u: Unstorable, only_analytics_set: bool, c: &CacheFacts) -> Option<&'static str> {
    Some(match u {
        Unstorable::NoFreshness
        | Unstorable::NoFreshnessOrValidators
        | Unstorable::TtlZero
        | Unstorable::Status => "cache:freshness",
        Unstorable::Private
        | Unstorable::NoStore
        | Unstorable::NoCache
        | Unstorable::NoCacheWithoutValidators => "cache:private",
        Unstorable::SetCookie if only_analytics_set => "cache:set-cookie-analytics",
        Unstorable::SetCookie => "cache:set-cookie",
        Unstorable::VaryStar => "cache:vary-star",
        Unstorable::Credentials => return request_cookie_topic(&c.request_cookies),
        Unstorable::Authorization | Unstorable::Method => return None,
    })
}

/// `cache:request-cookie-session` when any cookie the request carried is a session
/// cookie (passing it is right), `cache:request-cookie-analytics` when only analytics
/// ones are (strip them), else nothing.
pub fn request_cookie_topic(names: &[String]) -> Option<&'static str> {
    let kinds: Vec<CookieKind> = names.iter().map(|n| cookies::classify(n)).collect();
    if kinds.contains(&CookieKind::Session) {
        Some("cache:request-cookie-session")
    } else if kinds.contains(&CookieKind::Analytics) {
        Some("cache:request-cookie-analytics")
    } else {
        None
    }
}

/// Whether every cookie the response sets is an analytics cookie.
pub fn only_analytics_set(c: &CacheFacts) -> bool {
    let names: Vec<String> = c
        .headers
        .get_all("set-cookie")
        .filter_map(cookies::set_cookie_name)
        .collect();
    !names.is_empty()
        && names
            .iter()
            .all(|n| cookies::classify(n) == CookieKind::Analytics)
}

/// Every reason the cache that is there (else the common defaults) does not keep the
/// audited response, all at once.
pub fn blockers(c: &CacheFacts, stack: &Stack) -> Vec<Unstorable> {
    let req = request_facts(c);
    let defaults = DefaultCaches::of(req, c.status, &c.headers);
    let mut why = match stack.cache.as_ref().map(|x| x.id.as_str()) {
        Some("nginx") => defaults.nginx.why.clone(),
        Some("varnish") => defaults.varnish.why.clone(),
        Some("apache") => defaults.apache.why.clone(),
        _ => {
            // No cache of those three seen: what any of them (or a CDN with Varnish's
            // rules) would refuse it for.
            let mut all = common_unstorable(req, c.status, &c.headers);
            for (_, _, v) in defaults.each() {
                if v.verdict.uncached() {
                    for u in &v.why {
                        if !all.contains(u) && *u != Unstorable::Credentials {
                            all.push(*u);
                        }
                    }
                }
            }
            all
        }
    };
    if c.cookie && !why.contains(&Unstorable::Credentials) {
        why.push(Unstorable::Credentials);
    }
    why
}

/// The topics of one finding, in order.
pub fn topics(f: &Finding, facts: &Facts, stack: &Stack) -> Vec<&'static str> {
    let cache_finding = matches!(f.id.as_str(), "not-shared-cacheable" | "cdn-not-caching");
    let Some(c) = facts.cache.as_ref().filter(|_| cache_finding) else {
        return catalogue_topic(&f.id).into_iter().collect();
    };
    let analytics = only_analytics_set(c);
    let mut out: Vec<&'static str> = Vec::new();
    for u in blockers(c, stack) {
        if let Some(t) = blocker_topic(u, analytics, c) {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    if out.is_empty() && f.id == "cdn-not-caching" {
        out.push("cache:rule");
    }
    out
}

/// A finding id as a catalogue topic (the `&'static str` the tables use).
fn catalogue_topic(id: &str) -> Option<&'static str> {
    catalogue::TABLES
        .iter()
        .flat_map(|t| t.rows.iter())
        .map(|r| r.topic)
        .find(|t| *t == id)
}

/// The stack's advice for one finding: every recognised component's row for each of
/// its topics, outermost component first.
pub fn for_finding(f: &Finding, facts: &Facts, stack: &Stack) -> Vec<StackAdvice> {
    let topics = topics(f, facts, stack);
    let mut out = Vec::new();
    for (role, comp) in stack.components() {
        for topic in &topics {
            if let Some((table, row)) = catalogue::row(&comp.id, role, topic) {
                let a = StackAdvice {
                    stack: comp.id.clone(),
                    name: table.name.to_string(),
                    role,
                    topic: topic.to_string(),
                    advice: row.advice.to_string(),
                    source: row.source.to_string(),
                };
                if !out
                    .iter()
                    .any(|o: &StackAdvice| o.stack == a.stack && o.topic == a.topic)
                {
                    out.push(a);
                }
            }
        }
    }
    out
}

/// Sets `advice_stack` on every finding that has advice.
pub fn attach(findings: &mut [Finding], facts: &Facts, stack: &Stack) {
    for f in findings.iter_mut().filter(|f| !f.advice.is_empty()) {
        f.advice_stack = for_finding(f, facts, stack);
    }
}
