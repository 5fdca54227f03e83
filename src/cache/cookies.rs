//! What a cookie is for, told by its name alone (values are never looked at): an
//! analytics or advertising cookie (`_ga`, `_gid`, `_fbp`, `utm*`, …) that no server
//! reads and a cache may strip before its lookup, a session cookie (`PHPSESSID`,
//! `wordpress_logged_in_*`, Django's `sessionid`, Rails' `_*_session`, …) that marks a
//! visitor the server answers for alone — a cache that passes it is right, and
//! stripping it would serve one visitor's page to another or log them out — or
//! anything else (a preference, a consent flag: unknown, so never stripped either).
//!
//! Sources for the names: Google Analytics' cookie usage page (`_ga`, `_ga_*`,
//! `_gid`, `_gat*`, `__utm*`), Meta's pixel (`_fbp`, `_fbc`), Microsoft Clarity and
//! Ads (`_clck`, `_clsk`, `_uetsid`, `_uetvid`), HubSpot (`__hs*`, `hubspotutk`),
//! Hotjar (`_hj*`); Varnish's "Removing cookies" example in the Varnish book strips
//! the same families. Session names from each framework's documentation (PHP
//! `session.name`, WordPress `wp-includes/default-constants.php`, Django
//! `SESSION_COOKIE_NAME`/`CSRF_COOKIE_NAME`, Rails `session_store`, Express
//! `express-session`, Servlet `JSESSIONID`, Ghost's admin session, DokuWiki's
//! `DokuWiki` session, MediaWiki's `<wiki>_session`/`UserID`/`Token`).

use serde::Serialize;

/// What a cookie is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CookieKind {
    /// Analytics or advertising: no server reads it; a cache may strip it.
    Analytics,
    /// Marks a (logged-in or tracked) visitor whose page is their own.
    Session,
    /// Anything else (preferences, consent, load-balancer stickiness): kept.
    Other,
}

impl CookieKind {
    /// Name as in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CookieKind::Analytics => "analytics",
            CookieKind::Session => "session",
            CookieKind::Other => "other",
        }
    }
}

/// Exact analytics names, and prefixes of analytics names.
const ANALYTICS_EXACT: &[&str] = &[
    "_ga",
    "_gid",
    "_gat",
    "_fbp",
    "_fbc",
    "_gcl_au",
    "_clck",
    "_clsk",
    "_uetsid",
    "_uetvid",
    "hubspotutk",
    "_pk_ses",
    "_pk_id",
    "__cf_bm",
    "_hjid",
    "ajs_anonymous_id",
    "ajs_user_id",
    "_scid",
    "_ttp",
    "muid",
];
const ANALYTICS_PREFIX: &[&str] = &[
    "_ga_",
    "_gat_",
    "__utm",
    "utm_",
    "_hj",
    "__hs",
    "_pk_",
    "_gcl_",
    "_uet",
    "amplitude_id",
    "_dc_gtm_",
];

/// Exact session names (case-insensitive), and prefixes/suffixes of session names.
const SESSION_EXACT: &[&str] = &[
    "phpsessid",
    "jsessionid",
    "sessionid",
    "csrftoken",
    "connect.sid",
    "ghost-admin-api-session",
    "ghost-members-ssr",
    "dokuwiki",
    "laravel_session",
    "asp.net_sessionid",
    "aspsessionid",
    "sid",
    "session",
    "_session_id",
    "userid",
    "token",
    "rack.session",
    "ci_session",
];
const SESSION_PREFIX: &[&str] = &[
    "wordpress_",
    "wp-settings",
    "wp_woocommerce_session",
    "ssess",
    "sess",
    "dw",
];
const SESSION_SUFFIX: &[&str] = &[
    "_session", "session", "sessid", "_sid", "username", "userid", "token",
];

/// What the cookie named `name` is for. A name that looks like a session wins over
/// an analytics prefix (`utm_session` is kept): a wrong "analytics" would have a cache
/// strip what the server reads, a wrong "session" only leaves a cookie in place.
pub fn classify(name: &str) -> CookieKind {
    let n = name.trim().to_ascii_lowercase();
    if ANALYTICS_EXACT.contains(&n.as_str()) {
        return CookieKind::Analytics;
    }
    if SESSION_EXACT.contains(&n.as_str())
        || SESSION_PREFIX.iter().any(|p| n.starts_with(p))
        || SESSION_SUFFIX.iter().any(|s| n.ends_with(s))
    {
        return CookieKind::Session;
    }
    if ANALYTICS_PREFIX.iter().any(|p| n.starts_with(p)) {
        return CookieKind::Analytics;
    }
    CookieKind::Other
}

/// The names in a `Cookie:` request field (`a=1; b=2` → `[a, b]`), no values.
pub fn request_names(cookie: &str) -> Vec<String> {
    cookie
        .split(';')
        .filter_map(|p| p.split_once('=').map(|(n, _)| n.trim()).or(Some(p.trim())))
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// The name a `Set-Cookie:` field sets (no value, no attributes).
pub fn set_cookie_name(set_cookie: &str) -> Option<String> {
    let (n, _) = set_cookie.split_once('=')?;
    let n = n.trim();
    (!n.is_empty()).then(|| n.to_string())
}

/// Cookie names split by kind: (analytics, session, other), each in the order given.
pub fn split(names: &[String]) -> (Vec<String>, Vec<String>, Vec<String>) {
    let (mut a, mut s, mut o) = (Vec::new(), Vec::new(), Vec::new());
    for n in names {
        match classify(n) {
            CookieKind::Analytics => a.push(n.clone()),
            CookieKind::Session => s.push(n.clone()),
            CookieKind::Other => o.push(n.clone()),
        }
    }
    (a, s, o)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Analytics cookies are told from session cookies by name: Google Analytics'
    /// `_ga`, `_ga_<id>`, `_gid`, `__utmz`, Meta's `_fbp`, UTM-named ones; the sessions
    /// of PHP, WordPress (logged in, with the site hash), Django, Rails, Express,
    /// Servlet containers, Ghost, DokuWiki and MediaWiki; a consent or theme cookie is
    /// neither (never stripped).
    #[test]
    fn names_classify() {
        for a in [
            "_ga",
            "_ga_ABC123",
            "_gid",
            "_gat_UA-1",
            "__utmz",
            "_fbp",
            "utm_source",
            "_hjSessionUser_123",
            "_clck",
        ] {
            assert_eq!(classify(a), CookieKind::Analytics, "{a}");
        }
        for s in [
            "PHPSESSID",
            "wordpress_logged_in_0123abcd",
            "wordpress_sec_0123abcd",
            "wp-settings-1",
            "sessionid",
            "csrftoken",
            "_myapp_session",
            "connect.sid",
            "JSESSIONID",
            "ghost-admin-api-session",
            "DokuWiki",
            "my_wiki_session",
            "laravel_session",
        ] {
            assert_eq!(classify(s), CookieKind::Session, "{s}");
        }
        assert_eq!(classify("utm_session"), CookieKind::Session);
        for o in ["cookie_consent", "theme", "lang"] {
            assert_eq!(classify(o), CookieKind::Other, "{o}");
        }
        assert_eq!(
            request_names("_ga=GA1.1.1; PHPSESSID=abc; theme=dark"),
            ["_ga", "PHPSESSID", "theme"]
        );
        assert_eq!(
            set_cookie_name("DokuWiki=abc; path=/; HttpOnly").as_deref(),
            Some("DokuWiki")
        );
        let (a, s, o) = split(&request_names(
            "_ga=1; _gid=2; wordpress_logged_in_x=3; x=4",
        ));
        assert_eq!((a.len(), s.len(), o.len()), (2, 1, 1));
    }
}
