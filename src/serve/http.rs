//! `latscope serve`'s HTTP side: `/metrics` (latscope's own), `/probe?target=URL&
//! module=NAME` (blackbox_exporter's multi-target pattern), `/` (the page),
//! `POST /-/reload` and `/-/healthy`, over hyper's HTTP/1.1, at most
//! [`MAX_CONNECTIONS`] at once. SIGHUP reloads; SIGTERM or Ctrl-C stops.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::sync::Semaphore;

use crate::config::serve::DEFAULT_MODULE;
use crate::net::{Scheme, Target};
use crate::visible::visible;

use super::check::{self, Outcome};
use super::daemon::Daemon;

/// The longest `/probe` waits for its probe (Prometheus' scrape timeout is 10 s by
/// default; it says its own in a header, which is honoured below this).
const PROBE_LIMIT: Duration = Duration::from_secs(60);
/// At most this many HTTP connections at once.
const MAX_CONNECTIONS: usize = 64;

const TEXT: &str = "text/plain; charset=utf-8";
const METRICS: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Schedules the targets and serves on `listen` until SIGTERM or Ctrl-C; SIGHUP
/// reloads. The checks under way are stopped before it returns.
pub async fn serve_forever(daemon: &Arc<Daemon>, listen: &str) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr()?;
    let n = daemon.config().targets.len();
    daemon.say(&format!(
        "listening on http://{addr}/ ({n} targets; /metrics, /probe?target=URL, /-/reload)"
    ));
    daemon.reschedule();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let conns = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = term.recv() => break,
            _ = hup.recv() => { let _ = daemon.reload(); }
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let Ok(permit) = conns.clone().try_acquire_owned() else {
                    // Over the limit: closed at once rather than queued.
                    continue;
                };
                let daemon = daemon.clone();
                tokio::spawn(async move {
                    let _permit = permit;
                    let svc = hyper::service::service_fn(move |req| {
                        let daemon = daemon.clone();
                        async move { Ok::<_, Infallible>(handle(&daemon, req).await) }
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
    daemon.say("stopping; the checks made so far are stored");
    daemon.stop();
    Ok(())
}

fn reply(status: StatusCode, kind: &str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, kind)
        .body(Full::new(body.into()))
        .unwrap_or_default()
}

/// One HTTP request to serve.
async fn handle(daemon: &Arc<Daemon>, req: Request<Incoming>) -> Response<Full<Bytes>> {
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
            let text = super::metrics::metrics(&daemon.state.lock().unwrap());
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
            probe(daemon, &query, timeout).await
        }
        (&Method::GET, "/") => {
            let page = super::page::render(&daemon.state.lock().unwrap());
            reply(StatusCode::OK, "text/html; charset=utf-8", page)
        }
        (&Method::POST, "/-/reload") | (&Method::PUT, "/-/reload") => {
            let _ = req.into_body().collect().await;
            let d = daemon.clone();
            match tokio::task::spawn_blocking(move || d.reload()).await {
                Ok(Ok(n)) => reply(StatusCode::OK, TEXT, format!("reloaded: {n} targets\n")),
                Ok(Err(e)) => reply(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    TEXT,
                    format!("failed to reload config: {}\n", visible(&e)),
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
    daemon: &Arc<Daemon>,
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
                format!("{}\n", visible(&e.to_string())),
            )
        }
    };
    let name = query.get("module").map_or(DEFAULT_MODULE, String::as_str);
    let config = daemon.config();
    let Some(module) = config.modules.get(name) else {
        return reply(
            StatusCode::BAD_REQUEST,
            TEXT,
            format!("Unknown module {:?}\n", visible(name)),
        );
    };
    let _permit = daemon.permit().await;
    let at = SystemTime::now();
    let o = match tokio::time::timeout(timeout, check::probe(&target, module, &daemon.halt.stop))
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
        super::metrics::blackbox(&o, target.scheme == Scheme::Https),
    )
}
