//! A tiny HTTP/3 client for the lab tests (quinn + h3 directly), so the lab's HTTP/3
//! side is tested without latscope's own client: connect (fresh, or resumed with
//! 0-RTT), send GETs, read whole responses.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use http::{Method, Request};

use crate::util_lab::{Resp, TIMEOUT};

/// A QUIC client endpoint that trusts `cert_pem`, offers h3 and keeps TLS sessions
/// (so a second connection resumes, with 0-RTT).
pub fn client(cert_pem: &str) -> quinn::Endpoint {
    client_on(cert_pem, "127.0.0.1:0")
}

/// [`client`] bound to `bind` (`0.0.0.0:0` to reach a lab on the wire).
pub fn client_on(cert_pem: &str, bind: &str) -> quinn::Endpoint {
    let mut tls = (*crate::util_lab::trusting(cert_pem, &[b"h3"])).clone();
    tls.enable_early_data = true;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).expect("QUIC TLS");
    let mut endpoint = quinn::Endpoint::client(bind.parse().unwrap()).unwrap();
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    endpoint
}

type Sender = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// One HTTP/3 connection.
pub struct H3Conn {
    pub quic: quinn::Connection,
    sender: Sender,
    authority: String,
    /// The handshake used 0-RTT (and the server accepted it), known once the
    /// handshake is done.
    pub zero_rtt: Option<tokio::sync::oneshot::Receiver<bool>>,
}

/// Connects to `addr` for server name `host`; with `early`, tries 0-RTT (it works
/// when the endpoint holds a session for the server).
pub async fn connect(
    endpoint: &quinn::Endpoint,
    addr: SocketAddr,
    host: &str,
    early: bool,
) -> Result<H3Conn, String> {
    let connecting = endpoint
        .connect(addr, host)
        .map_err(|e| format!("connect: {e}"))?;
    let (quic, zero_rtt) = match connecting.into_0rtt() {
        Ok((quic, accepted)) if early => {
            let (tx, rx) = tokio::sync::oneshot::channel();
            tokio::spawn(async move {
                let _ = tx.send(accepted.await);
            });
            (quic, Some(rx))
        }
        Ok((quic, _)) => (quic, None),
        Err(connecting) => (
            tokio::time::timeout(TIMEOUT, connecting)
                .await
                .map_err(|_| "QUIC handshake timed out".to_string())?
                .map_err(|e| format!("QUIC handshake: {e}"))?,
            None,
        ),
    };
    let (mut driver, sender) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
        .await
        .map_err(|e| format!("h3: {e}"))?;
    tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    Ok(H3Conn {
        quic,
        sender,
        authority: addr.to_string(),
        zero_rtt,
    })
}

impl H3Conn {
    /// Sends `method path` and reads the whole response.
    pub async fn request(&mut self, method: Method, path: &str) -> Result<Resp, String> {
        let start = Instant::now();
        let req = Request::builder()
            .method(method)
            .uri(format!("https://{}{path}", self.authority))
            .body(())
            .unwrap();
        let exchange = async {
            let mut stream = self
                .sender
                .send_request(req)
                .await
                .map_err(|e| format!("send: {e}"))?;
            stream.finish().await.map_err(|e| format!("finish: {e}"))?;
            let resp = stream
                .recv_response()
                .await
                .map_err(|e| format!("response: {e}"))?;
            let mut body = Vec::new();
            while let Some(mut chunk) =
                stream.recv_data().await.map_err(|e| format!("body: {e}"))?
            {
                while chunk.has_remaining() {
                    let c = chunk.chunk();
                    body.extend_from_slice(c);
                    let n = c.len();
                    chunk.advance(n);
                }
            }
            Ok::<_, String>((resp, body))
        };
        let (resp, body) = tokio::time::timeout(TIMEOUT, exchange)
            .await
            .map_err(|_| "request timed out".to_string())??;
        let (parts, ()) = resp.into_parts();
        Ok(Resp {
            status: parts.status,
            version: parts.version,
            headers: parts.headers,
            body: Bytes::from(body),
            elapsed: start.elapsed(),
        })
    }

    /// GET `path`.
    pub async fn get(&mut self, path: &str) -> Result<Resp, String> {
        self.request(Method::GET, path).await
    }

    /// Whether 0-RTT was tried and accepted (waits for the handshake, bounded).
    pub async fn zero_rtt_accepted(&mut self) -> bool {
        match self.zero_rtt.take() {
            Some(rx) => tokio::time::timeout(Duration::from_secs(5), rx)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or(false),
            None => false,
        }
    }
}
