//! A VU's cookie jar (RFC 6265, the user-agent rules a load test needs): cookies
//! from `Set-Cookie` (§5.2) stored per name, domain and path (§5.3), sent back in one
//! `Cookie` header to requests whose host and path match (§5.4), until they expire
//! (`Max-Age` over `Expires`, §5.3 step 3). Never shared between VUs: each VU owns
//! its jar. Bounded: [`MAX_COOKIES`] cookies of at most [`MAX_COOKIE`] bytes.

use std::time::{Duration, Instant, SystemTime};

/// The most cookies a jar keeps (RFC 6265 §6.1 asks for at least 50 per domain);
/// the oldest goes first.
pub const MAX_COOKIES: usize = 50;
/// The largest cookie kept, name and value (§6.1: at least 4096 bytes).
pub const MAX_COOKIE: usize = 4096;

/// One stored cookie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cookie {
    pub name: String,
    pub value: String,
    /// Lowercase; with `host_only` the exact host, else a domain and its subdomains.
    pub domain: String,
    pub host_only: bool,
    pub path: String,
    pub secure: bool,
    pub expires: Option<Instant>,
}

/// A VU's cookies.
#[derive(Debug, Clone, Default)]
pub struct Jar {
    cookies: Vec<Cookie>,
}

/// §5.1.4: the default path of a request path (up to its last '/', or "/").
fn default_path(path: &str) -> String {
    let path = path.split('?').next().unwrap_or("");
    if !path.starts_with('/') {
        return "/".into();
    }
    match path.rfind('/') {
        Some(0) | None => "/".into(),
        Some(i) => path[..i].to_string(),
    }
}

/// §5.1.4: whether `cookie_path` path-matches the request path.
fn path_matches(request: &str, cookie_path: &str) -> bool {
    let request = request.split('?').next().unwrap_or("");
    request == cookie_path
        || (request.starts_with(cookie_path)
            && (cookie_path.ends_with('/')
                || request.as_bytes().get(cookie_path.len()) == Some(&b'/')))
}

/// §5.1.3: whether `host` domain-matches `domain` (both lowercase).
fn domain_matches(host: &str, domain: &str) -> bool {
    host == domain
        || (host.ends_with(domain)
            && host.as_bytes().get(host.len() - domain.len() - 1) == Some(&b'.')
            && host.parse::<std::net::IpAddr>().is_err())
}

impl Jar {
    /// Stores what one `Set-Cookie` value says, for a response to `path` on `host`
    /// (an invalid or foreign-domain cookie is ignored, §5.3 step 6).
    pub fn store(&mut self, host: &str, path: &str, set_cookie: &str, now: Instant) {
        let host = host.to_ascii_lowercase();
        let mut parts = set_cookie.split(';');
        let Some((name, value)) = parts.next().and_then(|p| p.split_once('=')) else {
            return;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() || name.len() + value.len() > MAX_COOKIE {
            return;
        }
        let mut c = Cookie {
            name: name.to_string(),
            value: value.trim_matches('"').to_string(),
            domain: host.clone(),
            host_only: true,
            path: default_path(path),
            secure: false,
            expires: None,
        };
        let mut max_age: Option<i64> = None;
        let mut expires: Option<SystemTime> = None;
        for attr in parts {
            let (k, v) = attr.split_once('=').unwrap_or((attr, ""));
            let (k, v) = (k.trim(), v.trim());
            if k.eq_ignore_ascii_case("max-age") {
                max_age = v.parse().ok().or(max_age);
            } else if k.eq_ignore_ascii_case("expires") {
                expires = httpdate::parse_http_date(v).ok().or(expires);
            } else if k.eq_ignore_ascii_case("domain") && !v.is_empty() {
                let d = v.trim_start_matches('.').to_ascii_lowercase();
                if !domain_matches(&host, &d) {
                    return;
                }
                c.domain = d;
                c.host_only = false;
            } else if k.eq_ignore_ascii_case("path") && v.starts_with('/') {
                c.path = v.to_string();
            } else if k.eq_ignore_ascii_case("secure") {
                c.secure = true;
            }
        }
        let gone = match (max_age, expires) {
            (Some(s), _) if s <= 0 => true,
            (Some(s), _) => {
                c.expires = Some(now + Duration::from_secs(s as u64));
                false
            }
            (None, Some(at)) => match at.duration_since(SystemTime::now()) {
                Ok(left) => {
                    c.expires = Some(now + left);
                    false
                }
                Err(_) => true,
            },
            (None, None) => false,
        };
        self.cookies
            .retain(|o| !(o.name == c.name && o.domain == c.domain && o.path == c.path));
        if !gone {
            if self.cookies.len() == MAX_COOKIES {
                self.cookies.remove(0);
            }
            self.cookies.push(c);
        }
    }

    /// The `Cookie` header for a request to `path` on `host` (None: no cookie
    /// applies); longer paths first (§5.4 step 2); expired cookies are dropped.
    pub fn header(&mut self, host: &str, path: &str, https: bool, now: Instant) -> Option<String> {
        if self.cookies.is_empty() {
            return None;
        }
        self.cookies.retain(|c| c.expires.is_none_or(|e| e > now));
        let host = host.to_ascii_lowercase();
        let mut hits: Vec<&Cookie> = self
            .cookies
            .iter()
            .filter(|c| {
                (if c.host_only {
                    c.domain == host
                } else {
                    domain_matches(&host, &c.domain)
                }) && path_matches(path, &c.path)
                    && (https || !c.secure)
            })
            .collect();
        if hits.is_empty() {
            return None;
        }
        hits.sort_by_key(|c| std::cmp::Reverse(c.path.len()));
        let mut out = String::new();
        for c in hits {
            if !out.is_empty() {
                out.push_str("; ");
            }
            out.push_str(&c.name);
            out.push('=');
            out.push_str(&c.value);
        }
        Some(out)
    }

    /// A stored cookie's value by name (the first one).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.cookies
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.value.as_str())
    }

    /// How many cookies it holds.
    pub fn len(&self) -> usize {
        self.cookies.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.cookies.is_empty()
    }
}

/// The value a `Set-Cookie` line gives the cookie `name`, if it is that cookie.
pub fn set_cookie_value<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let first = line.split(';').next()?;
    let (n, v) = first.split_once('=')?;
    (n.trim() == name).then(|| v.trim().trim_matches('"'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6265 §5.3/§5.4: host-only by default, Domain widens to subdomains (and a
    /// foreign Domain is refused), Path scopes, Secure only over https, Max-Age=0
    /// deletes, a later Max-Age expires, the same name+domain+path replaces.
    #[test]
    fn rfc6265_basics() {
        let now = Instant::now();
        let mut j = Jar::default();
        j.store(
            "api.example.test",
            "/login",
            "sid=abc; Path=/; HttpOnly",
            now,
        );
        j.store("api.example.test", "/login", "pref=1", now);
        j.store("api.example.test", "/", "evil=1; Domain=other.test", now);
        j.store("api.example.test", "/", "wide=1; Domain=example.test", now);
        j.store("api.example.test", "/", "sec=1; Secure", now);
        j.store("api.example.test", "/", "short=1; Max-Age=10", now);
        assert_eq!(j.get("evil"), None);
        // `pref` took the default path "/" (of "/login").
        assert_eq!(
            j.header("api.example.test", "/me", false, now).as_deref(),
            Some("sid=abc; pref=1; wide=1; short=1")
        );
        assert!(j
            .header("api.example.test", "/me", true, now)
            .unwrap()
            .contains("sec=1"));
        assert_eq!(
            j.header("www.example.test", "/", false, now).as_deref(),
            Some("wide=1")
        );
        assert_eq!(j.header("other.test", "/", false, now), None);
        let later = now + Duration::from_secs(11);
        assert!(!j
            .header("api.example.test", "/", false, later)
            .unwrap()
            .contains("short"));
        j.store("api.example.test", "/", "sid=new; Path=/", now);
        assert_eq!(j.get("sid"), Some("new"));
        j.store("api.example.test", "/", "sid=; Path=/; Max-Age=0", now);
        assert_eq!(j.get("sid"), None);
        j.store("h", "/a/b/c", "deep=1", now);
        assert_eq!(
            j.header("h", "/a/b/x", false, now).as_deref(),
            Some("deep=1")
        );
        assert_eq!(j.header("h", "/a/bc", false, now), None);
        j.store(
            "h",
            "/",
            "old=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT",
            now,
        );
        assert_eq!(j.get("old"), None);
    }

    #[test]
    fn the_jar_is_bounded() {
        let now = Instant::now();
        let mut j = Jar::default();
        for i in 0..MAX_COOKIES + 10 {
            j.store("h", "/", &format!("c{i}=v"), now);
        }
        assert_eq!(j.len(), MAX_COOKIES);
        assert_eq!(j.get("c0"), None);
        j.store("h", "/", &format!("big={}", "x".repeat(MAX_COOKIE)), now);
        assert_eq!(j.get("big"), None);
        assert_eq!(set_cookie_value("sid=abc; Path=/", "sid"), Some("abc"));
        assert_eq!(set_cookie_value("sid=abc", "other"), None);
    }
}
