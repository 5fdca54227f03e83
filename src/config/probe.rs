//! The checked configuration of `latscope probe URL…`: every URL parsed, the samples
//! per series and `--distance-km` in range, `--http3` only with https:// URLs, and the
//! probe of each URL as the pipeline takes it.

use crate::cli::ProbeArgs;
use crate::config::out::OutputConfig;
use crate::error::UsageError;
use crate::net::{ClientOptions, RequestSpec, Scheme, Target};
use crate::probe::ProbeConfig;

/// The most samples per series a probe takes.
pub const MAX_SAMPLES: u32 = 100_000;

/// `latscope probe`, checked.
#[derive(Debug, Clone)]
pub struct ProbeRun {
    /// One probe per URL, in the order given.
    pub probes: Vec<ProbeConfig>,
    /// `--distance-km`: the physical floor of the round trip.
    pub distance_km: Option<f64>,
    pub request: RequestSpec,
    pub client: ClientOptions,
    pub output: OutputConfig,
}

impl ProbeRun {
    /// Checks the flags; the error names the flag (or the URL).
    pub fn from_args(args: &ProbeArgs) -> Result<ProbeRun, UsageError> {
        let (request, client) = super::http::from_args(&args.http)?;
        if args.count == 0 {
            return Err(UsageError::new("--samples must be at least 1"));
        }
        if args.count > MAX_SAMPLES {
            return Err(UsageError::new(format!(
                "--samples {} is more than a probe needs (at most {MAX_SAMPLES})",
                args.count
            )));
        }
        if let Some(d) = args.distance_km {
            if !(d > 0.0 && d < 40_000.0) {
                return Err(UsageError::new("--distance-km must be between 0 and 40000"));
            }
        }
        let targets = args
            .urls
            .iter()
            .map(|u| Target::parse(u).map_err(|e| UsageError::new(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        if client.http3 {
            if let Some(t) = targets.iter().find(|t| t.scheme != Scheme::Https) {
                return Err(UsageError::new(format!(
                    "--http3 needs https:// URLs (HTTP/3 always runs over TLS): {}",
                    t.url
                )));
            }
        }
        let secret_headers = super::diagnose::secret_headers(&request, &args.http.redact_headers);
        let probes = targets
            .into_iter()
            .map(|target| ProbeConfig {
                target,
                count: args.count,
                request: request.clone(),
                client: client.clone(),
                secret_headers: secret_headers.clone(),
            })
            .collect();
        Ok(ProbeRun {
            probes,
            distance_km: args.distance_km,
            request,
            client,
            output: OutputConfig::from(&args.output),
        })
    }
}
