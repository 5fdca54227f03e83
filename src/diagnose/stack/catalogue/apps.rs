//! Applications and frameworks: WordPress, DokuWiki, MediaWiki, Ghost, Drupal, PHP
//! (and PHP-FPM), Spring, Django, Rails, Express.

use super::{any, Row, Table};

/// Cache rows every PHP application shares: a session started for every visitor sends
/// PHP's `session.cache_limiter` headers and a Set-Cookie.
const PHP_SESSION: Row = any(
    "cache:set-cookie",
    "a PHP session started for an anonymous reader sets its cookie (PHPSESSID unless \
     the application names it) and, with `session.cache_limiter = nocache`, \
     `Cache-Control: no-store, no-cache`: call session_start() only once the visitor \
     logs in",
    "PHP manual: session_cache_limiter, session_start",
);

/// WordPress.
pub const WORDPRESS: Table = Table {
    id: "wordpress",
    name: "WordPress",
    rows: &[
        any(
            "cache:freshness",
            "WordPress sends no Cache-Control for anonymous pages: a page-cache plugin (WP \
             Super Cache, W3 Total Cache, or the \"Cache-Control\" plugin) sets `public, \
             s-maxage=N` for visitors who are not logged in; logged-in users carry \
             `wordpress_logged_in_*` and are passed",
            "WordPress Advanced Administration Handbook: Performance → Cache",
        ),
        any(
            "cache:private",
            "a plugin or theme sends `private`/`no-cache` (WordPress itself does only for \
             logged-in users and wp-admin): set the page-cache plugin's Cache-Control for \
             anonymous visitors",
            "WordPress developer reference: nocache_headers(); Advanced Administration \
             Handbook: Performance → Cache",
        ),
        any(
            "cache:set-cookie",
            "WordPress core sets no cookie for readers; a plugin does (often a PHP session \
             or a consent tool): make it set the cookie only after login, or exclude it \
             from cached pages in the page-cache plugin",
            "WordPress Advanced Administration Handbook: Performance → Cache",
        ),
        any(
            "cache:request-cookie-session",
            "right as it is: requests with `wordpress_logged_in_*`, `wp-postpass_*` or \
             `comment_author_*` must reach WordPress; page-cache plugins and the cache in \
             front skip them",
            "WordPress Advanced Administration Handbook: Performance → Cache",
        ),
        any(
            "server-dominates",
            "a page cache (WP Super Cache serves static HTML) and a persistent object \
             cache (Redis/Memcached drop-in) take WordPress out of most requests",
            "WordPress Advanced Administration Handbook: Performance → Optimization, Cache",
        ),
        any(
            "cold-start",
            "the first request builds WordPress' caches and PHP's opcache: keep opcache on \
             and warm the page cache after a deploy (the plugin's preload)",
            "WordPress Advanced Administration Handbook: Performance → Optimization",
        ),
        any(
            "no-validators",
            "WordPress pages carry no ETag or Last-Modified; WP Super Cache's static files \
             (served by the web server) do",
            "WordPress Advanced Administration Handbook: Performance → Cache",
        ),
    ],
};

/// DokuWiki.
pub const DOKUWIKI: Table = Table {
    id: "dokuwiki",
    name: "DokuWiki",
    rows: &[
        any(
            "cache:set-cookie",
            "DokuWiki starts a PHP session (cookie `DokuWiki`) for every visitor, which also \
             sends PHP's `no-store, no-cache`: it is a session cookie (its login form's \
             security token lives there), so never strip it in the cache; cache anonymous \
             page views in front only where readers never log in, passing requests that \
             carry the login cookie (`DW` + hash)",
            "DokuWiki docs: \"caching\"; PHP manual: session_cache_limiter",
        ),
        any(
            "cache:private",
            "the `no-store, no-cache` comes from PHP's session (`session.cache_limiter`), \
             not a DokuWiki setting; DokuWiki's own cache (`cachetime`) keeps rendered \
             pages on the server",
            "DokuWiki docs: config:cachetime, \"caching\"",
        ),
        any(
            "cache:freshness",
            "DokuWiki renders from its page cache (`$conf['cachetime']`, default 1 day) but \
             gives the HTTP answer no lifetime and has no setting for one: give anonymous \
             pages one in the server or cache in front (its row beside this one), and keep \
             requests with DokuWiki's session cookie out of that cache",
            "DokuWiki docs: config:cachetime",
        ),
        any(
            "server-dominates",
            "raise `$conf['cachetime']` and keep the data directory on a fast disk: a \
             rendered page then costs one file read",
            "DokuWiki docs: config:cachetime, \"caching\"",
        ),
        any(
            "cache:request-cookie-session",
            "right as it is: `DokuWiki`/`DW…` cookies mark a session or a login and must \
             reach DokuWiki",
            "DokuWiki docs: \"caching\"",
        ),
    ],
};

/// MediaWiki.
pub const MEDIAWIKI: Table = Table {
    id: "mediawiki",
    name: "MediaWiki",
    rows: &[
        any(
            "cache:freshness",
            "`$wgUseCdn = true; $wgCdnServers = [ '127.0.0.1' ]; $wgCdnMaxAge = 18000;` in \
             LocalSettings.php: MediaWiki then sends `s-maxage` to anonymous readers and \
             purges pages on edit",
            "MediaWiki manual: $wgUseCdn, $wgCdnServers, Manual:Varnish caching",
        ),
        any(
            "cache:private",
            "without `$wgUseCdn` MediaWiki sends `private, must-revalidate, max-age=0`: set \
             `$wgUseCdn = true` and list the cache in `$wgCdnServers`",
            "MediaWiki manual: $wgUseCdn, $wgCdnServers",
        ),
        any(
            "cache:request-cookie-session",
            "right as it is: `<wiki>_session`, `<wiki>UserID` and `<wiki>Token` mark \
             logged-in users and must be passed",
            "MediaWiki manual: Manual:Varnish caching",
        ),
        any(
            "server-dominates",
            "`$wgMainCacheType = CACHE_ACCEL;` (APCu) or Memcached, and `$wgUseFileCache` \
             for anonymous views",
            "MediaWiki manual: Manual:Performance tuning, $wgMainCacheType",
        ),
    ],
};

/// Ghost.
pub const GHOST: Table = Table {
    id: "ghost",
    name: "Ghost",
    rows: &[
        any(
            "cache:freshness",
            "raise Ghost's frontend `caching` in config.production.json (`\"caching\": { \
             \"frontend\": { \"maxAge\": 600 } }`): Ghost then sends `public, max-age=600`",
            "Ghost docs: Configuration → Caching",
        ),
        any(
            "cache:request-cookie-session",
            "right as it is: `ghost-admin-api-session` and `ghost-members-ssr` mark a staff \
             or member session and must reach Ghost",
            "Ghost docs: Configuration → Caching",
        ),
    ],
};

/// Drupal.
pub const DRUPAL: Table = Table {
    id: "drupal",
    name: "Drupal",
    rows: &[
        any(
            "cache:freshness",
            "set \"Browser and proxy cache maximum age\" (Configuration → Performance, \
             `system.performance:cache.page.max_age`): Drupal then sends `public, \
             max-age=N` to anonymous readers",
            "Drupal docs: \"Internal Page Cache\"; system.performance configuration",
        ),
        any(
            "cache:request-cookie-session",
            "right as it is: the `SESS…`/`SSESS…` cookie marks a logged-in user",
            "Drupal docs: \"Internal Page Cache\"",
        ),
    ],
};

/// PHP itself (mod_php or FastCGI).
pub const PHP: Table = Table {
    id: "php",
    name: "PHP",
    rows: &[
        PHP_SESSION,
        any(
            "cold-start",
            "`opcache.enable=1` with `opcache.validate_timestamps=0` in production (and \
             `opcache.preload`) so the first requests do not compile every script",
            "PHP manual: OPcache configuration",
        ),
        any(
            "server-dominates",
            "check opcache is on (`opcache.enable=1`, enough `opcache.memory_consumption`) \
             before anything else",
            "PHP manual: OPcache configuration",
        ),
    ],
};

/// PHP-FPM (PHP behind nginx or Caddy).
pub const PHP_FPM: Table = Table {
    id: "php-fpm",
    name: "PHP-FPM",
    rows: &[
        PHP_SESSION,
        any(
            "cold-start",
            "keep workers alive: `pm = static` (or `pm.min_spare_servers` ≥ 2 with `pm = \
             dynamic`; `pm = ondemand` starts each worker on a request) and opcache on",
            "PHP manual: FPM configuration (pm, pm.min_spare_servers)",
        ),
        any(
            "knee",
            "`pm.max_children` caps concurrent PHP requests (the rest queue in the listen \
             backlog): raise it as far as memory allows, and watch `pm.status_path`",
            "PHP manual: FPM configuration (pm.max_children, pm.status_path)",
        ),
        any(
            "server-dominates",
            "opcache on (`opcache.enable=1`) and enough workers (`pm.max_children`); \
             `request_slowlog_timeout` shows where the time goes",
            "PHP manual: FPM configuration (request_slowlog_timeout); OPcache",
        ),
    ],
};

/// Spring (and other Java servlet applications).
pub const SPRING: Table = Table {
    id: "spring",
    name: "Spring",
    rows: &[
        any(
            "cache:freshness",
            "return `ResponseEntity.ok().cacheControl(CacheControl.maxAge(10, \
             TimeUnit.MINUTES).cachePublic())`; static resources: \
             `spring.web.resources.cache.cachecontrol.max-age` and `…cache-public`",
            "Spring Framework reference: Web MVC \"HTTP Caching\"; Spring Boot reference: \
             spring.web.resources.cache.*",
        ),
        any(
            "cache:private",
            "Spring Security adds `no-cache, no-store` to every answer: \
             `http.headers(h -> h.cacheControl(c -> c.disable()))` for public pages, then \
             set `CacheControl` per controller",
            "Spring Security reference: \"Cache Control\" headers",
        ),
        any(
            "cache:set-cookie",
            "a JSESSIONID for anonymous readers means something creates an HttpSession: \
             `SessionCreationPolicy.IF_REQUIRED`/`NEVER` and no session access on public \
             pages",
            "Spring Security reference: Session Management",
        ),
        any(
            "no-validators",
            "`ShallowEtagHeaderFilter` adds an ETag (and answers 304) for every response; \
             better, `ResponseEntity.ok().eTag(…)`/`lastModified(…)` from the data",
            "Spring Framework reference: Web MVC \"HTTP Caching\" (ETag filter)",
        ),
        any(
            "no-304",
            "use `WebRequest.checkNotModified(eTag, lastModified)` in the controller, or \
             `ShallowEtagHeaderFilter`",
            "Spring Framework reference: Web MVC \"HTTP Caching\"",
        ),
        any(
            "no-compression",
            "`server.compression.enabled=true` (with `server.compression.mime-types` and \
             `min-response-size`) for the embedded server",
            "Spring Boot reference: \"Enable HTTP Response Compression\"",
        ),
        any(
            "cold-start",
            "class loading and JIT make the first requests slow: warm the endpoints before \
             taking traffic (readiness probe after a warm-up), or Spring AOT / CDS",
            "Spring Boot reference: \"Class Data Sharing\"; Kubernetes probes",
        ),
    ],
};

/// Django.
pub const DJANGO: Table = Table {
    id: "django",
    name: "Django",
    rows: &[
        any(
            "cache:freshness",
            "`@cache_control(public=True, s_maxage=600)` on the view, or the whole site \
             with `UpdateCacheMiddleware` … `FetchFromCacheMiddleware` and \
             `CACHE_MIDDLEWARE_SECONDS`",
            "Django docs: \"Django's cache framework\" (cache_control, the per-site cache)",
        ),
        any(
            "cache:set-cookie",
            "anonymous pages that touch `request.session` or render `{% csrf_token %}` set \
             sessionid/csrftoken (and `Vary: Cookie`): keep them off public pages",
            "Django docs: \"How to use sessions\"; \"Cross Site Request Forgery protection\"",
        ),
        any(
            "no-validators",
            "`ConditionalGetMiddleware` adds ETags and 304s; `@condition(etag_func=…, \
             last_modified_func=…)` does it from the data",
            "Django docs: \"Conditional View Processing\"",
        ),
        any(
            "no-304",
            "`django.middleware.http.ConditionalGetMiddleware` answers If-None-Match / \
             If-Modified-Since with 304",
            "Django docs: \"Conditional View Processing\"",
        ),
        any(
            "no-compression",
            "`django.middleware.gzip.GZipMiddleware` (mind BREACH on pages with secrets), or \
             compress in the server in front",
            "Django docs: middleware GZipMiddleware",
        ),
    ],
};

/// Ruby on Rails.
pub const RAILS: Table = Table {
    id: "rails",
    name: "Ruby on Rails",
    rows: &[
        any(
            "cache:freshness",
            "`expires_in 10.minutes, public: true` in the controller action",
            "Rails guides: \"Caching with Rails\" (Conditional GET support)",
        ),
        any(
            "cache:set-cookie",
            "a `_app_session` for anonymous readers means the action writes the session or \
             a flash; `request.session_options[:skip] = true` on public actions",
            "Rails guides: \"Action Controller Overview\" (Session)",
        ),
        any(
            "no-validators",
            "`fresh_when(@article)` or `stale?(@article)` sets ETag/Last-Modified and answers \
             304",
            "Rails guides: \"Caching with Rails\" (Conditional GET support)",
        ),
        any(
            "no-compression",
            "`config.middleware.use Rack::Deflater`, or compress in the server in front",
            "Rack docs: Rack::Deflater",
        ),
    ],
};

/// Express (Node.js).
pub const EXPRESS: Table = Table {
    id: "express",
    name: "Express",
    rows: &[
        any(
            "cache:freshness",
            "`res.set('Cache-Control', 'public, s-maxage=600')` on public routes (static: \
             `express.static(dir, { maxAge: '1h' })`)",
            "Express docs: res.set; express.static options",
        ),
        any(
            "cache:set-cookie",
            "with express-session, `saveUninitialized: false` so visitors get no connect.sid \
             until something is stored",
            "express-session README: saveUninitialized",
        ),
        any(
            "no-compression",
            "`app.use(compression())` (the compression middleware)",
            "Express docs: compression middleware",
        ),
    ],
};
