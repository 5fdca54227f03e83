//! The checked configuration of `latscope page`: the URL (http or https), the
//! number of rounds (1..=20), a time bound above zero, the `--allow-origin` origins
//! as scheme://host[:port], and the browser to drive.

use crate::cli::PageArgs;
use crate::config::out::OutputConfig;
use crate::error::UsageError;
use crate::page::{default_chromium, PageOptions, MAX_VISITS};

/// `latscope page`, checked.
#[derive(Debug, Clone)]
pub struct PageConfig {
    pub options: PageOptions,
    pub output: OutputConfig,
    /// `--har FILE`.
    pub har: Option<std::path::PathBuf>,
    /// Probe the origins on the critical path (not `--no-origin-probe`).
    pub probe_origins: bool,
}

/// The origin of an http(s) URL, or why not.
fn http_origin(flag: &str, s: &str) -> Result<String, UsageError> {
    let u = url::Url::parse(s).map_err(|e| UsageError::new(format!("{flag} '{s}': {e}")))?;
    if !matches!(u.scheme(), "http" | "https") || !u.has_host() {
        return Err(UsageError::new(format!(
            "{flag} '{s}': give an http:// or https:// URL"
        )));
    }
    Ok(u.origin().ascii_serialization())
}

impl PageConfig {
    /// Checks the flags; the error names the flag.
    pub fn from_args(a: &PageArgs) -> Result<PageConfig, UsageError> {
        http_origin("URL", &a.url)?;
        if a.visits == 0 || a.visits > MAX_VISITS {
            return Err(UsageError::new(format!(
                "--visits {}: give 1 to {MAX_VISITS}",
                a.visits
            )));
        }
        if a.max_time.is_zero() {
            return Err(UsageError::new("--max-time must be longer than 0"));
        }
        let allow_origins = a
            .allow_origins
            .iter()
            .map(|o| http_origin("--allow-origin", o))
            .collect::<Result<Vec<_>, _>>()?;
        let mut resolve = Vec::new();
        for r in &a.resolve {
            let bad = || UsageError::new(format!("--resolve '{r}': give HOST:PORT:ADDR"));
            let (host, rest) = r.split_once(':').ok_or_else(bad)?;
            let (port, addr) = rest.split_once(':').ok_or_else(bad)?;
            let addr = addr.trim_start_matches('[').trim_end_matches(']');
            if host.is_empty() || port.parse::<u16>().is_err() {
                return Err(bad());
            }
            let ip: std::net::IpAddr = addr.parse().map_err(|_| bad())?;
            let ip = match ip {
                std::net::IpAddr::V6(v6) => format!("[{v6}]"),
                v4 => v4.to_string(),
            };
            resolve.push((host.to_string(), ip));
        }
        Ok(PageConfig {
            options: PageOptions {
                url: a.url.clone(),
                visits: a.visits,
                max_time: a.max_time,
                allow_origins,
                chromium: a.chromium.clone().unwrap_or_else(default_chromium),
                insecure: a.insecure,
                resolve,
            },
            output: OutputConfig::from(&a.output),
            har: a.har.clone(),
            probe_origins: !a.no_origin_probe,
        })
    }
}
