//! latscope's own HTTP client for its side channels — scraping the `--watch`
//! endpoints, remote writes for `--out` — as opposed to the timed exchanges of
//! `net::http`: one HTTP/1.1 exchange on hyper over `net::conn` (DNS, TCP, and TLS
//! by `net::tls`, so `--cacert` and `-k` apply as they do to the measured requests),
//! its head the one [`RequestHead`](super::RequestHead), the body read up to a
//! limit, everything within one deadline. Blocking: each caller is a thread of its
//! own (a scraper, a sender) and owns one client with its current-thread runtime.
//! Nothing here prints.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;

use super::conn::{self, ConnectOptions};
use super::error::NetError;
use super::request::{Framing, RequestHead, RequestSpec};
use super::tls::{self, TlsOptions, ALPN_HTTP11};
use super::{Scheme, Target};

/// What came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    /// The body, at most the limit asked for.
    pub body: Bytes,
    /// The body went on past the limit (what is in `body` is its start).
    pub truncated: bool,
}

/// Why there is no answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Resolve, connect, TLS, or the exchange failed (the reason is worded).
    #[error(transparent)]
    Net(#[from] NetError),
    /// The client could not be set up (the runtime, the TLS configuration).
    #[error("{0}")]
    Setup(String),
}

/// A blocking HTTP/1.1 client; https with the TLS options it was made with.
pub struct Client {
    runtime: tokio::runtime::Runtime,
    tls: Result<Arc<rustls::ClientConfig>, String>,
}

impl Client {
    /// A client verifying certificates as `tls` says (`--cacert`, `-k`; ALPN is
    /// always http/1.1). A TLS configuration that cannot be built fails each https
    /// request with the reason, not the client.
    pub fn new(tls: &TlsOptions) -> Result<Client, ClientError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ClientError::Setup(format!("cannot start a runtime: {e}")))?;
        let opts = TlsOptions {
            alpn: vec![ALPN_HTTP11.to_vec()],
            ..tls.clone()
        };
        Ok(Client {
            runtime,
            tls: tls::client_config(&opts).map_err(|e| e.to_string()),
        })
    }

    /// Sends `spec` to `target` on a new connection (closed after the answer) and
    /// reads at most `limit` bytes of the body, all within `timeout`.
    pub fn send(
        &self,
        target: &Target,
        spec: &RequestSpec,
        limit: usize,
        timeout: Duration,
    ) -> Result<Answer, ClientError> {
        let tls = match target.scheme {
            Scheme::Https => Some(self.tls.clone().map_err(ClientError::Setup)?),
            _ => None,
        };
        let exchange = exchange(target, spec, tls, limit, timeout);
        self.runtime.block_on(async {
            match tokio::time::timeout(timeout, exchange).await {
                Ok(r) => r,
                Err(_) => Err(NetError::Timeout {
                    what: "the request",
                    after: timeout,
                }
                .into()),
            }
        })
    }
}

async fn exchange(
    target: &Target,
    spec: &RequestSpec,
    tls: Option<Arc<rustls::ClientConfig>>,
    limit: usize,
    timeout: Duration,
) -> Result<Answer, ClientError> {
    let options = ConnectOptions {
        resolve: Vec::new(),
        timeout,
        tls,
    };
    let connected = conn::open(target, &options).await?;
    let (mut sender, connection) = http1::Builder::new()
        .title_case_headers(true)
        .max_buf_size(super::http::MAX_RESPONSE_HEAD)
        .handshake::<_, Full<Bytes>>(TokioIo::new(connected.stream))
        .await
        .map_err(NetError::from_hyper)?;
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let request = RequestHead::of(target, spec)
        .to_request(Framing::H1, Full::new(spec.body.clone()))
        .map_err(NetError::Protocol)?;
    let response = sender
        .send_request(request)
        .await
        .map_err(NetError::from_hyper)?;
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut read = BytesMut::new();
    let mut truncated = false;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(NetError::from_hyper)?;
        if let Some(data) = frame.data_ref() {
            let room = limit - read.len();
            read.extend_from_slice(&data[..data.len().min(room)]);
            if data.len() > room {
                truncated = true;
                break;
            }
        }
    }
    driver.abort();
    Ok(Answer {
        status,
        body: read.freeze(),
        truncated,
    })
}
