//! HTTP/3 for the load engine (`load --http3`): QUIC connections from `net::quic`
//! (the probe's client: same TLS options, verification, session tickets) speaking
//! HTTP/3 through the engine's own request layer (`load::h3`), each shared by
//! `--streams` VUs that send their requests as concurrent streams, as HTTP/2
//! connections are. Each worker thread has its own [`QuicClient`] (one UDP
//! endpoint driven by that thread's runtime); a connection that closes or refuses
//! new streams (GOAWAY) is replaced on next use.
//!
//! A connect is timed as the QUIC handshake (transport and TLS together: recorded as
//! the connect time, no separate TLS time). Before the run, one connection checks
//! that something answers over UDP ([`H3Setup::preflight`]): a port with no QUIC
//! server is a clear error within the timeout, not a run of timeouts.

use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use super::h3::{self, Link};
use super::plan::LoadPlan;
use super::recorder::{ErrorKind, Outcome};
use super::script::Kept;
use super::LoadError;
use crate::net::quic::QuicClient;
use crate::net::tls::TlsOptions;
use crate::net::ResolveOverride;
use crate::net::{NetError, Target};

/// A request prepared once (`load::h3`): its frames go out as one buffer.
pub type H3Request = h3::Request;

/// What every worker thread shares to speak HTTP/3: the TLS options its
/// [`QuicClient`] is made from, the target (pinned to the address resolved before the
/// run) and the requests.
pub struct H3Setup {
    tls: TlsOptions,
    target: Target,
    /// The run's address for the target's host: connects skip name resolution.
    pin: Vec<ResolveOverride>,
    timeout: Duration,
    requests: Vec<H3Request>,
}

impl H3Setup {
    /// Prepares HTTP/3 for `plan` against `addr` (an https target).
    pub fn new(plan: &LoadPlan, addr: SocketAddr) -> Result<H3Setup, LoadError> {
        let requests = plan
            .endpoints
            .iter()
            .map(|e| H3Request::new(&plan.target, e))
            .collect::<Result<Vec<_>, _>>()
            .map_err(LoadError::Plan)?;
        let tls = TlsOptions {
            insecure: plan.client.insecure,
            cacert: plan.client.cacert.clone(),
            alpn: Vec::new(),
        };
        // Fail on a bad --cacert now, not in every thread.
        crate::net::quic::client_config(&tls, true).map_err(|e| LoadError::Tls(e.to_string()))?;
        Ok(H3Setup {
            tls,
            pin: vec![ResolveOverride {
                host: plan.target.host.clone(),
                port: plan.target.port,
                addr: addr.ip(),
            }],
            target: plan.target.clone(),
            timeout: plan.client.timeout,
            requests,
        })
    }

    /// A client for one worker thread; its connections share TLS sessions (a
    /// reconnect resumes, as a returning browser would). Made once per thread.
    pub fn client(&self) -> Option<QuicClient> {
        QuicClient::new(&self.tls, true).ok()
    }

    /// The prepared request of endpoint `ep`.
    pub fn request(&self, ep: usize) -> &H3Request {
        &self.requests[ep]
    }

    /// One QUIC connection before the run (not recorded), bounded by `limit` and
    /// ended at once by `stop`: nothing answering over UDP, or a refused certificate,
    /// is the run's error. None when stopped first.
    pub fn preflight(&self, limit: Duration, stop: &AtomicBool) -> Result<(), LoadError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| LoadError::Quic(format!("cannot start a runtime: {e}")))?;
        rt.block_on(async {
            let client =
                QuicClient::new(&self.tls, false).map_err(|e| LoadError::Tls(e.to_string()))?;
            let stopped = async {
                while !stop.load(Ordering::Relaxed) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            };
            tokio::select! {
                r = client.connect(&self.target, &self.pin, limit, false) => match r {
                    Ok(_) => Ok(()),
                    Err(e @ NetError::Tls { .. }) => Err(LoadError::Tls(e.to_string())),
                    Err(e) => Err(LoadError::Quic(e.to_string())),
                },
                _ = stopped => Ok(()),
            }
        })
    }

    /// Opens a connection (QUIC handshake and HTTP/3 setup) with `client`: the
    /// connection and its handshake's time.
    pub async fn open(&self, client: &QuicClient) -> Result<(Link, Duration), ErrorKind> {
        let (conn, took) = client
            .connect_quic(&self.target, &self.pin, self.timeout)
            .await
            .map_err(|e| match e.kind() {
                "tls" => ErrorKind::Tls,
                "timeout" => ErrorKind::Timeout,
                "reset" => ErrorKind::Reset,
                "protocol" => ErrorKind::Protocol,
                _ => ErrorKind::Connect,
            })?;
        Ok((Link::open(conn).await?, took))
    }
}

/// One HTTP/3 connection shared by several VUs of a thread.
#[derive(Default)]
pub struct H3Slot {
    conn: RefCell<Option<(u64, Rc<Link>)>>,
    /// Bumped at every new connection, so a VU drops only the one it saw fail.
    generation: Cell<u64>,
    connecting: Cell<bool>,
    ready: Notify,
}

/// What a VU finds in its slot.
pub enum Slot {
    /// A live connection to send on (its generation, the connection: a request
    /// holds it, so one retired meanwhile closes only after its last request).
    Ready(u64, Rc<Link>),
    /// Nobody is connecting: the caller should.
    Connect,
}

impl H3Slot {
    /// A live connection, waiting while another VU of the slot connects.
    pub async fn get(&self) -> Slot {
        loop {
            if let Some((g, c)) = self.conn.borrow().as_ref() {
                if c.is_usable() {
                    return Slot::Ready(*g, c.clone());
                }
            }
            if !self.connecting.get() {
                self.connecting.set(true);
                return Slot::Connect;
            }
            self.ready.notified().await;
        }
    }

    /// Ends a connect attempt (with the new connection on success); returns its
    /// generation.
    pub fn connected(&self, conn: Option<Rc<Link>>) -> u64 {
        let g = self.generation.get() + 1;
        self.generation.set(g);
        *self.conn.borrow_mut() = conn.map(|c| (g, c));
        self.connecting.set(false);
        self.ready.notify_waiters();
        g
    }

    /// Forgets connection `generation` (it failed); true when it was still held.
    pub fn drop_failed(&self, generation: u64) -> bool {
        let mut c = self.conn.borrow_mut();
        if c.as_ref().is_some_and(|(g, _)| *g == generation) {
            *c = None;
            return true;
        }
        false
    }

    /// Whether the slot holds a live connection.
    pub fn is_connected(&self) -> bool {
        self.conn
            .borrow()
            .as_ref()
            .is_some_and(|(_, c)| c.is_usable())
    }
}

/// Sends one request on a new stream of `link` and reads the body to its end,
/// keeping what a scenario's `kept` asks for of the response. The flag says the
/// connection itself failed (no new stream, or it closed): the slot should replace
/// it.
pub async fn exchange(
    link: Rc<Link>,
    req: &H3Request,
    mark_first_byte: bool,
    kept: Option<&mut Kept>,
) -> (Outcome, bool) {
    h3::exchange(&link, req, mark_first_byte, kept).await
}

/// Lets the thread's endpoint send the close of the connections just dropped
/// before its runtime goes (else the server waits for its idle timeout).
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(20)).await;
}
