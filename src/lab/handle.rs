//! A lab running on a thread and runtime of its own, for tests, the demo and other
//! commands: [`spawn`] binds 127.0.0.1:0, [`spawn_on`] takes a listener bound
//! elsewhere (the wire binds one inside its network namespace), [`spawn_with`] also
//! the UDP socket for HTTP/3. Dropping the [`RunningLab`] shuts the server down.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use super::stats::{Counters, LabStats};
use super::{base_url, server, LabOptions};

/// Worker threads of a spawned lab's runtime.
const THREADS: usize = 2;

/// A lab serving in the background; shuts down when dropped.
#[derive(Debug)]
pub struct RunningLab {
    addr: SocketAddr,
    base_url: String,
    cert_pem: Option<String>,
    counters: Arc<Counters>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

/// Starts a lab on 127.0.0.1 with a free port.
pub fn spawn(options: LabOptions) -> io::Result<RunningLab> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    spawn_on(listener, options)
}

/// Starts a lab on an already-bound listener (with `options.http3`, on the UDP port
/// of the same address too).
pub fn spawn_on(listener: std::net::TcpListener, options: LabOptions) -> io::Result<RunningLab> {
    let udp = if options.http3 {
        Some(super::bind_udp_twin(listener.local_addr()?)?)
    } else {
        None
    };
    spawn_with(listener, udp, options)
}

/// Starts a lab on an already-bound listener and, for `options.http3`, an
/// already-bound UDP socket.
pub fn spawn_with(
    listener: std::net::TcpListener,
    udp: Option<std::net::UdpSocket>,
    options: LabOptions,
) -> io::Result<RunningLab> {
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(THREADS)
        .thread_name("latscope-lab")
        .enable_all()
        .build()?;
    let listener = {
        let _guard = runtime.enter();
        tokio::net::TcpListener::from_std(listener)?
    };
    let cert_pem = options.tls.as_ref().map(|t| t.cert_pem().to_string());
    let counters = Arc::new(Counters::default());
    let (stop, stopped) = oneshot::channel::<()>();
    let served = counters.clone();
    let thread = std::thread::Builder::new()
        .name("latscope-lab".into())
        .spawn(move || {
            runtime.block_on(server::run(listener, udp, options, served, async move {
                let _ = stopped.await;
            }))
        })?;
    Ok(RunningLab {
        addr,
        base_url: base_url(addr, cert_pem.is_some()),
        cert_pem,
        counters,
        stop: Some(stop),
        thread: Some(thread),
    })
}

impl RunningLab {
    /// The address the lab listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its base URL, with a trailing slash: `http://127.0.0.1:PORT/` (https with TLS).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The URL of `path` (which starts with `/`) on this lab.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url.trim_end_matches('/'), path)
    }

    /// The certificate (PEM) when serving TLS, for a client to trust.
    pub fn cert_pem(&self) -> Option<&str> {
        self.cert_pem.as_deref()
    }

    /// What the lab has counted so far (the same as `/__lab/stats`).
    pub fn stats(&self) -> LabStats {
        self.counters.snapshot()
    }

    /// Stops the server and waits for its thread.
    pub fn shutdown(mut self) -> io::Result<()> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the lab thread panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for RunningLab {
    fn drop(&mut self) {
        let _ = self.stop_and_join();
    }
}
