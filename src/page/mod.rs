//! `latscope page URL`: the page as a real browser loads it (Debian's headless
//! Chromium over the DevTools pipe), every request timed phase by phase, and the
//! page milestones (TTFB, FCP, LCP, load). Each round starts a browser on a fresh
//! profile for a first visit (cold caches, new connections) and visits again right
//! after in the same profile (browser cache, kept-alive connections). Only the
//! page's own origin, loopback and the lab's 198.18.0.0/15 are fetched, plus what
//! `--allow-origin` names: everything else goes to a loopback port that refuses it,
//! and is recorded as blocked. Measuring only: `diagnose::rules::page` turns the records into
//! findings, `report::page` prints them.

pub mod cdp;
pub mod har;
pub mod model;
pub mod visit;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use cdp::{Browser, CdpError, Launch, RefusingPort};
use model::{PageRun, VisitKind};

/// The most rounds (`--visits`).
pub const MAX_VISITS: u32 = 20;

/// What a page run is asked to do.
#[derive(Debug, Clone)]
pub struct PageOptions {
    pub url: String,
    /// Rounds: each a first visit and a repeat visit.
    pub visits: u32,
    /// The whole run's bound.
    pub max_time: Duration,
    /// Origins allowed besides the page's own (scheme://host[:port]).
    pub allow_origins: Vec<String>,
    pub chromium: PathBuf,
    pub insecure: bool,
    /// `--resolve`: (host, address) pairs the browser resolves so.
    pub resolve: Vec<(String, String)>,
}

/// The default browser: `LATSCOPE_CHROMIUM`, else Debian's.
pub fn default_chromium() -> PathBuf {
    std::env::var_os("LATSCOPE_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

/// The `--proxy-bypass-list` for the allowed origins: loopback, the lab's range, the
/// page's origin and the `--allow-origin` ones (host:port, so another port of the
/// same host is not let through).
pub fn bypass_list(url: &str, allow: &[String]) -> String {
    let mut rules: Vec<String> = vec![
        "127.0.0.0/8".into(),
        "localhost".into(),
        "[::1]".into(),
        "198.18.0.0/15".into(),
    ];
    for o in std::iter::once(url).chain(allow.iter().map(String::as_str)) {
        if let Ok(u) = url::Url::parse(o) {
            if let (Some(h), Some(p)) = (u.host_str(), u.port_or_known_default()) {
                rules.push(format!("{}://{h}:{p}", u.scheme()));
            }
        }
    }
    rules.join(";")
}

/// Runs the visits. Stops early (keeping what was measured) on `stop` or when
/// `max_time` runs out; fails only when not one visit could be made.
pub fn run(opts: &PageOptions, stop: &AtomicBool) -> Result<PageRun, CdpError> {
    let started = Instant::now();
    let deadline = started + opts.max_time;
    let refusing = RefusingPort::bind()?;
    let mut allowed = vec![model::origin_of(&opts.url)];
    allowed.extend(opts.allow_origins.iter().cloned());
    let mut run = PageRun {
        url: opts.url.clone(),
        allowed_origins: allowed,
        browser: String::new(),
        visits: Vec::new(),
        stopped: None,
        elapsed_s: 0.0,
    };
    for round in 1..=opts.visits {
        let profile = scratch_profile()?;
        let launch = Launch {
            binary: opts.chromium.clone(),
            profile,
            proxy: Some((
                format!("http://127.0.0.1:{}", refusing.port),
                bypass_list(&opts.url, &opts.allow_origins),
            )),
            insecure: opts.insecure,
            resolve: opts.resolve.clone(),
        };
        let outcome = (|| {
            let mut b = Browser::launch(&launch, stop)?;
            if run.browser.is_empty() {
                let v = b.call(
                    None,
                    "Browser.getVersion",
                    serde_json::json!({}),
                    Duration::from_secs(5),
                    stop,
                )?;
                run.browser = v["product"].as_str().unwrap_or_default().to_string();
            }
            for kind in [VisitKind::First, VisitKind::Repeat] {
                if Instant::now() >= deadline {
                    return Err(CdpError::Timeout("the run".into()));
                }
                let v = visit::visit(&mut b, &opts.url, kind, round, deadline, stop)?;
                run.visits.push(v);
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    return Err(CdpError::Interrupted);
                }
            }
            Ok::<(), CdpError>(())
        })();
        if launch.profile.exists() {
            let _ = std::fs::remove_dir_all(&launch.profile);
        }
        match outcome {
            Ok(()) => {}
            Err(e) if run.visits.is_empty() => return Err(e),
            Err(CdpError::Interrupted) => {
                run.stopped = Some("interrupted".into());
                break;
            }
            Err(CdpError::Timeout(_)) => {
                run.stopped = Some("--max-time reached".into());
                break;
            }
            Err(e) => return Err(e),
        }
        if Instant::now() >= deadline {
            if round < opts.visits {
                run.stopped = Some("--max-time reached".into());
            }
            break;
        }
    }
    debug_assert!(refusing.held());
    run.elapsed_s = started.elapsed().as_secs_f64();
    Ok(run)
}

/// A fresh, private profile directory under the temp dir.
fn scratch_profile() -> std::io::Result<PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "latscope-page-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    Ok(dir)
}
