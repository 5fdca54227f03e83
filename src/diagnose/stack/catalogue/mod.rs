//! The advice catalogue: one table per stack (servers, caches and CDNs, applications
//! and frameworks), each row the advice for one topic in that stack's own terms and
//! the documentation section it comes from. Data, not code paths: adding a stack is
//! adding a table here; [`super::advice`] picks the rows for the detected stack.
//!
//! Topics are finding ids (`no-compression`, `no-keepalive`, …) and, for the cache
//! findings, the blocker of the named cache (`cache:freshness`, `cache:private`,
//! `cache:set-cookie`, `cache:set-cookie-analytics`, `cache:vary-star`,
//! `cache:request-cookie-analytics`, `cache:request-cookie-session`, `cache:rule`).

mod apps;
mod caches;
mod servers;

use super::Role;

/// One piece of advice for one topic.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// Only when the stack plays this role (nginx as a cache vs as the server).
    pub role: Option<Role>,
    pub topic: &'static str,
    pub advice: &'static str,
    /// The documentation section it follows.
    pub source: &'static str,
}

/// One stack's table.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    /// The component id detection gives ("nginx", "varnish", "wordpress"…).
    pub id: &'static str,
    /// How the advice is headed ("nginx", "Varnish (VCL)", "WordPress").
    pub name: &'static str,
    pub rows: &'static [Row],
}

/// A row for any role.
pub(crate) const fn any(topic: &'static str, advice: &'static str, source: &'static str) -> Row {
    Row {
        role: None,
        topic,
        advice,
        source,
    }
}

/// A row only for one role.
pub(crate) const fn when(
    role: Role,
    topic: &'static str,
    advice: &'static str,
    source: &'static str,
) -> Row {
    Row {
        role: Some(role),
        topic,
        advice,
        source,
    }
}

/// Every table.
pub const TABLES: &[Table] = &[
    servers::NGINX,
    servers::APACHE,
    servers::CADDY,
    servers::HAPROXY,
    caches::VARNISH,
    caches::CLOUDFLARE,
    caches::CLOUDFRONT,
    caches::FASTLY,
    apps::WORDPRESS,
    apps::DOKUWIKI,
    apps::MEDIAWIKI,
    apps::GHOST,
    apps::DRUPAL,
    apps::PHP,
    apps::PHP_FPM,
    apps::SPRING,
    apps::DJANGO,
    apps::RAILS,
    apps::EXPRESS,
];

/// The table of a component id (`php-fpm` has its own; PHP's rows apply to both).
pub fn table(id: &str) -> Option<&'static Table> {
    TABLES.iter().find(|t| t.id == id)
}

/// The row of `id` for `topic` when it plays `role`.
pub fn row(id: &str, role: Role, topic: &str) -> Option<(&'static Table, &'static Row)> {
    let t = table(id)?;
    t.rows
        .iter()
        .find(|r| r.topic == topic && r.role.is_none_or(|x| x == role))
        .map(|r| (t, r))
}

/// Every stack the catalogue covers (docs/findings.md lists them).
pub fn covered() -> Vec<&'static str> {
    TABLES.iter().map(|t| t.name).collect()
}
