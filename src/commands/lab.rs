//! `latscope lab`: serve the built-in target. The base URL is the first line on
//! stdout (scripts read it there); everything else goes to stderr. Serves until
//! SIGINT or SIGTERM, then exits 0.

use std::io::Write;

use anyhow::Context;

use crate::cli::LabArgs;
use crate::config::LabConfig;
use crate::lab::wire::Wire;
use crate::lab::{self, LabOptions, LabTls};
use crate::usage;

/// Runs `latscope lab`.
pub fn run(args: LabArgs) -> anyhow::Result<u8> {
    let cfg = LabConfig::from_args(&args)?;
    let mut options = cfg.options.clone();
    // The wire (devices, namespace, relay threads) lives until this function returns,
    // after the server has stopped; its Drop removes everything, also when unwinding.
    let wire = match cfg.wire.clone() {
        Some(w) => Some(Wire::start(w)?),
        None => None,
    };
    if let Some(t) = &cfg.tls {
        // The certificate covers the wire's server address too.
        let mut names = t.names.clone();
        if let Some(wire) = &wire {
            names.push(wire.server_ip().to_string());
        }
        let tls = LabTls::self_signed(&names)?;
        options.tls = Some(if t.resumption {
            tls
        } else {
            tls.without_resumption()
        });
    }
    if let (Some(path), Some(tls)) = (&cfg.cert_out, &options.tls) {
        std::fs::write(path, tls.cert_pem())
            .with_context(|| format!("cannot write --cert-out {}", path.display()))?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let code = runtime.block_on(serve(&cfg, options, wire.as_ref()));
    drop(runtime);
    drop(wire);
    code
}

async fn serve(args: &LabConfig, options: LabOptions, wire: Option<&Wire>) -> anyhow::Result<u8> {
    let listener = match wire {
        Some(wire) => bind_on_wire(args, wire)?,
        None => bind(args).await?,
    };
    let addr = listener.local_addr()?;
    // HTTP/3: the UDP port of the same number, on the wire or on the host.
    let udp = match (options.http3, wire) {
        (false, _) => None,
        (true, Some(wire)) => Some(
            wire.bind_udp(addr.port())
                .with_context(|| format!("cannot bind UDP {addr} on the wire for --http3"))?,
        ),
        (true, None) => Some(lab::bind_udp_twin(addr)?),
    };
    let shutdown = shutdown_signal()?;
    let url = lab::base_url(addr, options.tls.is_some());
    let mut out = std::io::stdout().lock();
    writeln!(out, "{url}")?;
    out.flush()?;
    drop(out);
    eprintln!(
        "latscope lab: serving {url} ({}{}); GET {url} lists the routes; Ctrl-C stops",
        if options.tls.is_some() { "TLS, " } else { "" },
        match (options.http2, options.http3) {
            (false, false) => "HTTP/1.1",
            (true, false) => "HTTP/1.1 and HTTP/2",
            (false, true) => "HTTP/1.1 and HTTP/3 over UDP",
            (true, true) => "HTTP/1.1, HTTP/2 and HTTP/3 over UDP",
        },
    );
    if let Some(wire) = wire {
        eprintln!(
            "latscope lab: wire {} {} <-> {} {} ({}); removed on exit",
            wire.host_device(),
            wire.host_ip(),
            wire.server_device(),
            wire.server_ip(),
            wire.options().describe(wire.seed()),
        );
    }
    if let Some(path) = &args.cert_out {
        eprintln!("latscope lab: certificate written to {}", path.display());
    }
    lab::serve_on(listener, udp, options, shutdown).await?;
    eprintln!("latscope lab: stopped");
    Ok(0)
}

/// Binds the listener inside the wire's namespace, at the wire's server address and
/// the port of `--listen` (its host part does not apply: the server is on the wire).
fn bind_on_wire(args: &LabConfig, wire: &Wire) -> anyhow::Result<tokio::net::TcpListener> {
    let port: u16 = args
        .listen
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .ok_or_else(|| {
            usage!(
                "--listen {}: no port (write e.g. 127.0.0.1:8080)",
                args.listen
            )
        })?;
    let listener = wire
        .bind_listener(port)
        .with_context(|| format!("cannot listen on {}:{port} on the wire", wire.server_ip()))?;
    listener.set_nonblocking(true)?;
    Ok(tokio::net::TcpListener::from_std(listener)?)
}

/// Binds `--listen` on the host.
async fn bind(args: &LabConfig) -> anyhow::Result<tokio::net::TcpListener> {
    let addrs: Vec<_> = tokio::net::lookup_host(&args.listen)
        .await
        .map_err(|e| usage!("--listen {}: {e} (write e.g. 127.0.0.1:8080)", args.listen))?
        .collect();
    let Some(first) = addrs.first() else {
        return Err(usage!("--listen {}: no address", args.listen));
    };
    tokio::net::TcpListener::bind(first)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))
}

/// Installs the SIGINT and SIGTERM handlers now (so a signal that arrives as soon as
/// the URL is printed is caught) and returns a future that completes on either.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
