//! The checked configuration of `latscope diagnose` (and `latscope URL`, and the
//! demo, which builds one in code): [`DiagnoseConfig`] is how one URL is diagnosed —
//! the probe's request and client, `--origin`, the ramp's bounds, `--watch`, `--out`;
//! [`DiagnoseRun`] adds what the command decides around it (the URLs, `--max-time`,
//! where the result goes).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::cli::DiagnoseArgs;
use crate::config::http as httpcfg;
use crate::config::out::{self, OutConfig, OutRun, OutputConfig};
use crate::error::UsageError;
use crate::net::{ClientOptions, RequestSpec, Scheme, Target};
use crate::watch::WatchSpec;

/// How far and how long the diagnose ramp goes.
#[derive(Debug, Clone, Copy)]
pub struct RampPlan {
    pub max_connections: u32,
    pub step: Duration,
}

/// How one diagnosis runs.
#[derive(Debug, Clone)]
pub struct DiagnoseConfig {
    /// Probe requests per series.
    pub count: u32,
    pub request: RequestSpec,
    pub client: ClientOptions,
    /// `--origin ADDR`: also probe the origin there (checked: see [`origin_override`]).
    pub origin: Option<String>,
    pub distance_km: Option<f64>,
    /// Run the ramp against a public address too (`--load`).
    pub force_load: bool,
    /// Skip the ramp, and why (`--no-load`, or the demo ramping one URL only).
    pub no_load: Option<String>,
    pub ramp: RampPlan,
    /// Show the ramp in the full-screen live view (a terminal, no --json/--no-tui).
    pub live: bool,
    /// `--watch`: scrape these during the ramp.
    pub watch: Option<WatchSpec>,
    /// `--out`: where the ramp's seconds are streamed.
    pub out: Option<OutRun>,
    /// The request's secret headers ([`secret_headers`]): the cache audit never
    /// carries them to another origin.
    pub secret_headers: Vec<http::HeaderName>,
    /// Let the stack step send its two requests (the page's HTML, a 404 page) besides
    /// reading the responses already seen; the demo's lab has no stack to find.
    pub peek: bool,
}

impl DiagnoseConfig {
    /// A diagnosis of `count` probe requests per series and a ramp of `ramp`, with
    /// nothing else asked: no origin, no distance, the ramp only where the address
    /// allows one, no live view, no `--watch` or `--out`, no secret headers, and the
    /// stack step's own two requests allowed (`peek`).
    pub fn new(
        count: u32,
        request: RequestSpec,
        client: ClientOptions,
        ramp: RampPlan,
    ) -> DiagnoseConfig {
        DiagnoseConfig {
            count,
            request,
            client,
            origin: None,
            distance_km: None,
            force_load: false,
            no_load: None,
            ramp,
            live: false,
            watch: None,
            out: None,
            secret_headers: Vec::new(),
            peek: true,
        }
    }
}

/// The headers of `request` that are secret: named as secrets are
/// (`redact::is_secret_header`) or marked with `--redact-header`.
pub fn secret_headers(request: &RequestSpec, marked: &[String]) -> Vec<http::HeaderName> {
    request
        .headers
        .iter()
        .map(|(n, _)| n.clone())
        .filter(|n| crate::redact::is_secret_header(n.as_str(), marked))
        .collect()
}

/// Everything `latscope diagnose` runs with.
#[derive(Debug, Clone)]
pub struct DiagnoseRun {
    /// The URLs as given (stored with the run).
    pub urls: Vec<String>,
    /// The URLs, checked (http:// or https://).
    pub targets: Vec<Target>,
    /// `--max-time`: stop measuring after this long (all URLs).
    pub max_time: Duration,
    /// How each URL is diagnosed.
    pub config: DiagnoseConfig,
    /// `--json`, `--label`, `--db`, `--no-save`, `--no-tui`.
    pub output: OutputConfig,
    /// `--redact-header`: more header values to keep out of the stored run.
    pub redact_headers: Vec<String>,
}

impl DiagnoseRun {
    /// Checks the flags of `latscope diagnose`; `run_id` is the id the run will be
    /// stored under (the `--out` series carry it). `config.live` is left false: the
    /// command decides it (a terminal, no `--json` / `--no-tui`).
    pub fn from_args(args: &DiagnoseArgs, run_id: &str) -> Result<DiagnoseRun, UsageError> {
        let (request, client) = httpcfg::from_args(&args.http)?;
        let usage = |m: &str| Err(UsageError::new(m));
        if args.count == 0 {
            return usage("--samples must be at least 1");
        }
        if args.max_connections == 0 || args.max_connections > 10_000 {
            return usage("--max-connections must be between 1 and 10000");
        }
        if args.step < Duration::from_millis(200) || args.step > Duration::from_secs(60) {
            return usage("--step must be between 200ms and 60s");
        }
        if let Some(d) = args.distance_km {
            if !(d > 0.0 && d < 40_000.0) {
                return usage("--distance-km must be between 0 and 40000");
            }
        }
        if let Some(o) = &args.origin {
            origin_override(o, 80)?;
        }
        let targets = args
            .urls
            .iter()
            .map(|u| Target::parse(u).map_err(|e| UsageError::new(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(t) = targets.iter().find(|t| t.scheme == Scheme::Tcp) {
            return Err(UsageError::new(format!(
                "{t}: diagnose needs an http:// or https:// URL (probe tcp:// instead)"
            )));
        }
        let out = OutConfig::from_args(&args.out, client.tls())?;
        let watch = out::watch(&args.watch, client.tls())?;
        let output = OutputConfig::from(&args.output);
        let config = DiagnoseConfig {
            out: (!out.is_empty()).then(|| OutRun {
                out,
                run: run_id.to_string(),
                label: output.label.clone(),
            }),
            count: args.count,
            secret_headers: secret_headers(&request, &args.http.redact_headers),
            peek: true,
            request,
            client,
            origin: args.origin.clone(),
            distance_km: args.distance_km,
            force_load: args.load,
            no_load: args.no_load.then(|| "--no-load".to_string()),
            ramp: RampPlan {
                max_connections: args.max_connections,
                step: args.step,
            },
            live: false,
            watch,
        };
        Ok(DiagnoseRun {
            urls: args.urls.clone(),
            targets,
            max_time: args.max_time,
            config,
            output,
            redact_headers: args.http.redact_headers.clone(),
        })
    }
}

/// `--origin ADDR` as an address for the target's host: an IP:PORT, or an IP on
/// `port` (the target's).
pub fn origin_override(origin: &str, port: u16) -> Result<(IpAddr, u16), UsageError> {
    if let Ok(sa) = origin.parse::<SocketAddr>() {
        return Ok((sa.ip(), sa.port()));
    }
    let ip = origin
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| {
            UsageError::new(format!(
                "--origin '{origin}': expected an IP address or IP:PORT"
            ))
        })?;
    Ok((ip, port))
}
