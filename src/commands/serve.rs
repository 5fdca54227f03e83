//! `latscope serve`: checks each target of `--config` on its schedule, keeps their
//! state (`serve::state`), stores every check as a run labelled `serve:NAME` (with
//! `--retention`), logs each confirmed change on stderr, and serves over HTTP:
//! `/metrics` (latscope's own), `/probe?target=URL&module=NAME` (blackbox_exporter's
//! multi-target pattern), `/` (the page), `POST /-/reload` and `/-/healthy`. SIGHUP
//! reloads the file (a bad one is refused and the old kept); SIGTERM or Ctrl-C stops
//! the checks, lets the store take what was measured, and exits 0. `--once` checks
//! every target once, prints, saves, and exits.

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::cli::ServeArgs;
use crate::config::serve::{Check, ServeConfig, ServeTarget, DEFAULT_MODULE};
use crate::config::OutputConfig;
use crate::net::{Scheme, Target};
use crate::pipeline::Halt;
use crate::schema::{DiagnoseDoc, DiagnoseEntry, DiagnoseRun, ProbeDoc, ProbeEntry, ProbeRun};
use crate::serve::{self, check, Change, Outcome, State};
use crate::store::Store;
use crate::usage;

use super::saving::{self, NewRun};

/// The longest one check may take, whatever it is.
const CHECK_LIMIT: Duration = Duration::from_secs(300);
/// The longest `/probe` waits for its probe (Prometheus' scrape timeout is 10 s by
/// default; it says its own in a header, which is honoured below this).
const PROBE_LIMIT: Duration = Duration::from_secs(60);
/// At most this many HTTP connections at once.
const MAX_CONNECTIONS: usize = 64;

/// Runs `latscope serve`.
pub fn run(args: ServeArgs) -> anyhow::Result<u8> {
    if let Some(kind) = args.print_config {
        use crate::cli::PrintKind;
        use serve::print::PrintConfig;
        let kind = match kind {
            PrintKind::Prometheus => PrintConfig::Prometheus,
            PrintKind::Rules => PrintConfig::Rules,
            PrintKind::Systemd => PrintConfig::Systemd,
            PrintKind::Grafana => PrintConfig::Grafana,
            PrintKind::K8s => PrintConfig::K8s,
        };
        let config = args.config.as_ref().map(|p| p.display().to_string());
        // The ConfigMap holds the file as it is, once it is known to be good.
        let (targets, secret) = match &args.config {
            Some(p) if kind == PrintConfig::K8s => {
                let checked = ServeConfig::read(p)?;
                let secret = checked
                    .targets
                    .iter()
                    .any(|t| !t.requesting.secret_headers.is_empty())
                    || checked
                        .modules
                        .values()
                        .any(|m| !m.secret_headers.is_empty());
                let text = std::fs::read_to_string(p)
                    .with_context(|| format!("reading {}", p.display()))?;
                (Some(text), secret)
            }
            _ => (None, false),
        };
        let text = serve::print::render(
            kind,
            &args.listen,
            config.as_deref(),
            targets.as_deref(),
            secret,
        );
        if secret {
            eprintln!("latscope: the targets file holds secret headers: it goes into Secret latscope-targets, not a ConfigMap");
            // The Secret must hold the real values: not redacted for output.
            super::output::say_verbatim(&text)?;
        } else {
            super::output::say(&text)?;
        }
        return Ok(0);
    }
    if args.max_concurrent == 0 || args.max_concurrent > 256 {
        return Err(usage!("--max-concurrent must be between 1 and 256"));
    }
    if args.retention < Duration::from_secs(60) {
        return Err(usage!("--retention must be at least 1m"));
    }
    let config = match &args.config {
        Some(p) => ServeConfig::read(p)?,
        None => ServeConfig::parse("", Path::new(".")).map_err(|e| usage!("{e}"))?,
    };
    if args.once && config.targets.is_empty() {
        return Err(usage!(
            "--once checks the targets of --config FILE: give one with at least one [[target]]"
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let (saver, saving) = Saver::start(&args);
    let shared = Arc::new(Shared {
        state: Mutex::new(State::default()),
        config: Mutex::new(Arc::new(config)),
        halt: Halt::new(),
        limit: Arc::new(Semaphore::new(args.max_concurrent)),
        saver: Mutex::new(Some(saver)),
        schedule: Mutex::new(Vec::new()),
    });
    let code = if args.once {
        runtime.block_on(once(&shared))
    } else {
        runtime.block_on(serve_forever(&shared, &args.listen))?
    };
    // The store takes every check made before it stops.
    drop(shared.saver.lock().unwrap().take());
    let saved = saving.join().unwrap_or(0);
    if args.once && !args.no_save {
        eprintln!("latscope serve: {saved} checks saved (label serve:NAME; `latscope runs --label serve:NAME`)");
    }
    Ok(code)
}

/// What the schedule, the HTTP handlers and the signals share.
struct Shared {
    state: Mutex<State>,
    config: Mutex<Arc<ServeConfig>>,
    /// Set on SIGTERM/Ctrl-C: the checks end, the server stops.
    halt: Halt,
    /// Checks and `/probe`s at once.
    limit: Arc<Semaphore>,
    saver: Mutex<Option<mpsc::Sender<Stored>>>,
    schedule: Mutex<Vec<JoinHandle<()>>>,
}

impl Shared {
    /// Records an outcome of `t`: state, change log lines, the store.
    fn record(&self, t: &ServeTarget, o: Outcome) {
        let changes = self.state.lock().unwrap().record(&t.name, o.clone());
        for c in &changes {
            let line = c.line();
            eprintln!(
                "latscope serve: {}",
                super::output::clean(&crate::redact::for_output(&line))
            );
        }
        if let Some(s) = self.saver.lock().unwrap().as_ref() {
            let _ = s.send(Stored {
                target: t.clone(),
                outcome: o,
                changes,
            });
        }
    }

    /// Starts one task per target of the current config, ending the old ones.
    fn reschedule(self: &Arc<Self>) {
        let config = self.config.lock().unwrap().clone();
        self.state.lock().unwrap().set_targets(&config.targets);
        let mut tasks = self.schedule.lock().unwrap();
        for t in tasks.drain(..) {
            t.abort();
        }
        let n = config.targets.len().max(1) as u32;
        for (i, t) in config.targets.iter().enumerate() {
            let (shared, t) = (self.clone(), t.clone());
            // The first checks spread over the shortest interval, not all at once.
            let offset = t.interval.min(Duration::from_secs(10)) * i as u32 / n;
            tasks.push(tokio::spawn(async move {
                let stop = shared.halt.stop.clone();
                tokio::select! {
                    _ = tokio::time::sleep(offset) => {}
                    _ = stop.stopped() => return,
                }
                loop {
                    let o = shared.check(&t).await;
                    if shared.halt.is_halted() {
                        // Cut short by the shutdown: not an outcome of the target's.
                        return;
                    }
                    shared.record(&t, o);
                    tokio::select! {
                        _ = tokio::time::sleep(t.interval) => {}
                        _ = stop.stopped() => return,
                    }
                }
            }));
        }
    }

    /// One check of `t`, within the concurrency limit and [`CHECK_LIMIT`].
    async fn check(&self, t: &ServeTarget) -> Outcome {
        let _permit = self.limit.clone().acquire_owned().await;
        let at = SystemTime::now();
        match tokio::time::timeout(CHECK_LIMIT, check::run(t, &self.halt)).await {
            Ok(o) => o,
            Err(_) => Outcome {
                at,
                duration: CHECK_LIMIT,
                result: Err(format!(
                    "the check took longer than {}s",
                    CHECK_LIMIT.as_secs()
                )),
            },
        }
    }

    /// Reads the targets file again; a bad file is refused and the old one kept.
    fn reload(self: &Arc<Self>) -> Result<usize, String> {
        let path = self.config.lock().unwrap().path.clone();
        let Some(path) = path else {
            return Err("no --config file to reload".into());
        };
        match ServeConfig::read(&path) {
            Ok(c) => {
                let n = c.targets.len();
                *self.config.lock().unwrap() = Arc::new(c);
                self.reschedule();
                eprintln!("latscope serve: reloaded {}: {n} targets", path.display());
                Ok(n)
            }
            Err(e) => {
                eprintln!("latscope serve: reload refused, the old configuration stays: {e}");
                Err(e.to_string())
            }
        }
    }
}

/// `--once`: every target checked once (at most `--max-concurrent` at a time),
/// printed; 1 when one failed.
async fn once(shared: &Arc<Shared>) -> u8 {
    let config = shared.config.lock().unwrap().clone();
    shared.state.lock().unwrap().set_targets(&config.targets);
    let mut running = Vec::new();
    for t in config.targets.clone() {
        let s = shared.clone();
        running.push(tokio::spawn(async move {
            let o = s.check(&t).await;
            s.record(&t, o);
        }));
    }
    for r in running {
        let _ = r.await;
    }
    let state = shared.state.lock().unwrap();
    let mut failed = false;
    let mut text = String::new();
    for (name, t) in &state.targets {
        let Some(o) = &t.last else { continue };
        let head = if o.success() {
            let c = o.result.as_ref().ok();
            format!(
                "{} in {:.0} ms",
                c.and_then(|c| c.probe.status).unwrap_or(0),
                o.duration.as_secs_f64() * 1e3
            )
        } else {
            failed = true;
            format!("FAILED: {}", serve::state::failure(o))
        };
        text.push_str(&format!("{name}  {head}\n"));
        if let Ok(c) = &o.result {
            if let Some(s) = &c.summary {
                text.push_str(&format!("  {s}\n"));
            }
            for f in &c.findings {
                text.push_str(&format!("  {} {}: {}\n", f.severity, f.id, f.title));
            }
        }
    }
    let _ = super::output::say(&text);
    u8::from(failed)
}

/// Serves until SIGTERM or Ctrl-C; SIGHUP reloads.
async fn serve_forever(shared: &Arc<Shared>, listen: &str) -> anyhow::Result<u8> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr()?;
    let n = shared.config.lock().unwrap().targets.len();
    eprintln!("latscope serve: listening on http://{addr}/ ({n} targets; /metrics, /probe?target=URL, /-/reload)");
    shared.reschedule();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let conns = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = term.recv() => break,
            _ = hup.recv() => { let _ = shared.reload(); }
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let Ok(permit) = conns.clone().try_acquire_owned() else {
                    // Over the limit: closed at once rather than queued.
                    continue;
                };
                let shared = shared.clone();
                tokio::spawn(async move {
                    let _permit = permit;
                    let svc = hyper::service::service_fn(move |req| {
                        let shared = shared.clone();
                        async move { Ok::<_, Infallible>(handle(&shared, req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .timer(hyper_util::rt::TokioTimer::new())
                        .header_read_timeout(Duration::from_secs(10))
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        }
    }
    eprintln!("latscope serve: stopping; the checks made so far are stored");
    shared.halt.halt("latscope serve is stopping");
    for t in shared.schedule.lock().unwrap().drain(..) {
        t.abort();
    }
    Ok(0)
}

fn reply(status: StatusCode, kind: &str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, kind)
        .body(Full::new(body.into()))
        .unwrap_or_default()
}

const TEXT: &str = "text/plain; charset=utf-8";
const METRICS: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One HTTP request to serve.
async fn handle(shared: &Arc<Shared>, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    let query: HashMap<String, String> = req
        .uri()
        .query()
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect()
        })
        .unwrap_or_default();
    match (req.method(), path.as_str()) {
        (&Method::GET, "/metrics") => {
            let text = serve::metrics::metrics(&shared.state.lock().unwrap());
            reply(StatusCode::OK, METRICS, text)
        }
        (&Method::GET, "/probe") => {
            let timeout = req
                .headers()
                .get("x-prometheus-scrape-timeout-seconds")
                .and_then(|v| v.to_str().ok()?.parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s > 0.0)
                .map(|s| Duration::from_secs_f64((s - 0.5).max(0.5)))
                .unwrap_or(PROBE_LIMIT)
                .min(PROBE_LIMIT);
            probe(shared, &query, timeout).await
        }
        (&Method::GET, "/") => {
            let page = serve::page::render(&shared.state.lock().unwrap());
            reply(StatusCode::OK, "text/html; charset=utf-8", page)
        }
        (&Method::POST, "/-/reload") | (&Method::PUT, "/-/reload") => {
            let _ = req.into_body().collect().await;
            let s = shared.clone();
            match tokio::task::spawn_blocking(move || s.reload()).await {
                Ok(Ok(n)) => reply(StatusCode::OK, TEXT, format!("reloaded: {n} targets\n")),
                Ok(Err(e)) => reply(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    TEXT,
                    format!("failed to reload config: {e}\n"),
                ),
                Err(e) => reply(StatusCode::INTERNAL_SERVER_ERROR, TEXT, format!("{e}\n")),
            }
        }
        (_, "/-/reload") => reply(StatusCode::METHOD_NOT_ALLOWED, TEXT, "POST /-/reload\n"),
        (&Method::GET, "/-/healthy") | (&Method::GET, "/-/ready") => {
            reply(StatusCode::OK, TEXT, "OK\n")
        }
        _ => reply(
            StatusCode::NOT_FOUND,
            TEXT,
            "not found: /, /metrics, /probe?target=URL&module=NAME, POST /-/reload\n",
        ),
    }
}

/// `/probe?target=URL&module=NAME`: one probe, in blackbox_exporter's names.
async fn probe(
    shared: &Arc<Shared>,
    query: &HashMap<String, String>,
    timeout: Duration,
) -> Response<Full<Bytes>> {
    let Some(url) = query.get("target") else {
        return reply(
            StatusCode::BAD_REQUEST,
            TEXT,
            "Target parameter is missing\n",
        );
    };
    let target = match Target::parse(url) {
        Ok(t) if t.scheme != Scheme::Tcp => t,
        Ok(_) => {
            return reply(
                StatusCode::BAD_REQUEST,
                TEXT,
                "the target must be an http:// or https:// URL\n",
            )
        }
        Err(e) => {
            return reply(
                StatusCode::BAD_REQUEST,
                TEXT,
                format!("{}\n", super::output::clean(&e.to_string())),
            )
        }
    };
    let name = query.get("module").map_or(DEFAULT_MODULE, String::as_str);
    let config = shared.config.lock().unwrap().clone();
    let Some(module) = config.modules.get(name) else {
        return reply(
            StatusCode::BAD_REQUEST,
            TEXT,
            format!("Unknown module {:?}\n", super::output::clean(name)),
        );
    };
    let _permit = shared.limit.clone().acquire_owned().await;
    let at = SystemTime::now();
    let o = match tokio::time::timeout(timeout, check::probe(&target, module, &shared.halt.stop))
        .await
    {
        Ok(o) => o,
        Err(_) => Outcome {
            at,
            duration: timeout,
            result: Err("timed out".into()),
        },
    };
    reply(
        StatusCode::OK,
        METRICS,
        serve::metrics::blackbox(&o, target.scheme == Scheme::Https),
    )
}

/// A check on its way to the store.
struct Stored {
    target: ServeTarget,
    outcome: Outcome,
    changes: Vec<Change>,
}

/// The store's own thread: each check saved as a run labelled `serve:NAME`, the
/// label's runs older than `--retention` pruned as it goes (the newest kept).
struct Saver;

impl Saver {
    fn start(args: &ServeArgs) -> (mpsc::Sender<Stored>, std::thread::JoinHandle<usize>) {
        let (tx, rx) = mpsc::channel::<Stored>();
        let output = OutputConfig {
            json: false,
            label: None,
            db: args.db.clone(),
            no_save: args.no_save,
            no_tui: true,
        };
        let retention = args.retention;
        let handle = std::thread::spawn(move || {
            let mut saved = 0;
            let mut store = None;
            for s in rx {
                if output.no_save {
                    continue;
                }
                let label = format!("serve:{}", s.target.name);
                let record = saving::record(
                    &OutputConfig {
                        label: Some(label.clone()),
                        ..output.clone()
                    },
                    new_run(&s),
                );
                if store.is_none() {
                    match Store::open(&saving::db_path(&output.db)) {
                        Ok(st) => store = Some(st),
                        Err(e) => {
                            eprintln!("latscope serve: error: checks are not stored: {e}");
                            continue;
                        }
                    }
                }
                let Some(st) = store.as_mut() else { continue };
                match st.save(&record) {
                    Ok(_) => saved += 1,
                    Err(e) => eprintln!("latscope serve: error: a check was not stored: {e}"),
                }
                let before = SystemTime::now()
                    .checked_sub(retention)
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_millis() as i64);
                if let Err(e) = st.prune(&label, before, 1) {
                    eprintln!("latscope serve: error: old checks were not pruned: {e}");
                }
            }
            saved
        });
        (tx, handle)
    }
}

/// A check as a stored run: a probe run (or a diagnose run), its text with the
/// changes it confirmed.
fn new_run(s: &Stored) -> NewRun {
    let o = &s.outcome;
    let t = &s.target;
    let mut text = String::new();
    let (kind, summary, findings) = match (&o.result, t.check) {
        (Ok(c), Check::Diagnose) if c.diagnosis.is_some() => {
            let d = c.diagnosis.as_deref().expect("checked");
            text.push_str(&crate::report::diagnose::render(d));
            let doc = DiagnoseRun::of(
                vec![DiagnoseEntry::Diagnosed(Box::new(DiagnoseDoc::from(d)))],
                false,
            );
            (
                "diagnose",
                crate::schema::to_value(&doc),
                serde_json::to_value(&d.findings),
            )
        }
        (Ok(c), _) => {
            text.push_str(&crate::report::probe::render(
                &c.probe,
                &c.findings,
                c.summary.as_deref(),
            ));
            let doc = ProbeRun::of(
                vec![ProbeEntry::Measured(Box::new(ProbeDoc::new(
                    c.probe.clone(),
                    c.findings.clone(),
                )))],
                false,
            );
            (
                "probe",
                crate::schema::to_value(&doc),
                serde_json::to_value(&c.findings),
            )
        }
        (Err(e), _) => {
            text.push_str(&format!("{}: failed: {e}\n", t.target.url));
            let doc = ProbeRun::of(
                vec![ProbeEntry::Failed {
                    url: t.target.url.clone(),
                    error: e.clone(),
                }],
                false,
            );
            (
                "probe",
                crate::schema::to_value(&doc),
                Ok(serde_json::Value::Array(Vec::new())),
            )
        }
    };
    for c in &s.changes {
        text.push_str(&format!("change: {}\n", c.line()));
    }
    NewRun {
        kind,
        target: t.target.url.clone(),
        started: o.at,
        duration_s: o.duration.as_secs_f64(),
        config: serde_json::json!({
            "serve": {
                "target": t.name,
                "check": t.check.name(),
                "interval_s": t.interval.as_secs_f64(),
                "changes": s.changes.iter().map(|c| serde_json::json!({"what": c.what, "id": c.id, "detail": c.detail})).collect::<Vec<_>>(),
            }
        }),
        summary,
        timeline: serde_json::Value::Null,
        findings: findings.unwrap_or_default(),
        text,
        histograms: Vec::new(),
        secret_headers: Vec::new(),
    }
}
