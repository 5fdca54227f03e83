//! The page waterfall drawn from visits made here: a row per request with its
//! phases, hostile text escaped, URL secrets redacted, the paint lines.

use super::*;
use crate::page::model::{Milestones, Phases};

/// A script request from `start` to `end` ms with `phases`, 1000 bytes.
fn request(url: &str, start: f64, end: f64, phases: Phases) -> Request {
    Request {
        start_ms: start,
        end_ms: end,
        phases,
        encoded_bytes: 1000,
        ..Request::for_tests(url, "Script")
    }
}

fn visit(kind: VisitKind, lcp: f64, requests: Vec<Request>) -> Visit {
    Visit {
        kind,
        index: 1,
        milestones: Milestones {
            ttfb_ms: Some(20.0),
            fcp_ms: Some(lcp - 10.0),
            lcp_ms: Some(lcp),
            lcp_url: String::new(),
            dom_content_loaded_ms: Some(lcp - 5.0),
            load_ms: Some(lcp + 20.0),
        },
        requests,
        started_wall_ms: 0.0,
        title: String::new(),
        loaded: true,
    }
}

#[test]
fn a_waterfall_draws_each_phase_and_escapes_what_servers_chose() {
    let doc = request(
        "http://site.test/",
        0.0,
        60.0,
        Phases {
            queued: 1.0,
            dns: Some(5.0),
            connect: Some(10.0),
            send: Some(1.0),
            wait: Some(30.0),
            receive: Some(13.0),
            ..Phases::default()
        },
    );
    let mut evil = request(
        "http://site.test/a/<script>alert(1)</script>.js?token=SECRET123",
        70.0,
        120.0,
        Phases {
            queued: 2.0,
            wait: Some(40.0),
            ..Phases::default()
        },
    );
    evil.render_blocking = "blocking".into();
    evil.resource_type = "<img src=x onerror=alert(2)>".into();
    let mut cached = request("http://site.test/logo.png", 80.0, 81.0, Phases::default());
    cached.from_cache = true;
    let v = visit(VisitKind::First, 150.0, vec![doc, evil, cached]);
    let svg = waterfall(&v);

    // Nothing a server chose reaches the page as markup; the token is redacted.
    assert!(!svg.contains("<script"), "{svg}");
    assert!(!svg.contains("<img"), "{svg}");
    assert!(svg.contains("&lt;script&gt;"), "{svg}");
    assert!(!svg.contains("SECRET123"), "{svg}");
    // A row per request, each with its hover text; the render-blocking one marked.
    assert_eq!(svg.matches("<g><title>").count(), 3, "{svg}");
    assert_eq!(svg.matches('▶').count(), 2, "the row and the legend: {svg}");
    // The first request's setup (DNS + connect, orange) and its answer (blue); the
    // cached one green.
    assert!(svg.contains("fill=\"#f0a030\""), "{svg}");
    assert!(svg.contains("fill=\"#3d78d8\""), "{svg}");
    assert!(svg.contains("fill=\"#6aa84f\""), "{svg}");
    // FCP and LCP as dashed lines, at 140 and 150 ms of a 170 ms span.
    assert!(svg.contains("<title>FCP 140"), "{svg}");
    assert!(svg.contains("<title>LCP 150"), "{svg}");
    let lcp_x = LABEL_W + 150.0 / 170.0 * BARS_W;
    assert!(svg.contains(&format!("x1=\"{lcp_x:.1}\"")), "{lcp_x} {svg}");
}

#[test]
fn details_show_the_median_visit_of_each_kind() {
    let r = |lcp: f64| request("http://site.test/", 0.0, lcp - 20.0, Phases::default());
    let visits: Vec<Visit> = [300.0, 100.0, 200.0]
        .into_iter()
        .enumerate()
        .map(|(i, lcp)| Visit {
            index: i as u32 + 1,
            ..visit(VisitKind::First, lcp, vec![r(lcp)])
        })
        .chain([visit(VisitKind::Repeat, 50.0, vec![r(50.0)])])
        .collect();
    let mut page = doc(visits);
    page.verdict = "LCP 200 ms <b>".into();
    let mut out = String::new();
    verdict(&mut out, &page);
    assert!(out.contains("LCP 200 ms &lt;b&gt;"), "{out}");
    let mut out = String::new();
    details(&mut out, &page);
    // The median first visit (LCP 200 ms) is #3; the repeat visit is drawn too.
    assert!(out.contains("Waterfall, first visit #3"), "{out}");
    assert!(out.contains("Waterfall, repeat visit #1"), "{out}");
    assert_eq!(out.matches("<svg").count(), 2, "{out}");
    assert!(!out.contains("page-origins"), "no origin was probed: {out}");
    // A probed origin: its request and what it said, escaped, its secret redacted.
    page.origins = vec![crate::schema::PageOrigin {
        origin: "http://cdn.test".into(),
        url: "http://cdn.test/s.css?token=hunter2".into(),
        resource_type: "Stylesheet".into(),
        summary: Some("TTFB 150 ms <i>server</i>".into()),
        findings: vec!["server-dominates".into()],
        ..crate::schema::PageOrigin::default()
    }];
    let mut out = String::new();
    details(&mut out, &page);
    assert!(out.contains("stylesheet http://cdn.test/s.css"), "{out}");
    assert!(out.contains("TTFB 150 ms &lt;i&gt;server"), "{out}");
    assert!(out.contains("<td>server-dominates</td>"), "{out}");
    assert!(!out.contains("hunter2"), "{out}");
    // No visits: nothing at all.
    let mut out = String::new();
    details(&mut out, &doc(Vec::new()));
    assert!(out.is_empty(), "{out}");
}

/// A stored page document holding `visits`.
fn doc(visits: Vec<Visit>) -> crate::schema::PageDoc {
    let run = crate::page::model::PageRun {
        url: "http://site.test/".into(),
        allowed_origins: Vec::new(),
        browser: "Chromium".into(),
        visits,
        stopped: None,
        elapsed_s: 1.0,
    };
    crate::schema::PageDoc::new(&run, String::new(), Vec::new(), Vec::new())
}
