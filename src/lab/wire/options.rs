//! The wire's options: what `--rtt`, `--jitter`, `--loss`, `--loss-seed`,
//! `--bandwidth` and `--outage-every/--outage-for` ask for (read from the flags by
//! `config::lab`), validated.

use std::time::Duration;

use super::WireError;

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
