//! Name resolution, timed: the system resolver (getaddrinfo, as curl uses), `--resolve`
//! overrides, and IP literals that need no lookup.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use super::error::NetError;

/// A `--resolve host:port:addr` override: connect to `addr` for `host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolveOverride {
    pub host: String,
    pub port: u16,
    pub addr: IpAddr,
}

/// Finds the `--resolve` override for `host:port`, if any.
pub fn lookup_override(overrides: &[ResolveOverride], host: &str, port: u16) -> Option<SocketAddr> {
    overrides
        .iter()
        .find(|o| o.port == port && o.host.eq_ignore_ascii_case(host))
        .map(|o| SocketAddr::new(o.addr, port))
}

/// The addresses a name resolved to and how long that took.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub addrs: Vec<SocketAddr>,
    pub took: Duration,
}

/// Resolves `host:port` anew (no cache), bounded by `timeout`.
pub async fn resolve(
    host: &str,
    port: u16,
    overrides: &[ResolveOverride],
    timeout: Duration,
) -> Result<Resolved, NetError> {
    let start = Instant::now();
    if let Some(addr) = lookup_override(overrides, host, port) {
        return Ok(Resolved {
            addrs: vec![addr],
            took: start.elapsed(),
        });
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(Resolved {
            addrs: vec![SocketAddr::new(ip, port)],
            took: start.elapsed(),
        });
    }
    let lookup = tokio::net::lookup_host((host.to_string(), port));
    let addrs: Vec<SocketAddr> = match tokio::time::timeout(timeout, lookup).await {
        Err(_) => {
            return Err(NetError::Timeout {
                what: "DNS lookup",
                after: timeout,
            })
        }
        Ok(Err(e)) => {
            return Err(NetError::Dns {
                host: host.to_string(),
                reason: e.to_string(),
            })
        }
        Ok(Ok(a)) => a.collect(),
    };
    if addrs.is_empty() {
        return Err(NetError::Dns {
            host: host.to_string(),
            reason: "no addresses".into(),
        });
    }
    // IPv4 first (a host without IPv6 routes fails fast on v6), the resolver's order
    // within a family.
    let mut sorted = addrs.clone();
    sorted.sort_by_key(|a| !a.is_ipv4());
    Ok(Resolved {
        addrs: sorted,
        took: start.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn literals_overrides_and_localhost() {
        let t = Duration::from_secs(5);
        let r = resolve("127.0.0.1", 80, &[], t).await.unwrap();
        assert_eq!(r.addrs, vec!["127.0.0.1:80".parse().unwrap()]);
        let o = ResolveOverride {
            host: "example.test".into(),
            port: 443,
            addr: "127.0.0.2".parse().unwrap(),
        };
        let r = resolve("example.test", 443, &[o], t).await.unwrap();
        assert_eq!(r.addrs, vec!["127.0.0.2:443".parse().unwrap()]);
        let r = resolve("localhost", 8080, &[], t).await.unwrap();
        assert!(r.addrs.iter().all(|a| a.ip().is_loopback()), "{r:?}");
    }
}
