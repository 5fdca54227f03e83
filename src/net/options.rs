//! How a client connects: timeout, certificate checks, `--resolve` overrides and the
//! HTTP version it may speak. Plain data, checked where it is built (`config::http`
//! from the flags, or in code by a command); nothing here parses flags or prints.

use std::path::PathBuf;
use std::time::Duration;

use super::dns::ResolveOverride;
use super::tls::TlsOptions;

/// Which HTTP version to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpVersionPref {
    /// HTTP/1.1 on http; ALPN (h2, http/1.1) on https.
    #[default]
    Auto,
    /// HTTP/1.1 only.
    Http1,
    /// HTTP/2 only (h2c prior knowledge on http).
    Http2,
}

/// Redirects `-L` follows unless `--max-redirs` says otherwise (and the cache audit
/// follows at most).
pub const MAX_REDIRECTS: usize = 10;

/// How to connect.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub timeout: Duration,
    pub insecure: bool,
    pub cacert: Option<PathBuf>,
    pub resolve: Vec<ResolveOverride>,
    pub version: HttpVersionPref,
    /// HTTP/3 over QUIC (`--http3`; `version` then stays `Auto`): see `net::quic`.
    pub http3: bool,
    /// `-L`: follow redirects, at most this many (`--max-redirs`); None measures a
    /// 3xx as the answer it is.
    pub follow_redirects: Option<usize>,
}

impl ClientOptions {
    /// How certificates are checked (`-k`, `--cacert`), for latscope's own side
    /// channels to the same user's servers (`--watch`, `--out`); ALPN left to them.
    pub fn tls(&self) -> TlsOptions {
        TlsOptions {
            insecure: self.insecure,
            cacert: self.cacert.clone(),
            alpn: Vec::new(),
        }
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: Duration::from_secs(60),
            insecure: false,
            cacert: None,
            resolve: Vec::new(),
            version: HttpVersionPref::Auto,
            http3: false,
            follow_redirects: None,
        }
    }
}
