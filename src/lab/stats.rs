//! The lab's own request counters, so load tests can compare what they sent with what
//! the server saw (`/__lab/stats`, [`crate::lab::RunningLab::stats`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// A route family: the first path segment of a lab route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    Index,
    Delay,
    Bytes,
    Cold,
    Cache,
    Close,
    Status,
    Reset,
    Cdn,
    ServerTiming,
    Redirect,
    Text,
    NotFound,
}

impl Family {
    const ALL: [Family; 13] = [
        Family::Index,
        Family::Delay,
        Family::Bytes,
        Family::Cold,
        Family::Cache,
        Family::Close,
        Family::Status,
        Family::Reset,
        Family::Cdn,
        Family::ServerTiming,
        Family::Redirect,
        Family::Text,
        Family::NotFound,
    ];

    /// The family's name in the stats JSON.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Family::Index => "index",
            Family::Delay => "delay",
            Family::Bytes => "bytes",
            Family::Cold => "cold",
            Family::Cache => "cache",
            Family::Close => "close",
            Family::Status => "status",
            Family::Reset => "reset",
            Family::Cdn => "cdn",
            Family::ServerTiming => "server-timing",
            Family::Redirect => "redirect",
            Family::Text => "text",
            Family::NotFound => "not-found",
        }
    }

    /// The family a path belongs to.
    pub(crate) fn of(path: &str) -> Family {
        let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
        match first {
            "" => Family::Index,
            "delay" => Family::Delay,
            "bytes" => Family::Bytes,
            "cold" => Family::Cold,
            "cache" => Family::Cache,
            "close" => Family::Close,
            "status" => Family::Status,
            "reset" => Family::Reset,
            "cdn" => Family::Cdn,
            "server-timing" => Family::ServerTiming,
            "redirect" => Family::Redirect,
            "text" => Family::Text,
            _ => Family::NotFound,
        }
    }
}

/// Live counters, shared by every connection of one lab.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    total: AtomicU64,
    connections: AtomicU64,
    tls_handshakes: AtomicU64,
    tls_resumed: AtomicU64,
    rejected: AtomicU64,
    quic_connections: AtomicU64,
    quic_resumed: AtomicU64,
    routes: [AtomicU64; Family::ALL.len()],
}

impl Counters {
    /// Counts one request (not `/__lab/stats` itself).
    pub(crate) fn request(&self, family: Family) {
        self.total.fetch_add(1, Ordering::Relaxed);
        let i = Family::ALL.iter().position(|f| *f == family).unwrap_or(0);
        self.routes[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one accepted TCP connection.
    pub(crate) fn connection(&self) {
        self.connections.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one completed TLS handshake.
    pub(crate) fn tls_handshake(&self, resumed: bool) {
        self.tls_handshakes.fetch_add(1, Ordering::Relaxed);
        if resumed {
            self.tls_resumed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts one accepted QUIC (HTTP/3) connection.
    pub(crate) fn quic_connection(&self) {
        self.quic_connections.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one QUIC handshake that found its session (a resumption, maybe 0-RTT).
    pub(crate) fn quic_resumed(&self) {
        self.quic_resumed.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one request turned away with 503 by `--overload 503`.
    pub(crate) fn rejected(&self) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// A snapshot.
    pub(crate) fn snapshot(&self) -> LabStats {
        let routes = Family::ALL
            .iter()
            .zip(&self.routes)
            .map(|(f, n)| (f.name().to_string(), n.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect();
        LabStats {
            total: self.total.load(Ordering::Relaxed),
            connections: self.connections.load(Ordering::Relaxed),
            tls_handshakes: self.tls_handshakes.load(Ordering::Relaxed),
            tls_resumed: self.tls_resumed.load(Ordering::Relaxed),
            overload_rejected: self.rejected.load(Ordering::Relaxed),
            quic_connections: self.quic_connections.load(Ordering::Relaxed),
            quic_resumed: self.quic_resumed.load(Ordering::Relaxed),
            routes,
        }
    }
}

/// What the lab has seen since it started (the JSON of `/__lab/stats`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabStats {
    /// Requests received, every route except `/__lab/stats`.
    pub total: u64,
    /// TCP connections accepted.
    pub connections: u64,
    /// TLS handshakes completed.
    pub tls_handshakes: u64,
    /// Of those, resumed sessions.
    pub tls_resumed: u64,
    /// Requests answered 503 at once because of `--overload 503`.
    pub overload_rejected: u64,
    /// QUIC (HTTP/3) connections accepted (`--http3`); not in `connections`.
    #[serde(default)]
    pub quic_connections: u64,
    /// Of those, handshakes that resumed a session.
    #[serde(default)]
    pub quic_resumed: u64,
    /// Requests per route family (`delay`, `bytes`, `cache`, …, `not-found`); families
    /// with no request are left out.
    pub routes: BTreeMap<String, u64>,
}

impl LabStats {
    /// Requests seen for one family (0 when none).
    pub fn route(&self, family: &str) -> u64 {
        self.routes.get(family).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_from_paths() {
        assert_eq!(Family::of("/"), Family::Index);
        assert_eq!(Family::of("/delay/20ms"), Family::Delay);
        assert_eq!(Family::of("/server-timing"), Family::ServerTiming);
        assert_eq!(Family::of("/nope"), Family::NotFound);
    }

    #[test]
    fn snapshot_counts_per_family() {
        let c = Counters::default();
        c.request(Family::Delay);
        c.request(Family::Delay);
        c.request(Family::Cache);
        let s = c.snapshot();
        assert_eq!(s.total, 3);
        assert_eq!(s.route("delay"), 2);
        assert_eq!(s.route("cache"), 1);
        assert_eq!(s.route("bytes"), 0);
    }
}
