//! HTTP/2 for the load engine, with hyper's low-level client: one connection (h2
//! via ALPN, or h2c with prior knowledge) shared by `--streams` VUs, each sending its
//! requests as concurrent streams (h2load's `-m`). The connection task runs on the
//! worker thread's own runtime; a connection that closes is replaced on next use.

use std::cell::{Cell, RefCell};

use bytes::Bytes;
use http::header::{HeaderValue, HOST};
use http::{Request, Uri, Version};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::{self, SendRequest};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::sync::Notify;

use super::conn::Stream;
use super::plan::Endpoint;
use super::recorder::{ErrorKind, Outcome};
use crate::net::Target;

/// A request prepared once: its parts are cloned per request (hyper takes ownership).
pub struct H2Request {
    method: http::Method,
    uri: Uri,
    headers: http::HeaderMap,
    body: Bytes,
    head: bool,
}

impl H2Request {
    /// Prepares endpoint `e` of `target`.
    pub fn new(target: &Target, e: &Endpoint) -> Result<H2Request, String> {
        let scheme = if target.scheme == crate::net::Scheme::Https {
            "https"
        } else {
            "http"
        };
        let uri: Uri = format!("{scheme}://{}{}", target.authority(), e.path_and_query)
            .parse()
            .map_err(|err| format!("{}: {err}", e.path_and_query))?;
        let mut headers = http::HeaderMap::new();
        for (n, v) in &e.headers {
            if n == HOST {
                continue;
            }
            headers.append(n.clone(), v.clone());
        }
        // The same defaults as every other command (`-H` overrides each).
        for (name, value) in crate::config::http::DEFAULT_HEADERS {
            let name = http::header::HeaderName::from_static(name);
            if !headers.contains_key(&name) {
                headers.insert(name, HeaderValue::from_static(value));
            }
        }
        Ok(H2Request {
            method: e.method.clone(),
            uri,
            headers,
            body: e.body.clone(),
            head: e.method == http::Method::HEAD,
        })
    }

    fn build(&self) -> Request<Full<Bytes>> {
        let mut r = Request::new(Full::new(self.body.clone()));
        *r.method_mut() = self.method.clone();
        *r.uri_mut() = self.uri.clone();
        *r.version_mut() = Version::HTTP_2;
        *r.headers_mut() = self.headers.clone();
        r
    }
}

/// One HTTP/2 connection shared by several VUs of a thread.
#[derive(Default)]
pub struct H2Slot {
    sender: RefCell<Option<SendRequest<Full<Bytes>>>>,
    connecting: Cell<bool>,
    ready: Notify,
}

/// What a VU finds in its slot.
pub enum Slot {
    /// A live connection to send on.
    Ready(SendRequest<Full<Bytes>>),
    /// Nobody is connecting: the caller should.
    Connect,
}

impl H2Slot {
    /// A live sender, waiting while another VU of the slot connects.
    pub async fn get(&self) -> Slot {
        loop {
            if let Some(s) = self.sender.borrow().as_ref() {
                if !s.is_closed() {
                    return Slot::Ready(s.clone());
                }
            }
            if !self.connecting.get() {
                self.connecting.set(true);
                return Slot::Connect;
            }
            self.ready.notified().await;
        }
    }

    /// Ends a connect attempt (with the new sender on success).
    pub fn connected(&self, sender: Option<SendRequest<Full<Bytes>>>) {
        *self.sender.borrow_mut() = sender;
        self.connecting.set(false);
        self.ready.notify_waiters();
    }

    /// Forgets a closed connection; true when there was one to forget.
    pub fn drop_if_closed(&self) -> bool {
        let mut s = self.sender.borrow_mut();
        if s.as_ref().is_some_and(|s| s.is_closed()) {
            *s = None;
            return true;
        }
        false
    }

    /// Whether the slot holds a live connection.
    pub fn is_connected(&self) -> bool {
        self.sender
            .borrow()
            .as_ref()
            .is_some_and(|s| !s.is_closed())
    }
}

/// Does the HTTP/2 handshake over a connected stream; the connection task is spawned
/// on the current runtime. Boxed, like [`super::conn::Connector::open`]: it runs once
/// per connection and would otherwise enlarge every VU's future.
pub fn handshake(
    stream: Stream,
) -> std::pin::Pin<
    Box<impl std::future::Future<Output = Result<SendRequest<Full<Bytes>>, ErrorKind>>>,
> {
    Box::pin(handshake_inline(stream))
}

async fn handshake_inline(stream: Stream) -> Result<SendRequest<Full<Bytes>>, ErrorKind> {
    let mut builder = http2::Builder::new(TokioExecutor::new());
    builder
        .initial_stream_window_size(4 * 1024 * 1024)
        .initial_connection_window_size(16 * 1024 * 1024)
        .max_concurrent_reset_streams(1024)
        .max_header_list_size(crate::net::http::MAX_RESPONSE_HEAD as u32);
    let (sender, conn) = builder
        .handshake(TokioIo::new(stream))
        .await
        .map_err(|_| ErrorKind::Protocol)?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// Sends one request on `sender` and reads the body to its end.
pub async fn exchange(
    mut sender: SendRequest<Full<Bytes>>,
    req: &H2Request,
    mark_first_byte: bool,
) -> Outcome {
    if sender.ready().await.is_err() {
        return Outcome::failed(ErrorKind::Reset);
    }
    let resp = match sender.send_request(req.build()).await {
        Ok(r) => r,
        Err(e) => return Outcome::failed(hyper_kind(&e)),
    };
    let mut o = Outcome::of_head(resp.status(), resp.headers(), mark_first_byte);
    let mut body = resp.into_body();
    if !req.head {
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(f) => {
                    if let Some(d) = f.data_ref() {
                        o.bytes += d.len() as u64;
                    }
                }
                Err(e) => {
                    o.error = Some(hyper_kind(&e));
                    return o;
                }
            }
        }
    }
    o.error = ErrorKind::of_status(o.status);
    o
}

fn hyper_kind(e: &hyper::Error) -> ErrorKind {
    if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_parse() || e.is_user() {
        ErrorKind::Protocol
    } else {
        ErrorKind::Reset
    }
}
