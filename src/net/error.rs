//! What can go wrong on the way to a response, classified the way every report and the
//! load engine's error counts name it (`connect`, `timeout`, `reset`, `tls`, `protocol`).

use std::io;
use std::time::Duration;

/// A failed exchange, with enough words for a user to act on it.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The name did not resolve.
    #[error("cannot resolve {host}: {reason}")]
    Dns { host: String, reason: String },
    /// The TCP connection could not be made.
    #[error("cannot connect to {addr}: {reason}")]
    Connect {
        addr: std::net::SocketAddr,
        reason: io::Error,
    },
    /// The TLS handshake failed.
    #[error("TLS handshake with {host} failed: {reason}{hint}")]
    Tls {
        host: String,
        reason: String,
        hint: &'static str,
    },
    /// A QUIC connection (HTTP/3) could not be made or was lost.
    #[error("HTTP/3 (QUIC) to {addr} failed: {reason}")]
    Quic {
        addr: std::net::SocketAddr,
        reason: String,
    },
    /// No answer within the request timeout.
    #[error("{what} timed out after {}", crate::units::fmt_ms(crate::units::ms(*after)))]
    Timeout { what: &'static str, after: Duration },
    /// The peer reset or closed the connection before the response was complete.
    #[error("the server closed the connection {when}")]
    Closed { when: &'static str },
    /// The peer sent something that is not HTTP.
    #[error("the server sent an invalid response: {0}")]
    Protocol(String),
    /// Redirects that were not followed to a page (a loop, too many, an unusable
    /// Location).
    #[error("{0}")]
    Redirects(String),
    /// The user stopped the run (Ctrl-C) before anything was measured.
    #[error("interrupted before anything was measured")]
    Interrupted,
    /// A local I/O problem.
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl NetError {
    /// The error kind name used in counts and JSON: `connect`, `timeout`, `reset`,
    /// `tls` or `protocol`.
    pub fn kind(&self) -> &'static str {
        match self {
            NetError::Dns { .. } | NetError::Connect { .. } | NetError::Quic { .. } => "connect",
            NetError::Tls { .. } => "tls",
            NetError::Timeout { .. } => "timeout",
            NetError::Closed { .. } => "reset",
            NetError::Protocol(_) | NetError::Redirects(_) => "protocol",
            NetError::Io(e) if is_reset(e) => "reset",
            NetError::Io(_) => "protocol",
            NetError::Interrupted => "interrupted",
        }
    }

    /// Classifies a hyper error from a request in flight.
    pub fn from_hyper(e: hyper::Error) -> NetError {
        use std::error::Error as _;
        let mut source = e.source();
        while let Some(s) = source {
            if let Some(io) = s.downcast_ref::<io::Error>() {
                if is_reset(io) {
                    return NetError::Closed {
                        when: "before the response was complete (reset)",
                    };
                }
                if let Some(inner) = io.get_ref() {
                    if inner.to_string().contains("tls") {
                        return NetError::Protocol(io.to_string());
                    }
                }
            }
            source = s.source();
        }
        if e.is_incomplete_message() || e.is_canceled() || e.is_closed() {
            NetError::Closed {
                when: "before the response was complete",
            }
        } else if e.is_parse_too_large() {
            NetError::Protocol(super::http::head_too_large())
        } else if e.is_parse() || e.is_parse_status() {
            NetError::Protocol(e.to_string())
        } else {
            let detail = e
                .source()
                .map(|s| format!("{e}: {s}"))
                .unwrap_or_else(|| e.to_string());
            NetError::Protocol(detail)
        }
    }
}

fn is_reset(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof
    )
}
