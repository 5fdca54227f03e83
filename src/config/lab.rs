//! The checked configuration of `latscope lab` and `latscope wire`: the lab's
//! [`LabOptions`] (limits, stalls, cold start, protocols), the TLS certificate it is
//! to make, where it listens, and the wire's [`WireOptions`] (`--rtt`, `--loss`…).
//! A bad value or combination is a usage error naming the flag.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{LabArgs, WireFlags};
use crate::error::UsageError;
use crate::lab::wire::{Outage, WireOptions};
use crate::lab::{LabOptions, StallOptions};

/// Everything `latscope lab` runs with.
#[derive(Debug, Clone)]
pub struct LabConfig {
    /// The lab's behaviour (its `tls` is left None: the certificate is made when the
    /// lab starts, see [`LabConfig::tls`]).
    pub options: LabOptions,
    /// `--tls`: serve HTTPS with a self-signed certificate made at start.
    pub tls: Option<LabTlsConfig>,
    /// `--listen`: the address (port 0 picks a free port).
    pub listen: String,
    /// `--cert-out`: where the certificate's PEM is written.
    pub cert_out: Option<PathBuf>,
    /// The wire in front of the lab (None: no wire flag given).
    pub wire: Option<WireOptions>,
}

/// The self-signed certificate `--tls` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabTlsConfig {
    /// Names it covers besides localhost, 127.0.0.1 and ::1: the `--listen` host.
    pub names: Vec<String>,
    /// Resume TLS sessions (off with `--no-tls-resumption`).
    pub resumption: bool,
}

impl LabConfig {
    /// Checks the flags of `latscope lab`: the wire's first, then the lab's.
    pub fn from_args(args: &LabArgs) -> Result<LabConfig, UsageError> {
        let wire = wire(&args.wire)?;
        let usage = |m: String| Err(UsageError::new(m));
        let workers = match args.workers {
            Some(0) => return usage("--workers must be at least 1".into()),
            Some(n) => Some(n as usize),
            None => None,
        };
        let capacity = match args.capacity {
            Some(c) if !(c.is_finite() && c > 0.0 && c <= 1e7) => {
                return usage(format!(
                    "--capacity {c}: give requests per second, more than 0 (e.g. 200)"
                ))
            }
            c => c,
        };
        let stall = match (args.stall_every, args.stall_for) {
            (Some(every), Some(length)) => {
                if every.is_zero() || length.is_zero() {
                    return usage("--stall-every and --stall-for must be more than 0".into());
                }
                if length >= every {
                    return usage(format!(
                        "--stall-for ({length:?}) must be shorter than --stall-every ({every:?})"
                    ));
                }
                Some(StallOptions { every, length })
            }
            (None, None) => None,
            _ => return usage("--stall-every and --stall-for go together".into()),
        };
        if args.cold > Duration::from_secs(3600) {
            return usage("--cold is at most 1h".into());
        }
        let overload = args.overload;
        if args.http3 && !args.tls {
            return usage(
                "--http3 needs --tls: HTTP/3 runs over QUIC, which is always encrypted \
             (write --tls --http3)"
                    .into(),
            );
        }
        let tls = args.tls.then(|| LabTlsConfig {
            names: listen_host(&args.listen).into_iter().collect(),
            resumption: !args.no_tls_resumption,
        });
        Ok(LabConfig {
            options: LabOptions {
                tls: None,
                http2: args.http2,
                http3: args.http3,
                workers,
                capacity,
                overload,
                stall,
                cold: args.cold,
                cold_after: args.cold_after,
                ..LabOptions::default()
            },
            tls,
            listen: args.listen.clone(),
            cert_out: args.cert_out.clone(),
            wire,
        })
    }
}

/// The host part of a `--listen` value, when it names one specific host (not a
/// wildcard address), for the certificate.
fn listen_host(listen: &str) -> Option<String> {
    let (host, _) = listen.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) if ip.is_unspecified() => None,
        _ if host.is_empty() => None,
        _ => Some(host.to_string()),
    }
}

/// The wire the flags ask for (`lab` and `wire` share them): None when no wire
/// flag is given. Errors are usage errors naming the flag.
pub fn wire(args: &WireFlags) -> Result<Option<WireOptions>, UsageError> {
    let any = args.rtt.is_some()
        || args.jitter.is_some()
        || args.loss.is_some()
        || args.loss_seed.is_some()
        || args.bandwidth.is_some()
        || args.outage_every.is_some()
        || args.outage_for.is_some();
    if !any {
        return Ok(None);
    }
    let outage = match (args.outage_every, args.outage_for) {
        (Some(every), Some(length)) => Some(Outage { every, length }),
        (None, None) => None,
        _ => {
            return Err(UsageError::new(
                "--outage-every and --outage-for go together",
            ))
        }
    };
    let opts = WireOptions {
        rtt: args.rtt.unwrap_or_default(),
        jitter: args.jitter.unwrap_or_default(),
        loss_pct: args.loss.unwrap_or(0.0),
        seed: args.loss_seed,
        bandwidth: args.bandwidth,
        outage,
    };
    opts.validate()
        .map_err(|e| UsageError::new(e.to_string()))?;
    Ok(Some(opts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn lab_args(extra: &[&str]) -> LabArgs {
        let mut argv = vec!["latscope", "lab"];
        argv.extend_from_slice(extra);
        match crate::cli::Cli::try_parse_from(argv).unwrap().command {
            crate::cli::Command::Lab(a) => a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn listen_host_skips_wildcards() {
        assert_eq!(listen_host("127.0.0.1:0").as_deref(), Some("127.0.0.1"));
        assert_eq!(listen_host("0.0.0.0:80"), None);
        assert_eq!(listen_host("[::]:80"), None);
        assert_eq!(listen_host("[::1]:80").as_deref(), Some("::1"));
        assert_eq!(listen_host(":80"), None);
        assert_eq!(listen_host("lab.test:80").as_deref(), Some("lab.test"));
    }

    /// Without wire flags the lab runs on the host, no wire.
    #[test]
    fn no_wire_flags_means_no_wire() {
        assert_eq!(wire(&lab_args(&[]).wire).unwrap(), None);
    }

    /// Wire flags become validated options.
    #[test]
    fn wire_flags_become_options() {
        let o = wire(
            &lab_args(&[
                "--rtt",
                "40ms",
                "--loss",
                "3%",
                "--loss-seed",
                "9",
                "--outage-every",
                "3s",
                "--outage-for",
                "300ms",
            ])
            .wire,
        )
        .unwrap()
        .unwrap();
        assert_eq!(o.rtt, Duration::from_millis(40));
        assert_eq!(o.loss_pct, 3.0);
        assert_eq!(o.seed, Some(9));
        assert_eq!(
            o.outage,
            Some(Outage {
                every: Duration::from_secs(3),
                length: Duration::from_millis(300)
            })
        );
        assert!(o.describe(9).contains("loss 3% (seed 9)"));
    }

    /// Impossible combinations are usage errors naming the flag.
    #[test]
    fn bad_wire_options_are_usage_errors() {
        for argv in [
            &["--outage-every", "1s", "--outage-for", "2s"][..],
            &["--rtt", "11s"],
            &["--bandwidth", "1kbit"],
        ] {
            let e = wire(&lab_args(argv).wire).unwrap_err();
            assert!(e.to_string().starts_with("--"), "{argv:?}: {e}");
        }
    }
}
