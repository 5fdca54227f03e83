//! Command-line definitions (clap derive) and nothing else: what the user typed, with
//! values parsed into durations, sizes and rates. Validation that needs more than one
//! value at a time (URLs, conflicts, scenario files) lives in `config/`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::disk::{DiskEngine, Pattern};
use crate::lab::OverloadPolicy;
use crate::load::search::SearchModel;
use crate::units;

/// Re-exported: the load engine choice is the load module's (tests name it here).
pub use crate::load::LoadEngine;

fn duration(s: &str) -> Result<Duration, String> {
    units::parse_duration(s)
}
fn size(s: &str) -> Result<u64, String> {
    units::parse_size(s)
}
fn rate(s: &str) -> Result<u64, String> {
    units::parse_rate(s)
}
fn percent(s: &str) -> Result<f64, String> {
    units::parse_percent(s)
}

/// latscope: find out where a web service's latency goes.
#[derive(Debug, Parser)]
#[command(
    name = "latscope",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("LATSCOPE_COMMIT"), ")"),
    about,
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Print URL credentials, token query parameters and secret header values as
    /// given: every output (text, --json, progress, errors) redacts them by
    /// default, as the store always does.
    #[arg(long, global = true)]
    pub show_secrets: bool,
    /// Quiet: no progress line, no live view, no "saved as run" line — only the
    /// result (and errors on stderr). For scripts and cron.
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

/// The commands.
// Parsed once per process: the size of its largest variant (`load`'s flags) costs
// nothing worth a Box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Probe + cache audit + a short bounded load ramp → findings (also `latscope URL`).
    Diagnose(DiagnoseArgs),
    /// Start the lab with known problems and diagnose it.
    Demo(DemoArgs),
    /// Sequential timed requests over fresh, resumed (TLS) and reused connections, phase by phase.
    Probe(ProbeArgs),
    /// Load test: closed (-c), open (--rate), count (-n) or staged.
    Load(LoadArgs),
    /// Storage latency: IOPS, bandwidth and percentiles to p99.99.
    Disk(DiskArgs),
    /// The page as a headless Chromium loads it: every request timed, milestones
    /// (TTFB, FCP, LCP, load), first and repeat visits, findings.
    Page(PageArgs),
    /// The built-in target server (for tests, demos and reproductions).
    Lab(LabArgs),
    /// Run a command behind the lab's wire (RTT, loss, bandwidth, outages): any server
    /// at a distance.
    Wire(WireArgs),
    /// Keep watching: check targets on a schedule, serve Prometheus metrics (and
    /// blackbox_exporter's /probe), findings, changes and a page.
    Serve(ServeArgs),
    /// List stored runs.
    Runs(RunsArgs),
    /// Print one stored run again, as it printed when it ran (or --json).
    Show(ShowArgs),
    /// Write one run as a portable JSON file (histograms inside).
    Export(ExportArgs),
    /// Add an exported run to this store.
    Import(ImportArgs),
    /// Join shard runs of one load plan into one run (histograms added exactly).
    Merge(MergeArgs),
    /// Kubernetes manifests that run a load as shards (`k8s job`).
    K8s(K8sArgs),
    /// Stored runs side by side: ratios to the first and whether they differ significantly.
    Compare(CompareArgs),
    /// A self-contained HTML report of stored runs (charts as inline SVG), CSV, HDR log.
    Report(ReportArgs),
    /// Shell completions on stdout (`latscope completions bash > /etc/bash_completion.d/latscope`).
    Completions(CompletionsArgs),
    /// The manual page (roff) on stdout, or one page per command into --dir.
    Man(ManArgs),
}

/// `latscope serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen for /metrics, /probe, / and /-/reload.
    #[arg(long, default_value = "127.0.0.1:9316", value_name = "ADDR")]
    pub listen: String,
    /// The targets file (TOML): which URLs to check, how often, how (the README's
    /// "Keep watching" section). Reloaded on SIGHUP and `POST /-/reload`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Check every target once, print what was found, save and exit (for cron and
    /// tests): exit 1 when a target failed.
    #[arg(long)]
    pub once: bool,
    /// How long the checks' stored runs are kept.
    #[arg(long, default_value = "7d", value_parser = duration, value_name = "DURATION")]
    pub retention: Duration,
    /// A cap on the store's size: past it, the oldest stored checks go first (each
    /// target's newest stays; runs that are not serve's are never touched).
    #[arg(long, default_value = "1GiB", value_parser = size, value_name = "SIZE")]
    pub retention_size: u64,
    /// At most this many checks at once.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub max_concurrent: usize,
    /// Print a file that goes with serve (prometheus: a scrape config; rules: alerting
    /// rules; grafana: a dashboard; systemd: a unit; k8s: manifests with the
    /// --config file) and exit.
    #[arg(long, value_enum, value_name = "KIND")]
    pub print_config: Option<PrintKind>,
    /// (Internal: how serve runs a diagnose check in a process of its own.) Diagnose
    /// the one target of the targets file on stdin, print the outcome as JSON, exit.
    #[arg(long, hide = true)]
    pub diagnose_stdin: bool,
    /// Run store (SQLite) path.
    #[arg(long, value_name = "PATH", env = "LATSCOPE_DB")]
    pub db: Option<PathBuf>,
    /// Do not store the checks.
    #[arg(long)]
    pub no_save: bool,
}

/// What `latscope serve --print-config` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PrintKind {
    /// A Prometheus scrape config for /metrics and /probe.
    Prometheus,
    /// Prometheus alerting rules (a target failing, a finding that holds, the cache
    /// that stopped hitting, a certificate about to expire).
    Rules,
    /// A systemd unit.
    Systemd,
    /// A Grafana dashboard (JSON).
    Grafana,
    /// Kubernetes manifests: the targets file as a ConfigMap, a Deployment, a Service.
    K8s,
}

/// `latscope completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to write completions for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `latscope man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write latscope.1 and one latscope-COMMAND.1 per command into this directory
    /// (for `man -l` or a MANPATH) instead of latscope.1 on stdout.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Where the run store is, for the commands that read it.
#[derive(Debug, Args, Clone, Default)]
pub struct DbArgs {
    /// Run store (SQLite) path.
    #[arg(long, value_name = "PATH", env = "LATSCOPE_DB")]
    pub db: Option<PathBuf>,
}

/// `latscope runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Only runs of this kind (probe, load, disk, diagnose).
    #[arg(long)]
    pub kind: Option<String>,
    /// Only runs with this label.
    #[arg(long)]
    pub label: Option<String>,
    /// Only runs whose target contains this text.
    #[arg(long)]
    pub target: Option<String>,
    /// Only the newest N runs.
    #[arg(long, value_name = "N")]
    pub last: Option<usize>,
    /// Print the list as JSON (fields in docs/json.md).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `latscope show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A run id, a unique id prefix, a label, or last / last~N.
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Print the run's JSON document instead of its text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `latscope export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A run id, a unique id prefix, a label, or last / last~N.
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Write to FILE instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// latscope: the portable run file `import` reads; openmetrics: a load run's
    /// timeline as OpenMetrics text for `promtool tsdb create-blocks-from openmetrics`.
    #[arg(long, default_value = "latscope", value_parser = ["latscope", "openmetrics"])]
    pub format: String,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `latscope import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A file written by `latscope export`.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `latscope k8s`.
#[derive(Debug, Args)]
pub struct K8sArgs {
    #[command(subcommand)]
    pub command: K8sCommand,
}

/// What `latscope k8s` prints.
#[derive(Debug, Subcommand)]
pub enum K8sCommand {
    /// Print the manifests (a ConfigMap with the scenario, an Indexed Job) that run
    /// `latscope load … -- ARGS` as N shards starting together.
    Job(K8sJobArgs),
}

/// `latscope k8s job`.
#[derive(Debug, Args)]
pub struct K8sJobArgs {
    /// Shards (pods), each running 1/N of the load.
    #[arg(long, value_name = "N")]
    pub shards: u32,
    /// The container image with latscope in it (see the repository's Dockerfile).
    #[arg(long, value_name = "IMAGE")]
    pub image: String,
    /// Namespace of the ConfigMap and the Job.
    #[arg(long, value_name = "NS", default_value = "default")]
    pub namespace: String,
    /// Name of the Job (and prefix of the ConfigMap).
    #[arg(long, value_name = "NAME", default_value = "latscope-load")]
    pub name: String,
    /// The shards start this long after the manifests are printed (--start-at): apply
    /// them within that time.
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = duration)]
    pub start_in: Duration,
    /// CPU each shard requests (and is limited to).
    #[arg(long, value_name = "CPU", default_value = "1")]
    pub cpu: String,
    /// Memory each shard requests (and is limited to).
    #[arg(long, value_name = "BYTES", default_value = "512Mi")]
    pub memory: String,
    /// The load, after `--`: a URL or -f scenario.toml and any `latscope load` flags.
    #[arg(last = true, required = true, value_name = "LOAD ARGS")]
    pub load: Vec<String>,
}

/// `latscope merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard runs (id, id prefix, label, last, last~N) or files from `latscope export`.
    #[arg(value_name = "RUN|FILE", required = true, num_args = 2..)]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `latscope compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Runs to compare (id, id prefix, label, last, last~N); the first is the baseline.
    #[arg(value_name = "RUN", required = true, num_args = 2..)]
    pub runs: Vec<String>,
    /// Print the comparison as JSON (fields in docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// Show every row, not only those that changed significantly or by 2× or more.
    #[arg(long)]
    pub all: bool,
    /// Explain the columns and the significance tests after the tables.
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `latscope report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Runs to report on (id, id prefix, label, last, last~N); several are overlaid.
    #[arg(value_name = "RUN", required_unless_present = "serve")]
    pub runs: Vec<String>,
    /// One target of `latscope serve` over time, from its stored checks (label
    /// serve:NAME): its findings' timeline, failures, TTFB and changes.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["runs", "csv", "hdr_log"])]
    pub serve: Option<String>,
    /// Write the HTML report to FILE.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write the per-second timeline as CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the per-second latency histograms as an HdrHistogram interval log to FILE.
    #[arg(long, value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// Flags that shape an HTTP request and connection, shared by probe, load and diagnose.
#[derive(Debug, Args, Clone, Default)]
pub struct HttpArgs {
    /// Extra request header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Request method.
    #[arg(short = 'X', long = "request", value_name = "METHOD")]
    pub method: Option<String>,
    /// Request body, or @FILE to read it from a file.
    #[arg(long, value_name = "DATA")]
    pub data: Option<String>,
    /// The largest request body --data @FILE may read.
    #[arg(long, value_name = "SIZE", default_value = "1GiB", value_parser = size)]
    pub max_body: u64,
    /// Request timeout.
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = duration)]
    pub timeout: Duration,
    /// Do not verify the server's TLS certificate.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Trust this PEM certificate (or bundle) in addition to the built-in roots.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Send requests for HOST:PORT to ADDR instead of resolving HOST (as curl).
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    pub resolve: Vec<String>,
    /// Use HTTP/1.1 only.
    #[arg(long = "http1.1", conflicts_with = "http2")]
    pub http1_1: bool,
    /// Use HTTP/2 (h2c with prior knowledge on plain http; only h2 in ALPN on https).
    #[arg(long)]
    pub http2: bool,
    /// Use HTTP/3 over QUIC (https only: UDP to the URL's port, h3 in ALPN).
    #[arg(long, conflicts_with_all = ["http1_1", "http2"])]
    pub http3: bool,
    /// Also redact this header's value in stored runs (repeatable; Authorization,
    /// Cookie, X-Api-Key, *-Token, *-Secret, *-Key … always are).
    #[arg(long = "redact-header", value_name = "NAME")]
    pub redact_headers: Vec<String>,
    /// Follow redirects (as curl -L): measure the page the chain ends at and report
    /// the chain and its cost; credentials are not sent to another origin.
    #[arg(short = 'L', long)]
    pub location: bool,
    /// With -L, follow at most N redirects.
    #[arg(long, value_name = "N", requires = "location")]
    pub max_redirs: Option<usize>,
}

/// Flags about where results go, shared by every measuring command.
#[derive(Debug, Args, Clone, Default)]
pub struct OutputArgs {
    /// Print the result as JSON: one document per run, its fields listed in
    /// docs/json.md.
    #[arg(long)]
    pub json: bool,
    /// A name for this run, to find it again.
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// Run store (SQLite) path.
    #[arg(long, value_name = "PATH", env = "LATSCOPE_DB")]
    pub db: Option<PathBuf>,
    /// Do not save this run.
    #[arg(long)]
    pub no_save: bool,
    /// No full-screen live view on a terminal (load, disk, the diagnose/demo ramp): the
    /// one-line progress instead.
    #[arg(long)]
    pub no_tui: bool,
}

/// `latscope page`.
#[derive(Debug, Args)]
pub struct PageArgs {
    /// The page (http:// or https://).
    #[arg(value_name = "URL")]
    pub url: String,
    /// Rounds: each starts a browser on a fresh profile for a first visit, then visits
    /// again in that profile (browser cache, kept-alive connections). A finding is
    /// reported when more than half of the visits of its kind have it.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub visits: u32,
    /// Bound on the whole run (what was measured by then is reported).
    #[arg(short = 'm', long, default_value = "60s", value_parser = duration, value_name = "DURATION")]
    pub max_time: Duration,
    /// Also fetch from this origin (scheme://host[:port]); by default only the page's
    /// own origin, loopback and the lab's 198.18.0.0/15 are, the rest is blocked.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// Write the visits as a HAR 1.2 file (`latscope load --har FILE` replays it).
    #[arg(long, value_name = "FILE")]
    pub har: Option<PathBuf>,
    /// The browser binary [default: /usr/bin/chromium].
    #[arg(long, value_name = "PATH", env = "LATSCOPE_CHROMIUM")]
    pub chromium: Option<PathBuf>,
    /// Accept any TLS certificate.
    #[arg(short = 'k', long)]
    pub insecure: bool,
    /// Resolve HOST to ADDR in the browser (as curl's --resolve; every port of HOST).
    #[arg(long, value_name = "HOST:PORT:ADDR")]
    pub resolve: Vec<String>,
    /// Do not probe the origins the first paint waited for (by default each, at most
    /// four, gets a short probe with latscope's rules after the visits).
    #[arg(long)]
    pub no_origin_probe: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `latscope probe`.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// URLs to probe (http://, https://, or tcp://host:port for a TCP-connect ping).
    #[arg(required = true, value_name = "URL")]
    pub urls: Vec<String>,
    /// Samples per series: requests on fresh connections, on one reused connection,
    /// and on TLS on new connections resuming a session (so about 3×N requests in
    /// all). `-n`/`--count` still work (deprecated: in load, as in hey and ab, `-n` is
    /// the number of requests).
    #[arg(
        long = "samples",
        short_alias = 'n',
        alias = "count",
        default_value_t = 10,
        value_name = "N"
    )]
    pub count: u32,
    /// Distance to the server, km: adds the physical floor (2 × distance / 200,000 km/s).
    #[arg(long, value_name = "KM")]
    pub distance_km: Option<f64>,
    #[command(flatten)]
    pub http: HttpArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// A load split over processes or machines (`load`).
#[derive(Debug, Args, Clone, Default)]
pub struct ShardArgs {
    /// Run shard I of N (1-based): 1/N of -c, -n and the arrivals, each at its place in
    /// the whole run's schedule; `latscope merge` joins the shards' runs.
    #[arg(long, value_name = "I/N", conflicts_with = "shards")]
    pub shard: Option<String>,
    /// Run one of N shards: the one JOB_COMPLETION_INDEX (0-based, set by a Kubernetes
    /// Indexed Job) names.
    #[arg(long, value_name = "N")]
    pub shards: Option<u32>,
    /// Wait until this wall-clock time before starting (RFC 3339, or +DUR from now):
    /// shards given the same time start together.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// Also write the run as an export file (as `latscope export` does), saved or not:
    /// what `latscope merge` and `latscope import` read on another host.
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
}

/// `latscope load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Target URL (or give a scenario with -f).
    #[arg(value_name = "URL")]
    pub url: Option<String>,
    #[command(flatten)]
    pub shard: ShardArgs,
    /// Scenario file (TOML): several requests, weighted or in sequence.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Connections (closed model: virtual users; open model: the most it may open).
    #[arg(short = 'c', long = "connections", value_name = "N")]
    pub connections: Option<u32>,
    /// How long to run, a hard limit: no request starts after it, requests still in
    /// flight get min(--timeout, 2s) to finish, then are counted as incomplete.
    #[arg(short = 'd', long, value_name = "DUR", value_parser = duration)]
    pub duration: Option<Duration>,
    /// Stop after exactly N requests (ab style).
    #[arg(short = 'n', long = "requests", value_name = "N")]
    pub requests: Option<u64>,
    /// Open model: constant arrival rate, requests per second.
    #[arg(long, value_name = "RPS")]
    pub rate: Option<f64>,
    /// Ramp VUs (closed) or rate (open) linearly: '30s:10,2m:100,30s:0'.
    #[arg(long, value_name = "STAGES")]
    pub stages: Option<String>,
    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Concurrent streams per HTTP/2 connection.
    #[arg(long, value_name = "N")]
    pub streams: Option<u32>,
    /// A new connection for every request (what a curl loop does).
    #[arg(long)]
    pub no_keepalive: bool,
    /// Pass/fail rule: 'p99<1s', 'error_rate<1%', 'rps>500', 'name:p99<300ms', '*:p99<1s'.
    #[arg(long = "threshold", value_name = "EXPR")]
    pub thresholds: Vec<String>,
    /// Write one CSV row per request to FILE.
    #[arg(long, value_name = "FILE")]
    pub raw: Option<PathBuf>,
    /// Pause between a VU's requests.
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub think_time: Option<Duration>,
    /// Replay a browser's recording (HAR 1.2, from DevTools): its requests to the
    /// page's origin in order, with the user's pauses, status checks and a cookie jar
    /// per VU; other hosts are left out.
    #[arg(long, value_name = "FILE", conflicts_with = "file")]
    pub har: Option<PathBuf>,
    /// With --har: replay the recording's requests to this origin (scheme://host[:port],
    /// an API or CDN host of the page) instead of the page's own. One run talks to
    /// one origin; run once per origin to load several.
    #[arg(long, value_name = "ORIGIN", requires = "har")]
    pub har_origin: Option<String>,
    /// Scenarios: no cookie jar per VU (as `cookies = false` in the file).
    #[arg(long)]
    pub no_cookies: bool,
    /// I/O engine: io_uring (plain-http HTTP/1.1; auto falls back to epoll for https,
    /// HTTP/2, closed-model --stages, --think-time, or where the kernel refuses
    /// io_uring).
    #[arg(long, value_enum, default_value = "auto")]
    pub engine: LoadEngine,
    #[command(flatten)]
    pub find_max: Box<FindMaxArgs>,
    #[command(flatten)]
    pub watch: WatchArgs,
    #[command(flatten)]
    pub out: OutArgs,
    #[command(flatten)]
    pub http: HttpArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `latscope load --find-max`: the highest load at which every objective holds.
#[derive(Debug, Args, Clone, Default)]
pub struct FindMaxArgs {
    /// Search the highest load meeting OBJECTIVE (the --threshold grammar, repeatable;
    /// without an endpoint it holds for every endpoint): 'p99<1s', 'errors<1%', 'checkout:p99<800ms'.
    #[arg(long = "find-max", value_name = "OBJECTIVE")]
    pub objectives: Vec<String>,
    /// --find-max varies the arrival rate (open, the default) or the connections (closed).
    #[arg(long, value_enum, value_name = "MODEL")]
    pub model: Option<SearchModel>,
    /// --find-max: each step's measured length, after a settle period that is not scored [default: 10s].
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub step: Option<Duration>,
    /// --find-max: narrow the bracket until it is within this share [default: 5%].
    #[arg(long, value_name = "PCT")]
    pub precision: Option<String>,
    /// --find-max, open model: the first rate tried [default: 10].
    #[arg(long, value_name = "RPS")]
    pub min_rate: Option<f64>,
    /// --find-max, open model: the highest rate tried.
    #[arg(long, value_name = "RPS")]
    pub max_rate: Option<f64>,
    /// --find-max, closed model: the first number of connections tried [default: 1].
    #[arg(long, value_name = "N")]
    pub min_connections: Option<u32>,
    /// --find-max, closed model: the most connections tried.
    #[arg(long, value_name = "N")]
    pub max_connections: Option<u32>,
    /// --find-max: stop searching after this long and report the bracket so far [default: 10m].
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub max_time: Option<Duration>,
    /// --find-max: run every step for its whole --step, even one whose failure is already decided.
    #[arg(long)]
    pub no_early_stop: bool,
}

/// The output flags of `load` and `diagnose`.
#[derive(Debug, Clone, Default, Args)]
pub struct OutArgs {
    /// Stream the run's per-second series while it runs: prometheus=URL (remote
    /// write 1.0, e.g. http://127.0.0.1:9090/api/v1/write). Repeatable.
    #[arg(long = "out", value_name = "KIND=URL")]
    pub out: Vec<String>,
    /// Add a label to every series written with --out: NAME=VALUE (repeatable).
    #[arg(long = "out-label", value_name = "NAME=VALUE")]
    pub out_labels: Vec<String>,
}

/// `--watch` and `--watch-metric` (load and diagnose).
#[derive(Debug, Clone, Default, Args)]
pub struct WatchArgs {
    /// Scrape this Prometheus endpoint (node_exporter, an app's /metrics) once a
    /// second during the run and join it to the timeline (repeatable).
    #[arg(long = "watch", value_name = "URL")]
    pub watch: Vec<String>,
    /// Also record this series from the --watch endpoints: NAME or
    /// NAME{label="value"} (a rate per second for counters; repeatable).
    #[arg(long = "watch-metric", value_name = "NAME[{LABELS}]")]
    pub watch_metric: Vec<String>,
}

/// `latscope disk`.
#[derive(Debug, Args)]
pub struct DiskArgs {
    /// A directory (a test file is created there and removed afterwards) or an existing file.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// Access pattern [default without workload flags: the database suite; with them:
    /// randrw].
    #[arg(long, value_enum)]
    pub pattern: Option<Pattern>,
    /// Read percentage for randrw.
    #[arg(long, default_value_t = 70, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub mix: u8,
    /// Block size [default: 4k].
    #[arg(long, value_parser = size)]
    pub bs: Option<u64>,
    /// Queue depth (I/Os in flight) [default: 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub iodepth: Option<u32>,
    /// Test file size [default: 256MB; an existing file: its length; the suite lays out
    /// at most 256MB in about 4 s].
    #[arg(long, value_parser = size)]
    pub size: Option<u64>,
    /// How long to measure one workload [default: 30s]. Any of --pattern, --bs,
    /// --iodepth, --duration or --fsync runs that one workload instead of the suite.
    #[arg(short = 'd', long, value_parser = duration)]
    pub duration: Option<Duration>,
    /// O_DIRECT with aligned buffers (the default).
    #[arg(long, overrides_with = "buffered")]
    pub direct: bool,
    /// Go through the page cache instead of O_DIRECT.
    #[arg(long)]
    pub buffered: bool,
    /// fdatasync after every write (what a database's WAL pays).
    #[arg(long)]
    pub fsync: bool,
    /// Write the whole file before measuring, so reads hit real blocks.
    #[arg(long)]
    pub precondition: bool,
    /// Allow writing to an existing file (destroys its contents).
    #[arg(long)]
    pub write: bool,
    /// I/O engine.
    #[arg(long, value_enum, default_value = "auto")]
    pub engine: DiskEngine,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `latscope lab`.
#[derive(Debug, Args)]
pub struct LabArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    pub listen: String,
    /// Serve HTTPS with a self-signed certificate generated at start.
    #[arg(long)]
    pub tls: bool,
    /// Write the generated certificate (PEM) here, for --cacert.
    #[arg(long, value_name = "PATH", requires = "tls")]
    pub cert_out: Option<PathBuf>,
    /// Never resume TLS sessions (no session cache, no tickets).
    #[arg(long, requires = "tls")]
    pub no_tls_resumption: bool,
    /// Serve HTTP/2 too (h2 in ALPN with --tls, h2c prior knowledge without).
    #[arg(long)]
    pub http2: bool,
    /// Serve HTTP/3 too, over QUIC on the same port (UDP); needs --tls. TCP responses
    /// advertise it in Alt-Svc.
    #[arg(long)]
    pub http3: bool,
    /// Requests served at once; the rest wait (a saturating worker pool).
    #[arg(long, value_name = "N")]
    pub workers: Option<u32>,
    /// Requests per second the server can do.
    #[arg(long, value_name = "RPS")]
    pub capacity: Option<f64>,
    /// What happens to requests beyond --workers/--capacity.
    #[arg(long, value_enum, default_value = "queue")]
    pub overload: OverloadPolicy,
    /// Every DUR, hold every response for --stall-for (as a GC pause would).
    #[arg(long, value_name = "DUR", value_parser = duration, requires = "stall_for")]
    pub stall_every: Option<Duration>,
    /// Length of each stall.
    #[arg(long, value_name = "DUR", value_parser = duration, requires = "stall_every")]
    pub stall_for: Option<Duration>,
    /// How slow /cold is on its first request after start or idle.
    #[arg(long, value_name = "DUR", default_value = "2s", value_parser = duration)]
    pub cold: Duration,
    /// Idle time after which /cold is cold again.
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = duration)]
    pub cold_after: Duration,
    /// The wire in front of the lab (needs root).
    #[command(flatten, next_help_heading = "Wire (needs root)")]
    pub wire: WireFlags,
}

/// The wire's impairments, shared by `latscope wire` and `latscope lab`.
#[derive(Debug, Args, Clone, Default)]
pub struct WireFlags {
    /// Round-trip time added to every packet path.
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub rtt: Option<Duration>,
    /// Random extra delay per packet, up to DUR (never reorders).
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub jitter: Option<Duration>,
    /// Drop this percentage of packets.
    #[arg(long, value_name = "PCT", value_parser = percent)]
    pub loss: Option<f64>,
    /// Seed for reproducible loss.
    #[arg(long, value_name = "N")]
    pub loss_seed: Option<u64>,
    /// Pace packets to this rate (e.g. 8mbit).
    #[arg(long, value_name = "RATE", value_parser = rate)]
    pub bandwidth: Option<u64>,
    /// Every DUR, drop every packet for --outage-for.
    #[arg(long, value_name = "DUR", value_parser = duration, requires = "outage_for")]
    pub outage_every: Option<Duration>,
    /// Length of each outage.
    #[arg(long, value_name = "DUR", value_parser = duration, requires = "outage_every")]
    pub outage_for: Option<Duration>,
}

/// `latscope wire [impairments] -- COMMAND ARGS…`.
#[derive(Debug, Args)]
pub struct WireArgs {
    #[command(flatten)]
    pub wire: WireFlags,
    /// The command to run inside the wire's network namespace, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `latscope diagnose` (and `latscope URL`).
#[derive(Debug, Args)]
pub struct DiagnoseArgs {
    /// URLs to diagnose (several are shown side by side).
    #[arg(required = true, value_name = "URL")]
    pub urls: Vec<String>,
    /// Probe samples per series (fresh, then reused). `-n`/`--count` still work
    /// (deprecated: in load, as in hey and ab, `-n` is the number of requests).
    #[arg(
        long = "samples",
        short_alias = 'n',
        alias = "count",
        default_value_t = 10,
        value_name = "N"
    )]
    pub count: u32,
    /// Also probe the origin directly at ADDR (IP or IP:PORT): what the CDN hop costs.
    #[arg(long, value_name = "ADDR")]
    pub origin: Option<String>,
    /// Distance to the server, km: adds the physical floor (2 × distance / 200,000 km/s).
    #[arg(long, value_name = "KM")]
    pub distance_km: Option<f64>,
    /// Run the load ramp even against a public address.
    #[arg(long, conflicts_with = "no_load")]
    pub load: bool,
    /// Skip the load ramp.
    #[arg(long)]
    pub no_load: bool,
    /// Highest concurrency of the load ramp.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub max_connections: u32,
    /// Length of each load ramp step.
    #[arg(long, default_value = "2s", value_name = "DUR", value_parser = duration)]
    pub step: Duration,
    /// Stop measuring after this long (all URLs) and conclude from what was measured.
    #[arg(long, default_value = "45s", value_name = "DUR", value_parser = duration)]
    pub max_time: Duration,
    #[command(flatten)]
    pub watch: WatchArgs,
    #[command(flatten)]
    pub out: OutArgs,
    #[command(flatten)]
    pub http: HttpArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `latscope demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to write the HTML report.
    #[arg(
        short = 'o',
        long,
        default_value = "latscope-demo.html",
        value_name = "FILE"
    )]
    pub output_html: PathBuf,
    /// Leave out the wire (no 40 ms RTT), e.g. where TUN devices are refused.
    #[arg(long)]
    pub no_wire: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}
