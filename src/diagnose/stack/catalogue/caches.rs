//! Caches and CDNs: Varnish (VCL), Cloudflare, CloudFront, Fastly.

use super::{any, Table};

/// Varnish 7 and its VCL.
pub const VARNISH: Table = Table {
    id: "varnish",
    name: "Varnish (VCL)",
    rows: &[
        any(
            "cache:freshness",
            "Varnish takes the lifetime from s-maxage, max-age or Expires (else \
             `default_ttl`, 120 s) and makes `max-age=0` answers hit-for-miss: send \
             `s-maxage` from the application, or in `vcl_backend_response` `if \
             (beresp.ttl <= 0s) { set beresp.ttl = 120s; }` for URLs that are the same for \
             everyone",
            "Varnish docs: users-guide \"Cache-Control\"; builtin.vcl vcl_backend_response",
        ),
        any(
            "cache:private",
            "the built-in VCL makes `private`, `no-cache` and `no-store` answers \
             hit-for-miss; send `public, s-maxage=N` for anonymous pages (or override in \
             `vcl_backend_response` only for URLs identical for every reader)",
            "Varnish docs: builtin.vcl vcl_backend_response",
        ),
        any(
            "cache:set-cookie",
            "the built-in VCL will not cache an answer with Set-Cookie (hit-for-miss 120 s); \
             fix it in the application (no session for anonymous readers) — `unset \
             beresp.http.Set-Cookie` would hand every reader a page without the cookie it \
             needs, so keep it for session and CSRF cookies",
            "Varnish docs: builtin.vcl vcl_backend_response; users-guide \"Cookies\"",
        ),
        any(
            "cache:set-cookie-analytics",
            "only an analytics cookie is set: in `vcl_backend_response`, `unset \
             beresp.http.Set-Cookie;` for these URLs lets Varnish store the page",
            "Varnish docs: users-guide \"Cookies\"",
        ),
        any(
            "cache:request-cookie-analytics",
            "the built-in VCL passes every request with a Cookie; in `vcl_recv` remove the \
             analytics ones before the lookup: `set req.http.Cookie = \
             regsuball(req.http.Cookie, \"(^|;\\s*)(_ga[^=]*|_gid|_fbp|_fbc|__utm[a-z]+|utm_[a-z]+)=[^;]*\", \
             \"\"); if (req.http.Cookie ~ \"^\\s*$\") { unset req.http.Cookie; }`",
            "Varnish docs: users-guide \"Cookies\" (Removing cookies)",
        ),
        any(
            "cache:request-cookie-session",
            "right as it is: the built-in `vcl_recv` passes requests with a session cookie, \
             so a signed-in user gets their own page; strip only analytics cookies, never \
             this one",
            "Varnish docs: builtin.vcl vcl_recv",
        ),
        any(
            "cache:vary-star",
            "`Vary: *` makes every answer hit-for-miss: replace it in the application, or \
             `unset beresp.http.Vary;` in `vcl_backend_response` where nothing varies",
            "Varnish docs: builtin.vcl vcl_backend_response",
        ),
        any(
            "cache:rule",
            "the headers allow caching: check `vcl_recv` for a `return (pass)` on this URL \
             and that `vcl_hash` does not add the cookie or query string",
            "Varnish docs: users-guide \"VCL – Varnish Configuration Language\"",
        ),
        any(
            "vary-fragments",
            "in `vcl_recv` compute a device class (`set req.http.X-Device = \"mobile\"` when \
             the User-Agent says so), have the backend vary on `X-Device`, and never hash \
             the raw User-Agent",
            "Varnish docs: users-guide \"Device detection\"",
        ),
        any(
            "cached-set-cookie",
            "in `vcl_backend_response`, `return (pass)` (or hit-for-miss) whenever \
             `beresp.http.Set-Cookie` is set — the built-in VCL does; a custom VCL that \
             returns earlier skips it",
            "Varnish docs: builtin.vcl vcl_backend_response",
        ),
        any(
            "no-compression",
            "`set beresp.do_gzip = true;` in `vcl_backend_response` for text types (Varnish \
             then stores and serves gzip)",
            "Varnish docs: users-guide \"Compression\"",
        ),
    ],
};

/// Cloudflare's cache.
pub const CLOUDFLARE: Table = Table {
    id: "cloudflare",
    name: "Cloudflare",
    rows: &[
        any(
            "cache:freshness",
            "Cloudflare caches HTML only when told: a Cache Rule \"Eligible for cache\" with \
             an Edge TTL, or the origin's `s-maxage` honoured by \"Respect origin\"",
            "Cloudflare docs: Cache Rules; \"Default cache behavior\"",
        ),
        any(
            "cache:private",
            "`private`/`no-store` make Cloudflare bypass; a Cache Rule's Edge TTL \"Ignore \
             cache-control header\" overrides them — only for pages identical for everyone",
            "Cloudflare docs: Cache Rules, Edge TTL",
        ),
        any(
            "cache:set-cookie",
            "an answer with Set-Cookie is not cached (BYPASS); stop the application setting \
             it for anonymous readers",
            "Cloudflare docs: \"Default cache behavior\" (Set-Cookie)",
        ),
        any(
            "cache:request-cookie-session",
            "right as it is: keep a Cache Rule that bypasses the cache when the session \
             cookie is present (\"Bypass cache on cookie\")",
            "Cloudflare docs: Cache Rules, bypass cache on cookie",
        ),
        any(
            "cache:request-cookie-analytics",
            "Cloudflare leaves cookies out of the cache key by default; if a rule adds them, \
             key on the session cookie only",
            "Cloudflare docs: Cache Keys",
        ),
        any(
            "cache:rule",
            "Cloudflare caches only static file extensions by default: add a Cache Rule \
             \"Eligible for cache\" for this path",
            "Cloudflare docs: Cache Rules; \"Default cache behavior\"",
        ),
        any(
            "no-compression",
            "Cloudflare compresses text it passes when the browser asks; check the \
             Content-Type is a text type and no Compression Rule turns it off",
            "Cloudflare docs: Speed → \"Content compression\"",
        ),
        any(
            "no-http3",
            "turn on HTTP/3 (with QUIC) under Speed → Optimization → Protocol Optimization",
            "Cloudflare docs: HTTP/3 (with QUIC)",
        ),
    ],
};

/// Amazon CloudFront.
pub const CLOUDFRONT: Table = Table {
    id: "cloudfront",
    name: "CloudFront",
    rows: &[
        any(
            "cache:freshness",
            "the behaviour's cache policy decides: Minimum/Default/Maximum TTL; with a \
             Default TTL above 0, answers without Cache-Control are kept that long",
            "Amazon CloudFront docs: \"Manage how long content stays in the cache \
             (expiration)\"",
        ),
        any(
            "cache:private",
            "CloudFront does not cache `private`/`no-store` answers unless Minimum TTL > 0; \
             send `public, s-maxage=N` for anonymous pages",
            "Amazon CloudFront docs: \"Manage how long content stays in the cache \
             (expiration)\"",
        ),
        any(
            "cache:request-cookie-session",
            "right as it is: forward (and key on) only the session cookie in the cache \
             policy, so signed-in users reach the origin",
            "Amazon CloudFront docs: \"Cache content based on cookies\"",
        ),
        any(
            "cache:request-cookie-analytics",
            "leave analytics cookies out of the cache policy's cookie list (\"None\" or an \
             allow-list of the session cookie)",
            "Amazon CloudFront docs: \"Cache content based on cookies\"",
        ),
        any(
            "cache:rule",
            "use a cache policy that caches (not CachingDisabled) on this path's behaviour",
            "Amazon CloudFront docs: \"Use managed cache policies\"",
        ),
        any(
            "no-compression",
            "turn on \"Compress objects automatically\" in the cache behaviour, with a cache \
             policy that enables gzip and Brotli",
            "Amazon CloudFront docs: \"Serve compressed files\"",
        ),
        any(
            "no-http3",
            "enable HTTP/3 in the distribution's settings (Supported HTTP versions)",
            "Amazon CloudFront docs: distribution settings, Supported HTTP versions",
        ),
    ],
};

/// Fastly.
pub const FASTLY: Table = Table {
    id: "fastly",
    name: "Fastly",
    rows: &[
        any(
            "cache:freshness",
            "Fastly takes Surrogate-Control, then s-maxage/max-age, else 3600 s; send \
             `Surrogate-Control: max-age=N` from the origin for the CDN alone",
            "Fastly docs: \"Cache freshness and TTLs\"",
        ),
        any(
            "cache:private",
            "`private`, `no-store` and `no-cache` make Fastly pass; `Surrogate-Control` sets \
             the edge's lifetime apart from the browser's",
            "Fastly docs: \"Cache freshness and TTLs\"",
        ),
        any(
            "cache:set-cookie",
            "Fastly passes answers with Set-Cookie by default; stop setting it on anonymous \
             pages",
            "Fastly docs: \"Cache freshness and TTLs\" (beresp.http.Set-Cookie)",
        ),
        any(
            "cache:request-cookie-session",
            "right as it is: pass requests with the session cookie (`if (req.http.Cookie ~ \
             \"session\") { return(pass); }` in vcl_recv)",
            "Fastly docs: VCL vcl_recv",
        ),
        any(
            "cache:request-cookie-analytics",
            "remove analytics cookies in vcl_recv before the lookup (`set req.http.Cookie = \
             querystring.filter(…)` or regsuball), so they neither key nor pass",
            "Fastly docs: \"Removing cookies\" (VCL)",
        ),
        any(
            "no-compression",
            "turn on dynamic compression (`set beresp.gzip = true;` for text types in \
             vcl_fetch, or Brotli/Gzip in the service's settings)",
            "Fastly docs: \"Compressing and decompressing content\"",
        ),
    ],
};
