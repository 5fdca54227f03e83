//! The wire's options: what `--rtt`, `--jitter`, `--loss`, `--loss-seed`,
//! `--bandwidth` and `--outage-every/--outage-for` ask for, validated.

use std::time::Duration;

use super::WireError;
use crate::cli::{LabArgs, WireFlags};

/// The longest RTT the wire accepts (packets are held in memory meanwhile).
const MAX_RTT: Duration = Duration::from_secs(10);

/// Periodic outages: from the wire's start, every `every` the wire drops every packet
/// for `length`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outage {
    /// From one outage's start to the next; the first starts `every` after start.
    pub every: Duration,
    /// How long each outage lasts (shorter than `every`).
    pub length: Duration,
}

impl Outage {
    /// Whether `since` (time since the wire started) falls inside an outage window.
    pub fn covers(&self, since: Duration) -> bool {
        since >= self.every
            && Duration::from_nanos((since.as_nanos() % self.every.as_nanos().max(1)) as u64)
                < self.length
    }
}

/// How the wire treats packets. Both directions get the same treatment,
/// independently.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WireOptions {
    /// Round-trip time: each packet is held for half of it in each direction.
    pub rtt: Duration,
    /// Random extra delay: each packet gets up to half of it per direction, so round
    /// trips take between `rtt` and `rtt + jitter`. Never reorders packets.
    pub jitter: Duration,
    /// Percentage of packets dropped in each direction (0–100).
    pub loss_pct: f64,
    /// Seed for loss and jitter; a random one when None (see [`Wire::seed`]).
    pub seed: Option<u64>,
    /// Bottleneck rate in bits per second, per direction, with a 100 ms tail-drop
    /// buffer.
    pub bandwidth: Option<u64>,
    /// Periodic outages.
    pub outage: Option<Outage>,
}

impl WireOptions {
    /// The wire `latscope lab` flags ask for: None when no wire flag is given.
    /// Errors are usage errors naming the flag.
    pub fn from_args(args: &LabArgs) -> Result<Option<WireOptions>, WireError> {
        WireOptions::from_flags(&args.wire)
    }

    /// The wire the flags ask for (`lab` and `wire` share them): None when no wire
    /// flag is given. Errors are usage errors naming the flag.
    pub fn from_flags(args: &WireFlags) -> Result<Option<WireOptions>, WireError> {
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
                return Err(WireError::Usage(
                    "--outage-every and --outage-for go together".into(),
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
        opts.validate()?;
        Ok(Some(opts))
    }

    /// Checks the options, naming the flag at fault.
    pub fn validate(&self) -> Result<(), WireError> {
        let bad = |m: String| Err(WireError::Usage(m));
        if self.rtt > MAX_RTT {
            return bad(format!("--rtt {:?}: at most 10s", self.rtt));
        }
        if self.jitter > MAX_RTT {
            return bad(format!("--jitter {:?}: at most 10s", self.jitter));
        }
        if !(0.0..=100.0).contains(&self.loss_pct) {
            return bad(format!("--loss {}: between 0% and 100%", self.loss_pct));
        }
        if let Some(rate) = self.bandwidth {
            if rate < 8_000 {
                return bad(format!(
                    "--bandwidth {rate} bit/s: at least 8kbit (one packet must cross in time)"
                ));
            }
        }
        if let Some(o) = self.outage {
            if o.every.is_zero() || o.length.is_zero() {
                return bad("--outage-every and --outage-for must be more than 0".into());
            }
            if o.length >= o.every {
                return bad(format!(
                    "--outage-for ({:?}) must be shorter than --outage-every ({:?})",
                    o.length, o.every
                ));
            }
        }
        Ok(())
    }

    /// A one-line description for people: `rtt 40ms, loss 3% (seed 7)`.
    pub fn describe(&self, seed: u64) -> String {
        let mut parts = vec![format!("rtt {:?}", self.rtt)];
        if !self.jitter.is_zero() {
            parts.push(format!("jitter {:?}", self.jitter));
        }
        if self.loss_pct > 0.0 {
            parts.push(format!("loss {}% (seed {seed})", self.loss_pct));
        }
        if let Some(rate) = self.bandwidth {
            parts.push(format!("bandwidth {} kbit/s", rate / 1000));
        }
        if let Some(o) = self.outage {
            parts.push(format!("outage {:?} every {:?}", o.length, o.every));
        }
        parts.join(", ")
    }
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

    /// Without wire flags the lab runs on the host, no wire.
    #[test]
    fn no_wire_flags_means_no_wire() {
        assert_eq!(WireOptions::from_args(&lab_args(&[])).unwrap(), None);
    }

    /// Wire flags become validated options.
    #[test]
    fn wire_flags_become_options() {
        let o = WireOptions::from_args(&lab_args(&[
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
        ]))
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
            let e = WireOptions::from_args(&lab_args(argv)).unwrap_err();
            assert!(matches!(e, WireError::Usage(_)), "{argv:?}: {e}");
        }
    }
}
