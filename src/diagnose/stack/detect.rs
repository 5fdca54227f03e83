//! Stack detection: every response already seen (the probe's, the cache audit's)
//! and the few the peek fetched (the page with its HTML, a 404 page) are read
//! against [`SIGNATURES`]; the one cache detector (`cache::status`) names the cache
//! or CDN that reported a status; HTTP/1.1 header names all in lowercase point to
//! HAProxy 2 at the edge (it writes them so; nginx, Apache, Caddy and PHP write
//! `Content-Type`). Each role takes the component with the most evidence; every
//! piece of evidence is kept.

use std::collections::BTreeMap;

use super::signatures::{matches, version_after, Place, Sig, SIGNATURES};
use super::{Component, Evidence, Role, Stack};
use crate::cache::{cache_status, CacheKind, Headers};

/// One response as detection reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observed {
    pub status: u16,
    /// Header fields as received; names keep their case when `case_known`.
    pub headers: Vec<(String, String)>,
    /// The names' case is the server's own (an HTTP/1.1 response read raw).
    pub case_known: bool,
    /// The first KiB of the body (HTML), decoded as text; empty when not kept.
    pub body: String,
    /// A 404 page asked for a path that cannot exist (its body is an error page).
    pub error_page: bool,
}

/// The `content` of every `<meta name="generator" content="…">` in `html`.
pub fn generators(html: &str) -> Vec<String> {
    let lower = html.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = lower[from..].find("<meta") {
        let start = from + i;
        let end = lower[start..].find('>').map_or(lower.len(), |e| start + e);
        let tag = &lower[start..end];
        if tag.contains("name=\"generator\"") || tag.contains("name='generator'") {
            if let Some(c) = attr(&html[start..end], "content") {
                out.push(c);
            }
        }
        from = end.max(start + 5);
        if from >= lower.len() {
            break;
        }
    }
    out
}

/// The value of `name="…"` (or `'…'`) in one tag, case of the value kept.
fn attr(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let at = lower.find(&format!("{name}="))? + name.len() + 1;
    let rest = &tag[at..];
    let quote = rest.chars().next()?;
    if quote == '"' || quote == '\'' {
        let inner = &rest[1..];
        inner.find(quote).map(|e| inner[..e].trim().to_string())
    } else {
        Some(
            rest.split(|c: char| c.is_whitespace() || c == '/' || c == '>')
                .next()?
                .to_string(),
        )
    }
}

/// What the cache status detector's kind means for the stack.
fn from_kind(k: CacheKind) -> Option<(Role, &'static str, &'static str)> {
    Some(match k {
        CacheKind::Varnish => (Role::Cache, "varnish", "Varnish"),
        CacheKind::Apache => (Role::Cache, "apache", "Apache mod_cache"),
        CacheKind::Nginx => (Role::Cache, "nginx", "nginx proxy_cache"),
        CacheKind::Cloudflare => (Role::Cdn, "cloudflare", "Cloudflare"),
        CacheKind::CloudFront => (Role::Cdn, "cloudfront", "CloudFront"),
        CacheKind::Fastly => (Role::Cdn, "fastly", "Fastly"),
        CacheKind::Akamai => (Role::Cdn, "akamai", "Akamai"),
        CacheKind::Other => return None,
    })
}

/// How much evidence one (role, id) has.
struct Score {
    weight: u32,
    /// Order first seen (ties go to the first).
    first: usize,
    name: String,
    version: Option<String>,
}

/// Tallies evidence per (role, id).
#[derive(Default)]
struct Tally {
    evidence: Vec<Evidence>,
    score: BTreeMap<(Role, String), Score>,
}

impl Tally {
    /// Counts one clue: `who` is (role, id, name), seen at `source` as `value`.
    fn add(
        &mut self,
        who: (Role, &str, &str),
        source: String,
        value: &str,
        weight: u8,
        version: Option<String>,
    ) {
        let (role, id, name) = who;
        let e = Evidence {
            role,
            id: id.to_string(),
            source,
            value: value.chars().take(120).collect(),
        };
        if self.evidence.contains(&e) {
            return;
        }
        self.evidence.push(e);
        let n = self.score.len();
        let slot = self
            .score
            .entry((role, id.to_string()))
            .or_insert_with(|| Score {
                weight: 0,
                first: n,
                name: name.to_string(),
                version: None,
            });
        slot.weight += u32::from(weight);
        if slot.version.is_none() {
            slot.version = version;
        }
    }

    fn sig(&mut self, s: &Sig, value: &str) {
        let version = version_after(value, s.needle);
        self.add(
            (s.role, s.id, s.name),
            s.place.describe(),
            value,
            s.weight,
            version,
        );
    }
}

/// Reads `value` found at `place` against every signature there: the first match of
/// each role counts.
fn scan(t: &mut Tally, place: Place, value: &str) {
    let mut done: Vec<Role> = Vec::new();
    for s in SIGNATURES.iter().filter(|s| same_place(s.place, place)) {
        if !done.contains(&s.role) && matches(s, value) {
            done.push(s.role);
            t.sig(s, value);
        }
    }
}

fn same_place(a: Place, b: Place) -> bool {
    match (a, b) {
        (Place::Header(x), Place::Header(y)) => x == y,
        (Place::HeaderPresent(x), Place::HeaderPresent(y)) => x == y,
        _ => a == b,
    }
}

/// Recognises the stack from the responses seen.
pub fn detect(seen: &[Observed]) -> Stack {
    let mut t = Tally::default();
    let mut lower_case_h1 = None;
    for o in seen {
        let headers = Headers::from_pairs(&o.headers);
        for (name, value) in &headers.0 {
            if name == "set-cookie" {
                if let Some(n) = crate::cache::cookies::set_cookie_name(value) {
                    scan(&mut t, Place::SetCookie, &n);
                }
                continue;
            }
            scan(&mut t, Place::Header(leak(name)), value);
            scan(&mut t, Place::HeaderPresent(leak(name)), name);
        }
        if let Some((role, id, name)) = cache_status(&headers).kind.and_then(from_kind) {
            t.add((role, id, name), "cache status".into(), id, 2, None);
        }
        for g in generators(&o.body) {
            scan(&mut t, Place::Generator, &g);
        }
        if o.error_page {
            scan(&mut t, Place::ErrorBody, &o.body);
        } else if !o.body.is_empty() {
            scan(&mut t, Place::Body, &o.body);
        }
        if o.case_known && o.headers.len() >= 3 && lower_case_h1.is_none() {
            let all_lower = o
                .headers
                .iter()
                .all(|(n, _)| !n.chars().any(|c| c.is_ascii_uppercase()));
            lower_case_h1 = Some(all_lower);
        }
    }
    // HAProxy 2 (HTX) writes every header name in lowercase on HTTP/1.1; the servers
    // the table names do not (nginx, Apache, Caddy, PHP, Java, Python, Ruby servers
    // write `Content-Type`). hyper-based servers (and Envoy) write lowercase too, so
    // lowercase alone says nothing: only with a server named behind it.
    let envoy = t.score.keys().any(|(_, id)| id == "envoy");
    let named_server = t.score.keys().any(|(r, _)| *r == Role::Server);
    if lower_case_h1 == Some(true) && !envoy && named_server {
        t.add(
            (Role::Proxy, "haproxy", "HAProxy"),
            "header case".into(),
            "every header name lowercase over HTTP/1.1 (as HAProxy 2 writes them)",
            2,
            None,
        );
    }
    let mut stack = Stack::default();
    for role in Role::ALL {
        let best = t
            .score
            .iter()
            .filter(|((r, _), _)| *r == role)
            .max_by(|a, b| a.1.weight.cmp(&b.1.weight).then(b.1.first.cmp(&a.1.first)));
        if let Some(((_, id), score)) = best {
            *stack.slot(role) = Some(Component {
                id: id.clone(),
                name: score.name.clone(),
                version: score.version.clone(),
            });
        }
    }
    // A CDN that names itself in Server is not the origin's server.
    if stack
        .server
        .as_ref()
        .is_some_and(|s| stack.cdn.as_ref().is_some_and(|c| c.id == s.id))
    {
        stack.server = None;
    }
    // A PHP application runs on PHP, even when nothing says so (expose_php off).
    const PHP_APPS: [&str; 5] = ["wordpress", "dokuwiki", "mediawiki", "drupal", "joomla"];
    if stack.framework.is_none() {
        if let Some(a) = stack
            .app
            .as_ref()
            .filter(|a| PHP_APPS.contains(&a.id.as_str()))
        {
            t.evidence.push(Evidence {
                role: Role::Framework,
                id: "php".into(),
                source: "application".into(),
                value: format!("{} is a PHP application", a.name),
            });
            stack.framework = Some(Component {
                id: "php".into(),
                name: "PHP".into(),
                version: None,
            });
        }
    }
    // nginx and Caddy run PHP only through FastCGI: that PHP is PHP-FPM.
    let fastcgi_server = stack
        .server
        .as_ref()
        .is_some_and(|s| s.id == "nginx" || s.id == "caddy");
    if let Some(f) = stack.framework.as_mut().filter(|f| f.id == "php") {
        if fastcgi_server {
            f.id = "php-fpm".into();
            f.name = "PHP-FPM".into();
        }
    }
    stack.evidence = t.evidence;
    stack.summary = stack.line();
    stack
}

/// Header names as the signature table spells them: the few it names, else a
/// placeholder that matches no row (the table's places are `&'static str`).
fn leak(name: &str) -> &'static str {
    SIGNATURES
        .iter()
        .find_map(|s| match s.place {
            Place::Header(h) | Place::HeaderPresent(h) if h == name => Some(h),
            _ => None,
        })
        .unwrap_or("")
}
