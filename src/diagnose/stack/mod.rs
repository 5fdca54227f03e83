//! The user's own stack (issue 32; DESIGN.md, fourth-wave contract): which server,
//! proxy, cache, CDN, application and framework answered, guessed from what the
//! responses already tell ([`detect`], driven by the signature table in
//! [`signatures`]), each guess with its evidence; and the advice of every finding
//! rendered for that stack ([`advice`]) from the catalogue of per-stack tables in
//! [`catalogue`] — the finding's own `advice` stays the generic HTTP one, shown
//! beside. Adding a stack is adding rows to those tables. Pure: the few requests the
//! detection reads are made by `probe::peek`.

pub mod advice;
pub mod catalogue;
pub mod detect;
pub mod signatures;

use serde::{Deserialize, Serialize};

pub use advice::{attach, StackAdvice};
pub use detect::{detect, Observed};

/// Where a component sits in the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A CDN in front of everything (Cloudflare, CloudFront, Fastly, Akamai).
    Cdn,
    /// An edge proxy or load balancer that does not cache (HAProxy, Envoy).
    Proxy,
    /// A shared cache in front of the application (Varnish, nginx proxy_cache,
    /// Apache mod_cache).
    Cache,
    /// The HTTP server that serves the application (nginx, Apache httpd, Caddy…).
    Server,
    /// The application (WordPress, DokuWiki, MediaWiki, Ghost, Drupal…).
    App,
    /// The language runtime or web framework (PHP-FPM, Django, Rails, Spring…).
    Framework,
}

impl Role {
    /// Every role, outermost first.
    pub const ALL: [Role; 6] = [
        Role::Cdn,
        Role::Proxy,
        Role::Cache,
        Role::Server,
        Role::App,
        Role::Framework,
    ];

    /// Name as in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Cdn => "cdn",
            Role::Proxy => "proxy",
            Role::Cache => "cache",
            Role::Server => "server",
            Role::App => "app",
            Role::Framework => "framework",
        }
    }
}

/// One recognised component: its catalogue id, display name and version when told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Component {
    /// The catalogue's id ("nginx", "varnish", "wordpress", "php-fpm"…).
    pub id: String,
    /// How to call it in a sentence ("nginx", "WordPress", "PHP-FPM").
    pub name: String,
    /// The version the evidence gave ("6.1.9"), if any.
    #[serde(default)]
    pub version: Option<String>,
}

impl Component {
    /// "WordPress 6", "nginx 1.22": the name and the version's first number.
    pub fn short(&self) -> String {
        match self.version.as_deref().and_then(|v| v.split('.').next()) {
            Some(major) if !major.is_empty() && self.shows_major() => {
                format!("{} {major}", self.name)
            }
            _ => self.name.clone(),
        }
    }

    /// Applications are named with their major version ("WordPress 6"); servers and
    /// runtimes read better without it.
    fn shows_major(&self) -> bool {
        !matches!(self.id.as_str(), "nginx" | "apache" | "php" | "php-fpm")
    }
}

/// One piece of evidence: what was seen, where, and what it was taken for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub role: Role,
    /// The component's id.
    pub id: String,
    /// Where it was seen: "server header", "set-cookie name", "meta generator",
    /// "404 page", "header case"…
    pub source: String,
    /// What was seen there (a header value, a cookie name — never a cookie value).
    pub value: String,
}

/// The recognised stack: `stack:{server, proxy, cache, cdn, app, framework,
/// evidence:[…]}` in the diagnose JSON, and one line of text ([`Stack::line`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stack {
    pub server: Option<Component>,
    pub proxy: Option<Component>,
    pub cache: Option<Component>,
    pub cdn: Option<Component>,
    pub app: Option<Component>,
    pub framework: Option<Component>,
    pub evidence: Vec<Evidence>,
    /// The one text line ("WordPress 6 on PHP-FPM behind nginx, Varnish in front").
    #[serde(default)]
    pub summary: String,
    /// Why some of the detection could not run (its request failed), if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Stack {
    /// The component in `role`, if recognised.
    pub fn get(&self, role: Role) -> Option<&Component> {
        match role {
            Role::Cdn => self.cdn.as_ref(),
            Role::Proxy => self.proxy.as_ref(),
            Role::Cache => self.cache.as_ref(),
            Role::Server => self.server.as_ref(),
            Role::App => self.app.as_ref(),
            Role::Framework => self.framework.as_ref(),
        }
    }

    pub(crate) fn slot(&mut self, role: Role) -> &mut Option<Component> {
        match role {
            Role::Cdn => &mut self.cdn,
            Role::Proxy => &mut self.proxy,
            Role::Cache => &mut self.cache,
            Role::Server => &mut self.server,
            Role::App => &mut self.app,
            Role::Framework => &mut self.framework,
        }
    }

    /// Every recognised component with its role, outermost first.
    pub fn components(&self) -> Vec<(Role, &Component)> {
        Role::ALL
            .iter()
            .filter_map(|r| self.get(*r).map(|c| (*r, c)))
            .collect()
    }

    /// Nothing was recognised: advice stays generic HTTP.
    pub fn is_empty(&self) -> bool {
        self.components().is_empty()
    }

    /// "WordPress 6 on PHP-FPM behind nginx, Varnish in front, HAProxy at the edge,
    /// Cloudflare as CDN"; "not recognised …" when nothing was.
    pub fn line(&self) -> String {
        if self.is_empty() {
            return "not recognised (nothing in the responses names a server, cache or \
                    application): advice stays generic HTTP"
                .to_string();
        }
        let mut head = String::new();
        match (&self.app, &self.framework) {
            (Some(a), Some(f)) => head.push_str(&format!("{} on {}", a.short(), f.short())),
            (Some(a), None) => head.push_str(&a.short()),
            (None, Some(f)) => head.push_str(&f.short()),
            (None, None) => {}
        }
        if let Some(s) = &self.server {
            if head.is_empty() {
                head = s.short();
            } else {
                head.push_str(&format!(" behind {}", s.short()));
            }
        }
        let mut parts = Vec::new();
        if !head.is_empty() {
            parts.push(head);
        }
        if let Some(c) = &self.cache {
            parts.push(format!("{} in front", c.short()));
        }
        if let Some(p) = &self.proxy {
            parts.push(format!("{} at the edge", p.short()));
        }
        if let Some(c) = &self.cdn {
            parts.push(format!("{} as CDN", c.short()));
        }
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests;
