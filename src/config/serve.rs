//! The checked configuration of `latscope serve`: its targets file (TOML) read into
//! [`ServeConfig`] — each scheduled target with its check, interval, request and
//! client — and the probe modules `/probe?module=NAME` names. A bad file is an error
//! naming its line (or the target and field), never half a configuration: a reload
//! that fails keeps the old one.
//!
//! ```toml
//! [defaults]            # every target's, unless it says otherwise
//! interval = "60s"      # between two checks of a target
//! timeout = "10s"       # each request's
//! samples = 3           # rounds of requests per check (a fresh and reused pair each)
//! check = "probe"       # or "diagnose": probe, cache audit, HTTP/3, stack (no load)
//!
//! [[target]]
//! url = "https://blog.example/"
//! name = "blog"         # the `target` label (default: the URL)
//! interval = "30s"
//! headers = ["Authorization: Bearer …"]   # redacted in every output
//! cacert = "/etc/ssl/blog-ca.pem"
//! insecure = false
//! resolve = ["blog.example:443:127.0.0.1"]
//! http = "auto"         # "1.1", "2"
//! labels = { team = "web" }
//! load = false          # diagnose: true runs the short load ramp (8 connections at
//!                       # most, 1 s steps) on any address, as `diagnose --load`
//!
//! [module.http_2xx]     # /probe?target=URL&module=http_2xx (blackbox_exporter's way)
//! timeout = "5s"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::http as httpcfg;
use crate::error::UsageError;
use crate::net::{ClientOptions, HttpVersionPref, RequestSpec, Target};

/// The most targets one file may schedule.
pub const MAX_TARGETS: usize = 1000;
/// The largest targets file read.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// The shortest interval between two checks of a target.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// What runs at each check of a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Check {
    /// Fresh and reused requests, the probe's findings.
    #[default]
    Probe,
    /// A diagnosis: probe, cache audit, HTTP/3, the stack, and the load ramp only
    /// where `load = true` allows it.
    Diagnose,
}

impl Check {
    pub fn name(self) -> &'static str {
        match self {
            Check::Probe => "probe",
            Check::Diagnose => "diagnose",
        }
    }
}

/// How one request of a check is made: what `/probe` modules and targets share.
#[derive(Debug, Clone)]
pub struct Requesting {
    pub request: RequestSpec,
    pub client: ClientOptions,
    /// Rounds per check.
    pub samples: u32,
    /// The headers that are secret (Authorization, Cookie, …): redacted wherever
    /// the request is shown.
    pub secret_headers: Vec<http::HeaderName>,
}

/// One scheduled target.
#[derive(Debug, Clone)]
pub struct ServeTarget {
    /// The `target` label: the file's `name`, else the URL.
    pub name: String,
    pub target: Target,
    pub check: Check,
    pub interval: Duration,
    pub requesting: Requesting,
    /// Extra labels on every series of this target.
    pub labels: Vec<(String, String)>,
    /// `load = true`: a diagnose check may run its short load ramp.
    pub load: bool,
    /// This target alone as a targets file: the defaults it took written into it,
    /// `cacert` made absolute. A diagnose check's process of its own reads it
    /// ([`ServeConfig::parse`] gives this target back).
    pub alone: String,
}

/// The whole file, checked.
#[derive(Debug, Clone, Default)]
pub struct ServeConfig {
    pub targets: Vec<ServeTarget>,
    /// `/probe`'s modules by name; `http_2xx` (the default module) is always there.
    pub modules: BTreeMap<String, Requesting>,
    /// Where it was read from (for the reload).
    pub path: Option<PathBuf>,
}

/// The default module's name, as blackbox_exporter's example config has it.
pub const DEFAULT_MODULE: &str = "http_2xx";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    defaults: RawRequest,
    #[serde(default)]
    target: Vec<RawTarget>,
    #[serde(default)]
    module: BTreeMap<String, RawRequest>,
}

#[derive(Debug, Default, Deserialize, Serialize, Clone)]
#[serde(deny_unknown_fields)]
struct RawRequest {
    interval: Option<String>,
    timeout: Option<String>,
    samples: Option<u32>,
    check: Option<Check>,
    headers: Option<Vec<String>>,
    cacert: Option<PathBuf>,
    insecure: Option<bool>,
    resolve: Option<Vec<String>>,
    http: Option<String>,
    method: Option<String>,
}

/// A `[[target]]`: its own fields, then [`RawRequest`]'s, written out (not
/// `#[serde(flatten)]`, which would lose the line numbers of the errors).
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RawTarget {
    url: String,
    name: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    load: bool,
    interval: Option<String>,
    timeout: Option<String>,
    samples: Option<u32>,
    check: Option<Check>,
    headers: Option<Vec<String>>,
    cacert: Option<PathBuf>,
    insecure: Option<bool>,
    resolve: Option<Vec<String>>,
    http: Option<String>,
    method: Option<String>,
}

impl RawTarget {
    fn request(&self) -> RawRequest {
        RawRequest {
            interval: self.interval.clone(),
            timeout: self.timeout.clone(),
            samples: self.samples,
            check: self.check,
            headers: self.headers.clone(),
            cacert: self.cacert.clone(),
            insecure: self.insecure,
            resolve: self.resolve.clone(),
            http: self.http.clone(),
            method: self.method.clone(),
        }
    }
}

impl RawRequest {
    /// `self` where it says something, else `defaults`.
    fn over(&self, defaults: &RawRequest) -> RawRequest {
        RawRequest {
            interval: self.interval.clone().or(defaults.interval.clone()),
            timeout: self.timeout.clone().or(defaults.timeout.clone()),
            samples: self.samples.or(defaults.samples),
            check: self.check.or(defaults.check),
            headers: self.headers.clone().or(defaults.headers.clone()),
            cacert: self.cacert.clone().or(defaults.cacert.clone()),
            insecure: self.insecure.or(defaults.insecure),
            resolve: self.resolve.clone().or(defaults.resolve.clone()),
            http: self.http.clone().or(defaults.http.clone()),
            method: self.method.clone().or(defaults.method.clone()),
        }
    }

    /// The request and client this says; `dir` resolves a relative `cacert`.
    fn requesting(&self, dir: &Path) -> Result<Requesting, String> {
        let duration = |field: &str, v: &Option<String>, default: Duration| match v {
            None => Ok(default),
            Some(t) => crate::units::parse_duration(t).map_err(|e| format!("{field} = {t:?}: {e}")),
        };
        let timeout = duration("timeout", &self.timeout, Duration::from_secs(10))?;
        if timeout.is_zero() || timeout > Duration::from_secs(300) {
            return Err(format!(
                "timeout = {:?}: between 1ms and 5m",
                self.timeout.as_deref().unwrap_or_default()
            ));
        }
        let samples = self.samples.unwrap_or(3);
        if !(1..=100).contains(&samples) {
            return Err(format!("samples = {samples}: between 1 and 100"));
        }
        let headers = self
            .headers
            .iter()
            .flatten()
            .map(|h| httpcfg::parse_header(h).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        let method = match &self.method {
            None => http::Method::GET,
            Some(m) => http::Method::from_bytes(m.to_ascii_uppercase().as_bytes())
                .map_err(|_| format!("method = {m:?} is not a method"))?,
        };
        let cacert = self.cacert.as_ref().map(|c| dir.join(c));
        if let Some(ca) = &cacert {
            crate::net::tls::read_pem_certs(ca)
                .map_err(|e| format!("cacert = {:?}: {e}", ca.display().to_string()))?;
        }
        let resolve = self
            .resolve
            .iter()
            .flatten()
            .map(|r| httpcfg::parse_resolve(r).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        let version = match self.http.as_deref() {
            None | Some("auto") => HttpVersionPref::Auto,
            Some("1.1") | Some("1") => HttpVersionPref::Http1,
            Some("2") => HttpVersionPref::Http2,
            Some(v) => return Err(format!("http = {v:?}: \"auto\", \"1.1\" or \"2\"")),
        };
        let request = RequestSpec {
            method,
            headers,
            ..RequestSpec::default()
        };
        let secret_headers = crate::config::diagnose::secret_headers(&request, &[]);
        Ok(Requesting {
            request,
            client: ClientOptions {
                timeout,
                insecure: self.insecure.unwrap_or(false),
                cacert,
                resolve,
                version,
                ..ClientOptions::default()
            },
            samples,
            secret_headers,
        })
    }
}

impl ServeConfig {
    /// Whether a target or a module sends a secret header (its file then holds a
    /// secret: a Kubernetes Secret, not a ConfigMap).
    pub fn has_secret_headers(&self) -> bool {
        self.targets
            .iter()
            .any(|t| !t.requesting.secret_headers.is_empty())
            || self.modules.values().any(|m| !m.secret_headers.is_empty())
    }

    /// Reads and checks the targets file at `path`.
    pub fn read(path: &Path) -> Result<ServeConfig, UsageError> {
        let at = |e: String| UsageError::new(format!("{}: {e}", path.display()));
        let bytes =
            crate::input::read_capped(path, MAX_FILE_BYTES).map_err(|e| at(e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|_| at("not UTF-8 text".into()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut c = ServeConfig::parse(&text, dir).map_err(at)?;
        c.path = Some(path.to_path_buf());
        Ok(c)
    }

    /// Checks a targets file's text; `dir` resolves relative paths in it.
    pub fn parse(text: &str, dir: &Path) -> Result<ServeConfig, String> {
        // toml's message names the line and column, with the line itself (a secret
        // header's value on it redacted).
        let raw: RawFile =
            toml::from_str(text).map_err(|e| redact_quoted_headers(e.to_string().trim()))?;
        if raw.target.len() > MAX_TARGETS {
            return Err(format!(
                "{} targets: at most {MAX_TARGETS} in one file",
                raw.target.len()
            ));
        }
        let mut targets = Vec::new();
        for (i, t) in raw.target.iter().enumerate() {
            let which = format!("target {} ({})", i + 1, t.name.as_deref().unwrap_or(&t.url));
            let checked =
                check_target(t, &raw.defaults, dir).map_err(|e| format!("{which}: {e}"))?;
            if targets.iter().any(|o: &ServeTarget| o.name == checked.name) {
                return Err(format!(
                    "{which}: another target has the name {:?}; names label the series, so each is its own",
                    checked.name
                ));
            }
            targets.push(checked);
        }
        let mut modules = BTreeMap::new();
        modules.insert(
            DEFAULT_MODULE.to_string(),
            raw.defaults
                .requesting(dir)
                .map_err(|e| format!("[defaults]: {e}"))?,
        );
        for (name, m) in &raw.module {
            if !valid_label_value(name) {
                return Err(format!(
                    "[module.{name}]: a module name is letters, digits, _ and -"
                ));
            }
            let r = m
                .over(&raw.defaults)
                .requesting(dir)
                .map_err(|e| format!("[module.{name}]: {e}"))?;
            modules.insert(name.clone(), r);
        }
        Ok(ServeConfig {
            targets,
            modules,
            path: None,
        })
    }
}

fn check_target(t: &RawTarget, defaults: &RawRequest, dir: &Path) -> Result<ServeTarget, String> {
    let target = Target::parse(&t.url).map_err(|e| format!("url = {:?}: {e}", t.url))?;
    if target.scheme == crate::net::Scheme::Tcp {
        return Err(format!(
            "url = {:?}: serve checks http:// and https:// URLs",
            t.url
        ));
    }
    let r = t.request().over(defaults);
    let interval = match &r.interval {
        None => Duration::from_secs(60),
        Some(v) => crate::units::parse_duration(v).map_err(|e| format!("interval = {v:?}: {e}"))?,
    };
    if interval < MIN_INTERVAL {
        return Err(format!(
            "interval = {:?}: at least 1s",
            r.interval.as_deref().unwrap_or_default()
        ));
    }
    // A URL's credentials and secret query values never become a label.
    let name = t
        .name
        .clone()
        .unwrap_or_else(|| crate::redact::redact_urls(&t.url));
    if name.is_empty() || name.chars().any(char::is_control) {
        return Err("name must be some text without control characters".into());
    }
    for k in t.labels.keys() {
        let ok = k
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !k.starts_with("__");
        if !ok || ["target", "id", "severity", "what", "phase", "series"].contains(&k.as_str()) {
            return Err(format!(
                "labels: {k:?} is not a label name of its own (letters, digits, _; not target, id, severity, what, phase, series)"
            ));
        }
    }
    Ok(ServeTarget {
        name,
        target,
        check: r.check.unwrap_or_default(),
        interval,
        requesting: r.requesting(dir)?,
        labels: t.labels.clone().into_iter().collect(),
        load: t.load,
        alone: alone(t, r, dir)?,
    })
}

/// `t` (which took `r` from the defaults) as a targets file of its own.
fn alone(t: &RawTarget, r: RawRequest, dir: &Path) -> Result<String, String> {
    #[derive(Serialize)]
    struct File<'a> {
        target: [&'a RawTarget; 1],
    }
    let one = RawTarget {
        url: t.url.clone(),
        name: t.name.clone(),
        labels: t.labels.clone(),
        load: t.load,
        interval: r.interval,
        timeout: r.timeout,
        samples: r.samples,
        check: r.check,
        headers: r.headers,
        // Absolute: the check's process may not share the daemon's working directory's
        // view of a relative `--config` path.
        cacert: r.cacert.map(|c| {
            let p = dir.join(c);
            std::path::absolute(&p).unwrap_or(p)
        }),
        insecure: r.insecure,
        resolve: r.resolve,
        http: r.http,
        method: r.method,
    };
    toml::to_string(&File { target: [&one] }).map_err(|e| e.to_string())
}

/// `"Authorization: Bearer …"` inside quotes, as a TOML error quotes a line of the
/// file: the value of every secret header redacted.
fn redact_quoted_headers(text: &str) -> String {
    text.split('"')
        .enumerate()
        .map(|(i, part)| match part.split_once(':') {
            Some((name, _)) if i % 2 == 1 && crate::redact::is_secret_header(name.trim(), &[]) => {
                format!("{}: {}", name.trim(), crate::redact::REDACTED)
            }
            _ => part.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\"")
}

fn valid_label_value(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ServeConfig, String> {
        ServeConfig::parse(text, Path::new("."))
    }

    /// A target alone, as a diagnose check's own process reads it, is the same
    /// target: the defaults it took and a relative `cacert` (from the file's folder)
    /// carried into it.
    #[test]
    fn a_target_alone_reads_back_as_itself() {
        let dir = std::env::temp_dir().join(format!("latscope-alone-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca = rcgen::generate_simple_self_signed(vec!["wiki.example".into()]).unwrap();
        std::fs::write(dir.join("ca.pem"), ca.cert.pem()).unwrap();
        let c = ServeConfig::parse(
            r#"
[defaults]
timeout = "4s"
samples = 2
headers = ["Authorization: Bearer s3cret", "X-Team: web"]
cacert = "ca.pem"
resolve = ["wiki.example:443:127.0.0.1"]

[[target]]
url = "https://wiki.example/w?q=1"
name = "wiki"
check = "diagnose"
load = true
interval = "90s"
method = "head"
labels = { team = "web" }
"#,
            &dir,
        )
        .unwrap();
        let t = &c.targets[0];
        let back = ServeConfig::parse(&t.alone, Path::new("/nowhere")).unwrap();
        // The same file named from a relative folder (`--config conf/targets.toml`)
        // is absolute in the target alone.
        let cwd = std::env::current_dir().unwrap();
        let up = "../".repeat(cwd.components().count() - 1);
        let relative = PathBuf::from(format!("{up}{}", dir.strip_prefix("/").unwrap().display()));
        let text = "[[target]]\nurl = \"https://wiki.example/\"\ncacert = \"ca.pem\"\n";
        let r = ServeConfig::parse(text, &relative).unwrap();
        let alone = ServeConfig::parse(&r.targets[0].alone, Path::new("/nowhere")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let ca = alone.targets[0].requesting.client.cacert.clone().unwrap();
        assert!(ca.is_absolute(), "{}", ca.display());
        assert_eq!(ca, std::path::absolute(relative.join("ca.pem")).unwrap());
        assert_eq!(back.targets.len(), 1);
        let b = &back.targets[0];
        assert_eq!(b.requesting.client.cacert, Some(dir.join("ca.pem")));
        assert_eq!(format!("{:?}", b.requesting), format!("{:?}", t.requesting));
        assert_eq!(
            (
                &b.name,
                &b.target.url,
                b.check,
                b.interval,
                &b.labels,
                b.load
            ),
            (
                &t.name,
                &t.target.url,
                t.check,
                t.interval,
                &t.labels,
                t.load
            )
        );
        assert_eq!(b.alone, t.alone);
    }

    #[test]
    fn targets_take_the_defaults_unless_they_say_otherwise() {
        let c = parse(
            r#"
[defaults]
interval = "30s"
samples = 2
headers = ["Authorization: Bearer s3cret"]

[[target]]
url = "http://127.0.0.1:8080/"
name = "blog"
labels = { team = "web" }

[[target]]
url = "https://wiki.example/"
check = "diagnose"
interval = "5m"
samples = 5
http = "1.1"

[module.fast]
timeout = "2s"
"#,
        )
        .unwrap();
        assert_eq!(c.targets.len(), 2);
        let (a, b) = (&c.targets[0], &c.targets[1]);
        assert_eq!(
            (a.name.as_str(), a.interval, a.check),
            ("blog", Duration::from_secs(30), Check::Probe)
        );
        assert_eq!(a.requesting.samples, 2);
        assert_eq!(a.labels, vec![("team".to_string(), "web".to_string())]);
        assert_eq!(a.requesting.secret_headers.len(), 1);
        assert_eq!(b.name, "https://wiki.example/");
        assert_eq!(
            (b.interval, b.check, b.requesting.samples),
            (Duration::from_secs(300), Check::Diagnose, 5)
        );
        assert_eq!(b.requesting.client.version, HttpVersionPref::Http1);
        assert_eq!(
            b.requesting.request.headers.len(),
            1,
            "the defaults' header"
        );
        assert!(c.modules.contains_key(DEFAULT_MODULE));
        assert_eq!(c.modules["fast"].client.timeout, Duration::from_secs(2));
    }

    #[test]
    fn an_empty_file_serves_probe_modules_only() {
        let c = parse("").unwrap();
        assert!(c.targets.is_empty());
        assert_eq!(c.modules.keys().collect::<Vec<_>>(), [DEFAULT_MODULE]);
    }

    /// Each mistake is refused with where it is: the line for what TOML cannot read,
    /// the target and field for a value out of bounds.
    #[test]
    fn bad_files_say_where() {
        let e = parse("[[target]]\nurl = \"http://x/\"\ninterval = 30\n").unwrap_err();
        assert!(e.contains("line 3"), "{e}");
        let e = parse("[[target]]\nurl = \"http://x/\"\nintervall = \"3s\"\n").unwrap_err();
        assert!(e.contains("line 3") && e.contains("intervall"), "{e}");
        let e = parse("[[target]]\nurl = \"http://x/\"\ninterval = \"10ms\"\n").unwrap_err();
        assert!(e.contains("target 1") && e.contains("interval"), "{e}");
        let e = parse("[[target]]\nurl = \"ftp://x/\"\n").unwrap_err();
        assert!(e.contains("target 1") && e.contains("url"), "{e}");
        let e = parse("[[target]]\nurl = \"http://x/\"\nsamples = 0\n").unwrap_err();
        assert!(e.contains("samples"), "{e}");
        let e = parse("[[target]]\nurl = \"http://x/\"\nheaders = [\"nocolon\"]\n").unwrap_err();
        assert!(e.contains("target 1"), "{e}");
        let e = parse("[[target]]\nurl = \"http://x/\"\ncheck = \"load\"\n").unwrap_err();
        assert!(e.contains("line 3"), "{e}");
        let e = parse(
            "[[target]]\nurl = \"http://a/\"\nname = \"x\"\n[[target]]\nurl = \"http://b/\"\nname = \"x\"\n",
        )
        .unwrap_err();
        assert!(e.contains("target 2") && e.contains("name"), "{e}");
        let e =
            parse("[[target]]\nurl = \"http://x/\"\nlabels = { target = \"y\" }\n").unwrap_err();
        assert!(e.contains("labels"), "{e}");
        let e = parse("[[target]]\nurl = \"http://x/\"\ncacert = \"/nonexistent/ca.pem\"\n")
            .unwrap_err();
        assert!(e.contains("cacert"), "{e}");
    }
}
