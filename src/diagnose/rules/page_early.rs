//! Page rules about what the first visit needed early and got late:
//! - `no-preconnect`: a font, stylesheet or script (or the LCP image) on another
//!   origin that the browser found only inside another sub-resource (a font named by
//!   a stylesheet, a script loaded by a script), whose connection it then had to open:
//!   DNS, TCP connect and TLS began only once the request was found, where
//!   `<link rel="preconnect">` in the head (HTML's resource hints) would have opened
//!   it while the HTML was parsed. Priced by the lead a preconnect had — from the
//!   document's first byte to the request's start — up to the setup it paid;
//! - `large-before-lcp`: an image, script, font or media file of ≥ 100 KiB on the wire
//!   that was still arriving before the largest contentful paint and took ≥ 50 ms to
//!   arrive: bytes the paint waited for, or that shared the path with what it
//!   waited for.
//!
//! - `too-many-origins`: three or more origins besides the page's opened a
//!   connection (DNS, connect, TLS) for requests that finished before the largest
//!   paint, ≥ 30 ms of setup together: each is a handshake and a cold congestion
//!   window of its own on the critical path.
//!
//! Each reads the median first visit, and each has floors that loopback never
//! reaches.

use std::collections::BTreeMap;

use crate::diagnose::finding::{basis, Category, Finding, Severity};
use crate::diagnose::rules::page::short_url;
use crate::page::model::{Request, Visit};
use crate::units::fmt_ms;

/// A preconnect worth a finding saves at least this much, ms.
const LEAD_MS: f64 = 10.0;
/// What a request found late may be needed for the first paint.
const EARLY: &[&str] = &["Font", "Stylesheet", "Script"];
/// A sub-resource this large on the wire is worth a look…
const LARGE_BYTES: u64 = 100 * 1024;
/// … when it took this long to arrive, ms.
const LARGE_RECEIVE_MS: f64 = 50.0;
/// This many origins besides the page's before the paint make the finding…
const MANY_ORIGINS: usize = 3;
/// … when their connections cost this much together, ms (loopback's never do).
const MANY_ORIGINS_MS: f64 = 30.0;
/// Resource types whose size is the page's to choose.
const PAYLOAD: &[&str] = &["Image", "Script", "Font", "Media"];

/// `no-preconnect`: one finding per origin (the request that opened its connection).
pub fn no_preconnect(v: &Visit) -> Vec<Finding> {
    let Some(doc) = v.document() else {
        return Vec::new();
    };
    let doc_ttfb = doc.start_ms + doc.ttfb();
    let lcp_url = v.milestones.lcp_url.as_str();
    let mut first: BTreeMap<&str, (&Request, f64)> = BTreeMap::new();
    for r in &v.requests {
        let needed =
            EARLY.contains(&r.resource_type.as_str()) || (!lcp_url.is_empty() && r.url == lcp_url);
        let found_late =
            !r.initiator_url.is_empty() && r.initiator_url != doc.url && r.initiator != "redirect";
        if !needed || !found_late || r.origin == doc.origin || r.from_cache || r.blocked {
            continue;
        }
        // The connection could have been open by the time the request was sent (after
        // any wait in the browser's queue).
        let setup = r.phases.setup();
        let lead = (r.start_ms + r.phases.queued - doc_ttfb).max(0.0);
        let saving = setup.min(lead);
        if saving < LEAD_MS {
            continue;
        }
        first.entry(r.origin.as_str()).or_insert((r, saving));
    }
    first
        .into_values()
        .map(|(r, saving)| {
            let p = &r.phases;
            let setup = p.setup();
            let found_at = r.start_ms;
            Finding::new(
                "no-preconnect",
                Category::Network,
                Severity::Warn,
                format!(
                    "{} {} from {} was found only in {} at {}, then paid {} of DNS/connect/TLS \
                     before its first byte; a preconnect could have started at {}",
                    r.resource_type.to_lowercase(),
                    short_url(&r.url),
                    r.origin,
                    short_url(&r.initiator_url),
                    fmt_ms(found_at),
                    fmt_ms(setup),
                    fmt_ms(doc_ttfb)
                ),
            )
            .text("url", &r.url)
            .text("origin", &r.origin)
            .text("resource_type", &r.resource_type)
            .text("found_in", &r.initiator_url)
            .num("found_at_ms", found_at)
            .num("document_ttfb_ms", doc_ttfb)
            .opt_num("dns_ms", p.dns)
            .opt_num("connect_ms", p.connect)
            .opt_num("tls_ms", p.tls)
            .num("setup_ms", setup)
            .num("end_ms", r.end_ms)
            .advice(format!(
                "open the connection while the HTML is parsed: <link rel=\"preconnect\" \
                 href=\"{}\"{}> in the <head> (or preload the {} itself), or serve it from \
                 the page's own origin",
                r.origin,
                if r.resource_type == "Font" {
                    " crossorigin"
                } else {
                    ""
                },
                r.resource_type.to_lowercase()
            ))
            .saving(saving, r.end_ms, basis::FRESH)
        })
        .collect()
}

/// `large-before-lcp`: each large sub-resource still arriving before the LCP.
pub fn large_before_lcp(v: &Visit) -> Vec<Finding> {
    let Some(lcp) = v.milestones.lcp_ms else {
        return Vec::new();
    };
    let lcp_url = v.milestones.lcp_url.as_str();
    v.requests
        .iter()
        .filter(|r| {
            PAYLOAD.contains(&r.resource_type.as_str())
                && !r.from_cache
                && r.error.is_empty()
                && r.encoded_bytes >= LARGE_BYTES
                && r.start_ms < lcp
                && r.phases.receive.unwrap_or(0.0) >= LARGE_RECEIVE_MS
        })
        .map(|r| {
            let receive = r.phases.receive.unwrap_or(0.0);
            let is_lcp = !lcp_url.is_empty() && r.url == lcp_url;
            let role = if is_lcp {
                "the largest paint itself".to_string()
            } else {
                format!("before the largest paint at {}", fmt_ms(lcp))
            };
            let kib = r.encoded_bytes as f64 / 1024.0;
            let advice = match r.resource_type.as_str() {
                "Image" => {
                    "serve the image at the size it is shown (srcset), in a modern format \
                     (WebP, AVIF) and compressed; an image below the fold gets \
                     loading=\"lazy\" so it does not compete with the ones above it"
                }
                "Script" => {
                    "send less script before the paint: split it and load the rest with \
                     defer/async after the first paint, minify it and compress it (gzip or \
                     brotli)"
                }
                "Font" => {
                    "subset the font to the characters the page uses and send it as WOFF2; \
                     font-display: swap lets the text paint before it arrives"
                }
                _ => "load it after the first paint (preload=\"none\", lazy) or send less of it",
            };
            Finding::new(
                "large-before-lcp",
                Category::Content,
                Severity::Warn,
                format!(
                    "{} {} is {kib:.0} KiB on the wire and took {} to arrive, {role}",
                    r.resource_type.to_lowercase(),
                    short_url(&r.url),
                    fmt_ms(receive)
                ),
            )
            .text("url", &r.url)
            .text("resource_type", &r.resource_type)
            .count("bytes", r.encoded_bytes)
            .num("receive_ms", receive)
            .num("start_ms", r.start_ms)
            .num("end_ms", r.end_ms)
            .num("lcp_ms", lcp)
            .text("is_lcp", if is_lcp { "yes" } else { "no" })
            .advice(advice)
        })
        .collect()
}

/// `too-many-origins`: the origins besides the page's that opened a connection for a
/// request the largest paint waited for.
pub fn too_many_origins(v: &Visit) -> Option<Finding> {
    let doc = v.document()?;
    let paint = v.milestones.lcp_ms.or(v.milestones.fcp_ms)?;
    let mut setups: BTreeMap<&str, f64> = BTreeMap::new();
    for r in &v.requests {
        let setup = r.phases.setup();
        if r.origin == doc.origin || r.from_cache || r.blocked || r.end_ms > paint || setup <= 0.0 {
            continue;
        }
        let e = setups.entry(r.origin.as_str()).or_insert(0.0);
        *e = e.max(setup);
    }
    let total: f64 = setups.values().sum();
    if setups.len() < MANY_ORIGINS || total < MANY_ORIGINS_MS {
        return None;
    }
    let longest = setups.values().cloned().fold(0.0, f64::max);
    let list = setups
        .iter()
        .map(|(o, ms)| format!("{o} ({})", fmt_ms(*ms)))
        .collect::<Vec<_>>()
        .join(", ");
    Some(
        Finding::new(
            "too-many-origins",
            Category::Network,
            Severity::Warn,
            format!(
                "{} origins besides the page's opened a connection before the largest paint \
                 ({}): {list}; {} of DNS/connect/TLS in all",
                setups.len(),
                fmt_ms(paint),
                fmt_ms(total)
            ),
        )
        .count("origins", setups.len() as u64)
        .text("list", setups.keys().cloned().collect::<Vec<_>>().join(" "))
        .num("setup_total_ms", total)
        .num("setup_longest_ms", longest)
        .num("paint_ms", paint)
        .advice(
            "every origin is its own DNS lookup, TCP connect and TLS handshake, and its own \
             congestion window: serve what the first paint needs from the page's own origin \
             (self-host fonts, CSS and scripts, or put them behind the same CDN hostname), and \
             preconnect to the one or two origins that must stay",
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::model::{Milestones, Phases, VisitKind};

    fn req(url: &str, ty: &str) -> Request {
        Request::for_tests(url, ty)
    }

    /// A page whose document's first byte came at 50 ms.
    fn visit(mut requests: Vec<Request>, lcp: Option<(f64, &str)>) -> Visit {
        let mut doc = req("http://a.test/", "Document");
        doc.start_ms = 0.0;
        doc.phases.wait = Some(50.0);
        requests.insert(0, doc);
        Visit {
            kind: VisitKind::First,
            index: 1,
            milestones: Milestones {
                lcp_ms: lcp.map(|l| l.0),
                lcp_url: lcp.map(|l| l.1.to_string()).unwrap_or_default(),
                ..Milestones::default()
            },
            requests,
            started_wall_ms: 0.0,
            title: String::new(),
            loaded: true,
        }
    }

    /// A font on another origin named by the page's stylesheet, started at 130 ms and
    /// paying 40 ms connect: a preconnect at the document's first byte (50 ms) saves
    /// all 40. Found by the document's parser, or on the page's origin, or starting
    /// right at the first byte (no lead), it does not fire.
    #[test]
    fn a_font_found_in_a_stylesheet_pays_its_setup() {
        let mut font = req("http://fonts.test:8081/f.woff2", "Font");
        font.initiator_url = "http://a.test/s.css".into();
        font.start_ms = 130.0;
        font.end_ms = 215.0;
        font.phases = Phases {
            connect: Some(40.0),
            wait: Some(41.0),
            ..Phases::default()
        };
        let f = no_preconnect(&visit(vec![font.clone()], None));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].evidence_f64("setup_ms"), Some(40.0));
        assert_eq!(f[0].saving_ms, Some(40.0));
        assert!(
            f[0].title.contains("found only in a.test/s.css at 130 ms"),
            "{}",
            f[0].title
        );
        assert!(f[0].advice.contains("crossorigin"), "{}", f[0].advice);

        let mut by_parser = font.clone();
        by_parser.initiator_url = "http://a.test/".into();
        assert!(no_preconnect(&visit(vec![by_parser], None)).is_empty());
        let mut own = font.clone();
        own.url = "http://a.test/f.woff2".into();
        own.origin = "http://a.test".into();
        assert!(no_preconnect(&visit(vec![own], None)).is_empty());
        let mut no_lead = font.clone();
        no_lead.start_ms = 52.0;
        assert!(no_preconnect(&visit(vec![no_lead], None)).is_empty());
        // Preconnected: the connection was open, nothing paid.
        let mut open = font;
        open.phases.connect = None;
        assert!(no_preconnect(&visit(vec![open], None)).is_empty());
    }

    /// A lead shorter than the setup prices the lead: 30 ms of a 120 ms TLS setup.
    #[test]
    fn the_saving_is_the_lead_a_preconnect_had() {
        let mut js = req("https://cdn.test/late.js", "Script");
        js.initiator_url = "http://a.test/app.js".into();
        js.start_ms = 80.0;
        js.phases.connect = Some(40.0);
        js.phases.tls = Some(80.0);
        let f = no_preconnect(&visit(vec![js], None));
        assert_eq!(f[0].saving_ms, Some(30.0));
        assert!(!f[0].advice.contains("crossorigin"));
    }

    /// A 480 KiB LCP image arriving over 390 ms fires as the paint itself; a 480 KiB
    /// image after the LCP, a small one, or one that arrived in 2 ms (loopback) does
    /// not.
    #[test]
    fn large_image_before_the_paint() {
        let mut img = req("http://a.test/hero.svg", "Image");
        img.encoded_bytes = 480 * 1024;
        img.start_ms = 60.0;
        img.end_ms = 500.0;
        img.phases.receive = Some(390.0);
        let lcp = Some((520.0, "http://a.test/hero.svg"));
        let f = large_before_lcp(&visit(vec![img.clone()], lcp));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].evidence_str("is_lcp"), Some("yes"));
        assert!(f[0].title.contains("480 KiB"), "{}", f[0].title);
        assert!(f[0].advice.contains("WebP"));

        let mut after = img.clone();
        after.start_ms = 600.0;
        let mut small = img.clone();
        small.encoded_bytes = 20 * 1024;
        let mut fast = img;
        fast.phases.receive = Some(2.0);
        for r in [after, small, fast] {
            assert!(large_before_lcp(&visit(vec![r], lcp)).is_empty());
        }
    }

    /// Three far origins each paying 40 ms before a paint at 300 ms fire; two do not,
    /// nor three whose requests ended after the paint, nor three on loopback (1 ms).
    #[test]
    fn three_origins_before_the_paint() {
        let far = |o: &str, setup: f64, end: f64| {
            let mut r = req(&format!("{o}/x.css"), "Stylesheet");
            r.phases.connect = Some(setup);
            r.end_ms = end;
            r
        };
        let three = |setup: f64, end: f64| {
            vec![
                far("http://a.cdn.test", setup, end),
                far("http://b.cdn.test", setup, end),
                far("https://c.cdn.test", setup, end),
            ]
        };
        let paint = Some((300.0, ""));
        let f = too_many_origins(&visit(three(40.0, 200.0), paint)).expect("fires");
        assert_eq!(f.evidence_f64("origins"), Some(3.0));
        assert_eq!(f.evidence_f64("setup_total_ms"), Some(120.0));
        assert!(f.title.starts_with("3 origins"), "{}", f.title);
        let mut two = three(40.0, 200.0);
        two.pop();
        assert!(too_many_origins(&visit(two, paint)).is_none());
        assert!(too_many_origins(&visit(three(40.0, 400.0), paint)).is_none());
        assert!(too_many_origins(&visit(three(1.0, 200.0), paint)).is_none());
    }
}
