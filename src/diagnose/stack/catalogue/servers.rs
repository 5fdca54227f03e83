//! Servers and edge proxies: nginx, Apache httpd, Caddy, HAProxy.

use super::{any, when, Table};
use crate::diagnose::stack::Role::{Cache, Proxy, Server};

/// nginx, as the server, a proxy, or proxy_cache.
pub const NGINX: Table = Table {
    id: "nginx",
    name: "nginx",
    rows: &[
        any(
            "no-compression",
            "`gzip on; gzip_types text/css application/javascript application/json \
             image/svg+xml;` (text/html is always included) in `http {}`, and \
             `gzip_proxied any;` where nginx proxies to the application",
            "nginx docs: ngx_http_gzip_module (gzip, gzip_types, gzip_proxied)",
        ),
        any(
            "no-keepalive",
            "keep `keepalive_timeout 75s;` (never 0) for clients; toward the backend an \
             `upstream {}` block with `keepalive 16;` and, in the location, \
             `proxy_http_version 1.1; proxy_set_header Connection \"\";`",
            "nginx docs: ngx_http_core_module keepalive_timeout; ngx_http_upstream_module \
             keepalive",
        ),
        any(
            "no-tls-resumption",
            "`ssl_session_cache shared:SSL:10m; ssl_session_timeout 1h;` (and \
             `ssl_session_tickets on;` with the same ticket key on every instance)",
            "nginx docs: ngx_http_ssl_module ssl_session_cache, ssl_session_tickets",
        ),
        any(
            "handshake-dominates",
            "let clients keep connections (`keepalive_timeout 75s; keepalive_requests \
             1000;`), resume TLS (`ssl_session_cache shared:SSL:10m;`) and serve HTTP/2 \
             (`listen 443 ssl http2;`; `http2 on;` from 1.25.1)",
            "nginx docs: ngx_http_core_module keepalive_timeout; ngx_http_ssl_module; \
             ngx_http_v2_module",
        ),
        any(
            "no-http2",
            "`listen 443 ssl http2;` (nginx ≥ 1.25.1: `http2 on;` in the server block)",
            "nginx docs: ngx_http_v2_module",
        ),
        any(
            "no-http3",
            "nginx ≥ 1.25 built with ngx_http_v3_module: `listen 443 quic reuseport;` beside \
             the TCP listen, and `add_header Alt-Svc 'h3=\":443\"; ma=86400';`",
            "nginx docs: ngx_http_v3_module",
        ),
        when(
            Cache,
            "cache:freshness",
            "proxy_cache keeps nothing the backend gives no lifetime: `proxy_cache_valid \
             200 301 10m;` gives one (used only when Cache-Control/Expires say nothing), or \
             have the application send `Cache-Control: s-maxage=N`",
            "nginx docs: ngx_http_proxy_module proxy_cache_valid",
        ),
        when(
            Cache,
            "cache:private",
            "proxy_cache never stores `private`, `no-cache` or `no-store` answers; for pages \
             that are the same for every anonymous reader, `proxy_ignore_headers \
             Cache-Control Expires;` with `proxy_cache_valid 200 10m;` — and \
             `proxy_cache_bypass`/`proxy_no_cache` on the login cookie so signed-in users \
             still reach the application",
            "nginx docs: ngx_http_proxy_module proxy_ignore_headers, proxy_cache_bypass, \
             proxy_no_cache",
        ),
        when(
            Cache,
            "cache:set-cookie",
            "proxy_cache does not store an answer that sets a cookie: stop the application \
             setting it for anonymous readers; `proxy_ignore_headers Set-Cookie;` plus \
             `proxy_hide_header Set-Cookie;` would store the page without it, so use them \
             only where no reader needs that cookie (never for a session or CSRF cookie)",
            "nginx docs: ngx_http_proxy_module proxy_ignore_headers, proxy_hide_header",
        ),
        when(
            Cache,
            "cache:set-cookie-analytics",
            "the cookie set is an analytics one: `proxy_ignore_headers Set-Cookie; \
             proxy_hide_header Set-Cookie;` for these pages lets proxy_cache store them",
            "nginx docs: ngx_http_proxy_module proxy_ignore_headers, proxy_hide_header",
        ),
        when(
            Cache,
            "cache:request-cookie-session",
            "right as it is: a request with a session cookie must reach the application; \
             make `proxy_cache_bypass`/`proxy_no_cache` match that cookie only \
             (`$cookie_<name>`), never strip it",
            "nginx docs: ngx_http_proxy_module proxy_cache_bypass, proxy_no_cache",
        ),
        when(
            Cache,
            "cache:request-cookie-analytics",
            "proxy_cache ignores request cookies unless a `proxy_cache_bypass`/\
             `proxy_no_cache` or `proxy_cache_key` names them: match only the session \
             cookie there (`$cookie_<name>`), not `$http_cookie`",
            "nginx docs: ngx_http_proxy_module proxy_cache_key, proxy_cache_bypass",
        ),
        when(
            Cache,
            "cache:vary-star",
            "proxy_cache never stores `Vary: *`: replace it in the application, or \
             `proxy_ignore_headers Vary;` where the page does not vary",
            "nginx docs: ngx_http_proxy_module proxy_ignore_headers",
        ),
        when(
            Cache,
            "cache:rule",
            "add `proxy_cache <zone>;` to this location (with `proxy_cache_path … \
             keys_zone=<zone>:10m;`) and check `proxy_cache_key`",
            "nginx docs: ngx_http_proxy_module proxy_cache, proxy_cache_path",
        ),
        when(
            Cache,
            "vary-fragments",
            "normalise the header before the key: a `map $http_user_agent $device {…}` and \
             `proxy_cache_key $scheme$host$request_uri$device;`, with `proxy_ignore_headers \
             Vary;`",
            "nginx docs: ngx_http_map_module; ngx_http_proxy_module proxy_cache_key",
        ),
        when(
            Server,
            "cold-start",
            "if the time is PHP-FPM's or the backend's start, keep workers warm (`pm = \
             static` or `pm.min_spare_servers`) and let nginx retry: `proxy_next_upstream` / \
             `fastcgi_next_upstream`",
            "nginx docs: ngx_http_proxy_module proxy_next_upstream",
        ),
        any(
            "knee",
            "raise `worker_connections` (and `worker_processes auto;`); if the backend is the \
             limit, nginx's `upstream` `keepalive` and the backend's own pool size \
             (`pm.max_children` for PHP-FPM) are next",
            "nginx docs: ngx_core_module worker_connections, worker_processes",
        ),
        when(
            Server,
            "no-validators",
            "nginx sends ETag and Last-Modified for the static files it serves (`etag on;`); \
             for proxied or FastCGI pages they must come from the application",
            "nginx docs: ngx_http_core_module etag",
        ),
        any(
            "redirect-chain",
            "`return 301 https://example.org$request_uri;` straight to the final URL in one \
             hop, and `add_header Strict-Transport-Security \"max-age=31536000\";` on https",
            "nginx docs: ngx_http_rewrite_module return",
        ),
    ],
};

/// Apache httpd 2.4.
pub const APACHE: Table = Table {
    id: "apache",
    name: "Apache httpd",
    rows: &[
        any(
            "no-compression",
            "`a2enmod deflate` and `AddOutputFilterByType DEFLATE text/html text/css \
             application/javascript application/json image/svg+xml` (mod_brotli: \
             `BROTLI_COMPRESS`)",
            "Apache httpd docs: mod_deflate, \"Enabling Compression\"",
        ),
        any(
            "no-keepalive",
            "`KeepAlive On` with `KeepAliveTimeout 5` and `MaxKeepAliveRequests 500`; toward \
             a backend mod_proxy reuses connections unless `disablereuse=On`",
            "Apache httpd docs: core KeepAlive, KeepAliveTimeout; mod_proxy ProxyPass \
             disablereuse",
        ),
        any(
            "no-tls-resumption",
            "`SSLSessionCache shmcb:${APACHE_RUN_DIR}/ssl_scache(512000)` and \
             `SSLSessionCacheTimeout 3600` (session tickets: `SSLSessionTickets on`)",
            "Apache httpd docs: mod_ssl SSLSessionCache, SSLSessionTickets",
        ),
        any(
            "handshake-dominates",
            "`KeepAlive On`, `SSLSessionCache shmcb:…`, and HTTP/2 with `Protocols h2 \
             http/1.1` (mod_http2; not with mpm_prefork: use mpm_event and PHP-FPM)",
            "Apache httpd docs: core KeepAlive; mod_ssl SSLSessionCache; mod_http2",
        ),
        any(
            "no-http2",
            "`a2enmod http2` and `Protocols h2 http/1.1` in the TLS virtual host; mod_http2 \
             does not run under mpm_prefork (switch to mpm_event, PHP through PHP-FPM)",
            "Apache httpd docs: mod_http2, \"HTTP/2 guide\"",
        ),
        when(
            Cache,
            "cache:freshness",
            "mod_cache guesses only from Last-Modified; `CacheDefaultExpire 600` (and \
             `CacheIgnoreNoLastMod On`) gives the rest a lifetime, or have the application \
             send `s-maxage`",
            "Apache httpd docs: mod_cache CacheDefaultExpire, CacheIgnoreNoLastMod",
        ),
        when(
            Cache,
            "cache:private",
            "mod_cache honours `private`/`no-store`; `CacheStorePrivate On` / \
             `CacheStoreNoStore On` override it — only for pages identical for every \
             reader",
            "Apache httpd docs: mod_cache CacheStorePrivate, CacheStoreNoStore",
        ),
        when(
            Cache,
            "cache:set-cookie",
            "mod_cache stores Set-Cookie and replays it: `CacheIgnoreHeaders Set-Cookie`, \
             and stop the application setting session cookies on anonymous pages",
            "Apache httpd docs: mod_cache CacheIgnoreHeaders",
        ),
        when(
            Cache,
            "cached-set-cookie",
            "`CacheIgnoreHeaders Set-Cookie` keeps mod_cache from storing and replaying the \
             cookie",
            "Apache httpd docs: mod_cache CacheIgnoreHeaders",
        ),
        when(
            Cache,
            "cache:rule",
            "`CacheEnable disk /path` (mod_cache_disk) for this URL space, and \
             `CacheQuickHandler off` if other modules must run first",
            "Apache httpd docs: mod_cache CacheEnable, CacheQuickHandler",
        ),
        any(
            "no-304",
            "mod_deflate appends `-gzip` to ETags; `DeflateAlterETag NoChange` (2.4.58+) or \
             `RequestHeader edit \"If-None-Match\" '^\"((.*)-gzip)\"$' '\"$1\", \"$2\"'` lets \
             the application's ETag match again",
            "Apache httpd docs: mod_deflate DeflateAlterETag",
        ),
        any(
            "knee",
            "raise `MaxRequestWorkers` (mpm_event: with `ThreadsPerChild`/`ServerLimit`); \
             under mod_php each worker is a whole PHP process — PHP-FPM with mpm_event \
             scales further",
            "Apache httpd docs: mpm_common MaxRequestWorkers",
        ),
        any(
            "redirect-chain",
            "one `Redirect permanent / https://example.org/` (or one RewriteRule with \
             `[R=301,L]`) to the final URL, plus `Header always set \
             Strict-Transport-Security \"max-age=31536000\"`",
            "Apache httpd docs: mod_alias Redirect; mod_headers",
        ),
    ],
};

/// Caddy 2.
pub const CADDY: Table = Table {
    id: "caddy",
    name: "Caddy",
    rows: &[
        any(
            "no-compression",
            "`encode gzip zstd` in the site block (Caddy compresses nothing without it)",
            "Caddy docs: Caddyfile directive encode",
        ),
        any(
            "no-keepalive",
            "Caddy keeps connections by default: look for `keepalive off` in the global \
             `servers` options, and `transport http { keepalive … }` toward the backend",
            "Caddy docs: global options servers keepalive_interval; reverse_proxy transport \
             http keepalive",
        ),
        any(
            "no-tls-resumption",
            "Caddy resumes with session tickets it rotates itself; several instances need \
             one shared storage (`storage`) so their tickets agree",
            "Caddy docs: Automatic HTTPS; global options storage",
        ),
        any(
            "no-http2",
            "Caddy serves h2 by default; check `protocols` in the global `servers` options",
            "Caddy docs: global options servers protocols",
        ),
        any(
            "no-http3",
            "Caddy serves h3 by default over UDP 443: open UDP 443 in the firewall and keep \
             `h3` in `servers { protocols h1 h2 h3 }`",
            "Caddy docs: global options servers protocols",
        ),
        any(
            "cache:freshness",
            "Caddy has no cache of its own: `header Cache-Control \"public, s-maxage=600\"` \
             sets one for a path, or the cache-handler module (Souin) caches",
            "Caddy docs: Caddyfile directive header",
        ),
        any(
            "redirect-chain",
            "`redir https://example.org{uri} permanent` once, to the final URL",
            "Caddy docs: Caddyfile directive redir",
        ),
    ],
};

/// HAProxy 2.x at the edge.
pub const HAPROXY: Table = Table {
    id: "haproxy",
    name: "HAProxy",
    rows: &[
        any(
            "no-keepalive",
            "`option http-keep-alive` (the default: remove `option httpclose` and `option \
             http-server-close`), `timeout http-keep-alive 10s`, and `http-reuse safe` so \
             backend connections are shared (not nginx's `keepalive`: that is nginx \
             syntax)",
            "HAProxy 2.6 configuration manual: option http-keep-alive, http-reuse",
        ),
        when(
            Proxy,
            "handshake-dominates",
            "terminate TLS with resumption (`tune.ssl.cachesize`, tickets on: no \
             `no-tls-tickets`), offer h2 (`bind :443 ssl crt … alpn h2,http/1.1`) and let \
             a new client's first request reuse an idle backend connection with \
             `http-reuse always` (the default `safe` opens a server connection for it)",
            "HAProxy 2.6 configuration manual: bind alpn, tune.ssl.cachesize, http-reuse",
        ),
        any(
            "no-tls-resumption",
            "keep the session cache (`tune.ssl.cachesize 20000`, `tune.ssl.lifetime 300`) \
             and tickets (no `no-tls-tickets` on the bind; one `tls-ticket-keys` file on \
             every instance)",
            "HAProxy 2.6 configuration manual: tune.ssl.cachesize, tls-ticket-keys",
        ),
        any(
            "no-http2",
            "`bind :443 ssl crt /etc/haproxy/site.pem alpn h2,http/1.1`",
            "HAProxy 2.6 configuration manual: bind alpn",
        ),
        any(
            "no-http3",
            "a QUIC-enabled build: `bind quic4@:443 ssl crt … alpn h3` and `http-response \
             set-header alt-svc 'h3=\":443\"; ma=900'`",
            "HAProxy 2.6 configuration manual: bind quic4, \"QUIC\"",
        ),
        any(
            "no-compression",
            "`filter compression`, `compression algo gzip`, `compression type text/html \
             text/css application/javascript application/json` in the frontend or backend",
            "HAProxy 2.6 configuration manual: compression",
        ),
        any(
            "cache:freshness",
            "HAProxy's small cache (`cache` section + `http-request cache-use` / \
             `http-response cache-store`) keeps only answers with a lifetime; have the \
             application send `s-maxage`, or `http-response set-header Cache-Control \
             \"public, s-maxage=60\"` for anonymous pages",
            "HAProxy 2.6 configuration manual: cache, http-response set-header",
        ),
        any(
            "knee",
            "check `maxconn` (global, frontend and each `server … maxconn N`): requests \
             over it queue in HAProxy; `timeout queue` bounds the wait",
            "HAProxy 2.6 configuration manual: maxconn, timeout queue",
        ),
        any(
            "redirect-chain",
            "`http-request redirect scheme https code 301` straight to the final URL, plus \
             `http-response set-header Strict-Transport-Security max-age=31536000`",
            "HAProxy 2.6 configuration manual: http-request redirect",
        ),
    ],
};
