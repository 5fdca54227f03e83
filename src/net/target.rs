//! What a user points latscope at: `http://`, `https://` or `tcp://host:port`,
//! checked once so every later step can rely on scheme, host and port.

use std::fmt;

/// The protocol to speak to a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
    /// A bare TCP connect (a TCP ping).
    Tcp,
}

/// A checked target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL as normalised (`http://host:port/path?query`).
    pub url: String,
    pub scheme: Scheme,
    /// Host name or address literal, without IPv6 brackets.
    pub host: String,
    pub port: u16,
    /// Path and query, starting with `/` (empty path becomes `/`).
    pub path_and_query: String,
}

/// Why a target was refused (a usage error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("'{0}' is not a valid URL: {1}")]
    Malformed(String, String),
    #[error("'{0}': unknown scheme '{1}' (use http://, https:// or tcp://host:port)")]
    UnknownScheme(String, String),
    #[error("'{0}' has no host")]
    NoHost(String),
    #[error("'{0}' needs a port (tcp://host:port)")]
    NoPort(String),
    #[error("a URL of {0} bytes is too long to send (at most {MAX_URL} bytes)")]
    TooLong(usize),
    /// CR, LF, TAB or another control character: a request line or header built
    /// from it could be split (the `url` crate would silently drop some of them).
    #[error("{0:?}: a URL cannot hold control characters such as CR, LF or TAB (percent-encode them: %0D, %0A, %09)")]
    Control(String),
}

/// The longest URL a request can carry (the `http` crate's request-target limit).
pub const MAX_URL: usize = 65_534;

impl Target {
    /// Parses a URL. A URL without a scheme is taken as `http://` (as curl does).
    pub fn parse(text: &str) -> Result<Target, TargetError> {
        let trimmed = text.trim();
        if has_control(trimmed) {
            return Err(TargetError::Control(text.to_string()));
        }
        let with_scheme = if trimmed.contains("://") {
            trimmed.to_string()
        } else {
            format!("http://{trimmed}")
        };
        if with_scheme.len() > MAX_URL {
            return Err(TargetError::TooLong(with_scheme.len()));
        }
        let url = url::Url::parse(&with_scheme)
            .map_err(|e| TargetError::Malformed(text.to_string(), e.to_string()))?;
        if url.as_str().len() > MAX_URL {
            return Err(TargetError::TooLong(url.as_str().len()));
        }
        let scheme = match url.scheme() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            "tcp" => Scheme::Tcp,
            other => {
                return Err(TargetError::UnknownScheme(
                    text.to_string(),
                    other.to_string(),
                ))
            }
        };
        let host = match url.host() {
            Some(url::Host::Domain(d)) if !d.is_empty() => d.to_string(),
            Some(url::Host::Ipv4(a)) => a.to_string(),
            Some(url::Host::Ipv6(a)) => a.to_string(),
            _ => return Err(TargetError::NoHost(text.to_string())),
        };
        let port = match (url.port(), scheme) {
            (Some(p), _) => p,
            (None, Scheme::Http) => 80,
            (None, Scheme::Https) => 443,
            (None, Scheme::Tcp) => return Err(TargetError::NoPort(text.to_string())),
        };
        let mut path_and_query = url.path().to_string();
        if path_and_query.is_empty() {
            path_and_query.push('/');
        }
        if let Some(q) = url.query() {
            path_and_query.push('?');
            path_and_query.push_str(q);
        }
        Ok(Target {
            url: url.to_string(),
            scheme,
            host,
            port,
            path_and_query,
        })
    }

    /// The value for the `Host` header (`host`, `host:port` when not the default,
    /// IPv6 in brackets).
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let default = matches!(
            (self.scheme, self.port),
            (Scheme::Http, 80) | (Scheme::Https, 443)
        );
        if default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// `scheme://authority`: the origin as text (RFC 6454's serialization).
    pub fn origin(&self) -> String {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
            Scheme::Tcp => "tcp",
        };
        format!("{scheme}://{}", self.authority())
    }

    /// Whether `other` is the same origin: scheme, host (without case) and port.
    pub fn same_origin(&self, other: &Target) -> bool {
        self.scheme == other.scheme
            && self.port == other.port
            && self.host.eq_ignore_ascii_case(&other.host)
    }

    /// The same target with another path and query (for scenario requests and
    /// redirects on the same origin).
    pub fn with_path(&self, path_and_query: &str) -> Target {
        let mut t = self.clone();
        t.path_and_query = if path_and_query.starts_with('/') {
            path_and_query.to_string()
        } else {
            format!("/{path_and_query}")
        };
        t.url = format!("{}{}", self.origin(), t.path_and_query);
        t
    }
}

/// Whether `text` holds a control character (C0 — CR, LF, TAB, NUL… — DEL or C1):
/// what a URL, a path or a request line must never carry raw.
pub fn has_control(text: &str) -> bool {
    text.chars().any(char::is_control)
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_http_https_tcp() {
        let t = Target::parse("http://127.0.0.1:8080/delay/20ms?x=1").unwrap();
        assert_eq!(t.scheme, Scheme::Http);
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 8080));
        assert_eq!(t.path_and_query, "/delay/20ms?x=1");
        assert_eq!(t.authority(), "127.0.0.1:8080");
        let t = Target::parse("https://example.test").unwrap();
        assert_eq!((t.port, t.path_and_query.as_str()), (443, "/"));
        assert_eq!(t.authority(), "example.test");
        let t = Target::parse("tcp://db.local:5432").unwrap();
        assert_eq!((t.scheme, t.port), (Scheme::Tcp, 5432));
        let t = Target::parse("http://[::1]:9000/").unwrap();
        assert_eq!(
            (t.host.as_str(), t.authority().as_str()),
            ("::1", "[::1]:9000")
        );
        let t = Target::parse("localhost:8080/x").unwrap();
        assert_eq!((t.scheme, t.path_and_query.as_str()), (Scheme::Http, "/x"));
    }

    #[test]
    fn rejects_bad_targets() {
        assert!(matches!(
            Target::parse("ftp://x/"),
            Err(TargetError::UnknownScheme(..))
        ));
        assert!(matches!(
            Target::parse("tcp://db"),
            Err(TargetError::NoPort(..))
        ));
        assert!(matches!(
            Target::parse("http://"),
            Err(TargetError::Malformed(..) | TargetError::NoHost(..))
        ));
        assert!(matches!(
            Target::parse("http://exa mple.com/"),
            Err(TargetError::Malformed(..))
        ));
    }

    #[test]
    fn with_path_keeps_origin() {
        let t = Target::parse("http://127.0.0.1:9/a")
            .unwrap()
            .with_path("/b?c");
        assert_eq!(t.url, "http://127.0.0.1:9/b?c");
    }
}
