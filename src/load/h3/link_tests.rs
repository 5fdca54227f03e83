//! The HTTP/3 layer against a raw QUIC server (quinn, with the lab's certificate)
//! whose every frame the test writes: what the client sends (its control stream and
//! SETTINGS, RFC 9114 §6.2.1; a request's fields, §4.3), and what it does with the
//! server's streams and mistakes (§6.2, §7.2.6, §8; RFC 9204 §2.2.3).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use quinn::{ConnectionError, VarInt};

use super::frame::*;
use super::{exchange, qpack, Link, Request};
use crate::load::plan::Endpoint;
use crate::load::recorder::ErrorKind;
use crate::net::quic::QuicClient;
use crate::net::tls::TlsOptions;
use crate::net::Target;

const LIMIT: Duration = Duration::from_secs(10);

/// A QUIC server on 127.0.0.1 with the lab's self-signed certificate.
fn server() -> quinn::Endpoint {
    server_with(quinn::TransportConfig::default())
}

/// The same with `transport`.
fn server_with(transport: quinn::TransportConfig) -> quinn::Endpoint {
    let tls = crate::lab::LabTls::self_signed(&[])
        .unwrap()
        .without_resumption();
    let sessions = Arc::new(rustls::server::NoServerSessionStorage {});
    let crypto =
        quinn::crypto::rustls::QuicServerConfig::try_from(tls.quic_config(sessions)).unwrap();
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport));
    quinn::Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap()
}

/// A client's [`Link`] to `server`, the server's side of the connection, and the
/// request (`method` `/x`, with `body`).
async fn connect(
    server: &quinn::Endpoint,
    method: http::Method,
    body: &'static [u8],
) -> (Link, quinn::Connection, Request, QuicClient) {
    let port = server.local_addr().unwrap().port();
    let target = Target::parse(&format!("https://127.0.0.1:{port}/")).unwrap();
    let opts = TlsOptions {
        insecure: true,
        ..TlsOptions::default()
    };
    let client = QuicClient::new(&opts, false).unwrap();
    let accept = async { server.accept().await.unwrap().await.unwrap() };
    let (client_side, server_side) = tokio::join!(client.connect_quic(&target, &[], LIMIT), accept);
    let link = Link::open(client_side.unwrap().0).await.unwrap();
    let endpoint = Endpoint {
        name: "x".into(),
        method,
        path_and_query: "/x".into(),
        headers: Vec::new(),
        body: Bytes::from_static(body),
        weight: 1,
    };
    let req = Request::new(&target, &endpoint).unwrap();
    (link, server_side, req, client)
}

/// The server's control stream: its type, SETTINGS, then `more`.
async fn control(conn: &quinn::Connection, more: &[u8]) -> quinn::SendStream {
    let mut s = conn.open_uni().await.unwrap();
    let mut out = vec![0x00];
    put_frame_head(&mut out, SETTINGS, 0);
    out.extend_from_slice(more);
    s.write_all(&out).await.unwrap();
    s
}

/// A response's frames: `:status`, a content-length, and a body.
fn response(status: &str, body: &[u8]) -> Vec<u8> {
    let section = qpack::encode([
        (&b":status"[..], status.as_bytes()),
        (b"content-length", body.len().to_string().as_bytes()),
    ]);
    let mut out = Vec::new();
    put_frame(&mut out, HEADERS, &section);
    put_frame(&mut out, DATA, body);
    out
}

/// The fields of a request's HEADERS frame.
fn request_fields(wire: &[u8]) -> Vec<(String, String)> {
    super::headers_of(wire)
}

/// The code the client closed the connection with, as the server saw it.
async fn closed_with(conn: &quinn::Connection) -> u64 {
    match tokio::time::timeout(LIMIT, conn.closed()).await.unwrap() {
        ConnectionError::ApplicationClosed(c) => c.error_code.into_inner(),
        e => panic!("closed otherwise: {e}"),
    }
}

/// One request and its response, with the server's control stream (SETTINGS and
/// a grease frame), QPACK's two streams and a stream of an unknown type around it:
/// the client sends its control stream with SETTINGS first (§6.2.1,
/// MAX_FIELD_SECTION_SIZE), the request's pseudo-fields (§4.3.1), stops the unknown
/// stream with H3_STREAM_CREATION_ERROR (§6.2) and reads the response whole.
#[tokio::test]
async fn a_request_among_the_servers_streams() {
    let server = server();
    let (link, conn, req, _c) = connect(&server, http::Method::GET, b"").await;
    let mut grease = Vec::new();
    put_frame(&mut grease, 0x21, b"hi");
    let _control = control(&conn, &grease).await;
    let mut qpack_streams = Vec::new();
    for kind in [0x02u8, 0x03] {
        let mut s = conn.open_uni().await.unwrap();
        s.write_all(&[kind]).await.unwrap();
        qpack_streams.push(s);
    }
    let mut unknown = conn.open_uni().await.unwrap();
    unknown.write_all(&[0x21, 1, 2, 3]).await.unwrap();

    let serve = async {
        let mut theirs = conn.accept_uni().await.unwrap();
        let (mut send, mut recv) = conn.accept_bi().await.unwrap();
        let wire = recv.read_to_end(1 << 16).await.unwrap();
        send.write_all(&response("200", b"hello")).await.unwrap();
        send.finish().unwrap();
        let mut head = [0u8; 3];
        theirs.read_exact(&mut head).await.unwrap();
        (wire, head)
    };
    let ((o, failed), (wire, head)) = tokio::join!(exchange(&link, &req, false, None), serve);
    assert!(!failed);
    assert_eq!((o.status, o.error), (200, None));
    assert_eq!(o.bytes, 5 + ("content-length".len() + 1 + 4) as u64);
    // The control stream's type, then a SETTINGS frame.
    assert_eq!(head[0], 0x00);
    assert_eq!(u64::from(head[1]), SETTINGS);
    let fields = request_fields(&wire);
    let port = server.local_addr().unwrap().port();
    assert_eq!(
        &fields[..4],
        [
            (":method".into(), "GET".into()),
            (":scheme".into(), "https".into()),
            (":authority".into(), format!("127.0.0.1:{port}")),
            (":path".into(), "/x".into()),
        ]
    );
    let stopped = tokio::time::timeout(LIMIT, unknown.stopped())
        .await
        .unwrap();
    assert_eq!(
        stopped.unwrap(),
        Some(VarInt::from_u32(H3_STREAM_CREATION_ERROR))
    );
    assert!(link.is_usable());
}

/// §5.2: after GOAWAY the connection takes no new request.
#[tokio::test]
async fn goaway_retires_the_connection() {
    let server = server();
    let (link, conn, _req, _c) = connect(&server, http::Method::GET, b"").await;
    let mut goaway = Vec::new();
    put_frame(&mut goaway, GOAWAY, &[0]);
    let _control = control(&conn, &goaway).await;
    let deadline = tokio::time::Instant::now() + LIMIT;
    while link.is_usable() {
        assert!(tokio::time::Instant::now() < deadline, "GOAWAY not seen");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert!(
        link.conn().close_reason().is_none(),
        "GOAWAY is not a close"
    );
}

/// §6.2.2 and §7.2.5: a push stream, never allowed (no MAX_PUSH_ID), closes the
/// connection with H3_ID_ERROR; §6.2.1: so does the server closing its control
/// stream, with H3_CLOSED_CRITICAL_STREAM.
#[tokio::test]
async fn a_push_or_a_closed_control_stream_ends_the_connection() {
    let server = server();
    let (_link, conn, _req, _c) = connect(&server, http::Method::GET, b"").await;
    let mut push = conn.open_uni().await.unwrap();
    push.write_all(&[0x01, 0x00]).await.unwrap();
    assert_eq!(closed_with(&conn).await, u64::from(H3_ID_ERROR));

    let (_link, conn, _req, _c) = connect(&server, http::Method::GET, b"").await;
    let mut c = control(&conn, &[]).await;
    c.finish().unwrap();
    assert_eq!(
        closed_with(&conn).await,
        u64::from(H3_CLOSED_CRITICAL_STREAM)
    );
}

/// RFC 9204 §2.2.3: a field section that refers to the dynamic table this client
/// never allowed fails the request and closes the connection with
/// QPACK_DECOMPRESSION_FAILED; the slot is told to replace it.
#[tokio::test]
async fn a_dynamic_table_reference_fails_the_connection() {
    let server = server();
    let (link, conn, req, _c) = connect(&server, http::Method::GET, b"").await;
    let serve = async {
        let (mut send, mut recv) = conn.accept_bi().await.unwrap();
        recv.read_to_end(1 << 16).await.unwrap();
        let mut out = Vec::new();
        put_frame(&mut out, HEADERS, &[0x02, 0x00, 0x80]);
        send.write_all(&out).await.unwrap();
        let _ = send.finish();
        closed_with(&conn).await
    };
    let ((o, failed), code) = tokio::join!(exchange(&link, &req, false, None), serve);
    assert_eq!(o.error, Some(ErrorKind::Protocol));
    assert!(failed);
    assert_eq!(code, u64::from(QPACK_DECOMPRESSION_FAILED));
}

/// §4.1: a server may answer before reading the whole request and stop reading
/// with H3_NO_ERROR; the complete response counts (the server's 16 KiB stream
/// window holds the 1 MiB body back, so the client's write ends on the stop). A
/// stream the server resets (H3_REQUEST_REJECTED) is a reset of that request only.
#[tokio::test]
async fn early_answers_and_rejected_streams() {
    static BODY: [u8; 1 << 20] = [b'b'; 1 << 20];
    let mut transport = quinn::TransportConfig::default();
    transport.stream_receive_window(VarInt::from_u32(16 * 1024));
    let server = server_with(transport);
    let (link, conn, req, _c) = connect(&server, http::Method::POST, &BODY).await;
    let serve = async {
        let (mut send, mut recv) = conn.accept_bi().await.unwrap();
        let mut first = [0u8; 512];
        recv.read_exact(&mut first).await.unwrap();
        recv.stop(VarInt::from_u32(H3_NO_ERROR)).unwrap();
        send.write_all(&response("201", b"made")).await.unwrap();
        send.finish().unwrap();
        first
    };
    let ((o, failed), first) = tokio::join!(exchange(&link, &req, false, None), serve);
    assert_eq!((o.status, o.error, failed), (201, None, false));
    assert!(request_fields(&first[..])
        .iter()
        .any(|(n, v)| n == "content-length" && v == "1048576"));

    let serve = async {
        let (mut send, _recv) = conn.accept_bi().await.unwrap();
        send.reset(VarInt::from_u32(0x10b)).unwrap();
    };
    let ((o, failed), ()) = tokio::join!(exchange(&link, &req, false, None), serve);
    assert_eq!((o.error, failed), (Some(ErrorKind::Reset), false));
    assert!(link.is_usable());
}

/// §4.1.1: a request given up (its timeout) tells the server with
/// H3_REQUEST_CANCELLED rather than leaving it to answer into nothing.
#[tokio::test]
async fn a_request_given_up_is_cancelled() {
    let server = server();
    let (link, conn, req, _c) = connect(&server, http::Method::GET, b"").await;
    let give_up = tokio::time::timeout(
        Duration::from_millis(100),
        exchange(&link, &req, false, None),
    );
    let serve = async {
        let (send, mut recv) = conn.accept_bi().await.unwrap();
        recv.read_to_end(1 << 16).await.unwrap();
        tokio::time::timeout(LIMIT, send.stopped()).await.unwrap()
    };
    let (r, stopped) = tokio::join!(give_up, serve);
    assert!(r.is_err(), "the server never answered");
    assert_eq!(
        stopped.unwrap(),
        Some(VarInt::from_u32(H3_REQUEST_CANCELLED))
    );
}

/// §4.1.2: a malformed response (here a two-digit status) fails its request and
/// stops its stream with H3_MESSAGE_ERROR; the connection goes on.
#[tokio::test]
async fn a_malformed_response_fails_only_its_stream() {
    let server = server();
    let (link, conn, req, _c) = connect(&server, http::Method::GET, b"").await;
    let serve = async {
        let (mut send, mut recv) = conn.accept_bi().await.unwrap();
        recv.read_to_end(1 << 16).await.unwrap();
        let section = qpack::encode([(&b":status"[..], &b"20"[..])]);
        let mut out = Vec::new();
        put_frame(&mut out, HEADERS, &section);
        send.write_all(&out).await.unwrap();
        tokio::time::timeout(LIMIT, send.stopped()).await.unwrap()
    };
    let ((o, failed), stopped) = tokio::join!(exchange(&link, &req, false, None), serve);
    assert_eq!((o.error, failed), (Some(ErrorKind::Protocol), false));
    assert_eq!(stopped.unwrap(), Some(VarInt::from_u32(H3_MESSAGE_ERROR)));
    assert!(link.is_usable());
}

/// A connection the slot lets go (after GOAWAY, §5.2: the server still finishes
/// the requests it took) stays open for the request still on it, and closes with
/// H3_NO_ERROR after it.
#[tokio::test]
async fn a_retired_connection_finishes_its_requests() {
    let server = server();
    let (link, conn, req, _c) = connect(&server, http::Method::GET, b"").await;
    let slot = std::rc::Rc::new(link);
    let held = slot.clone();
    let request = async move { exchange(&held, &req, false, None).await };
    let serve = async {
        let (mut send, mut recv) = conn.accept_bi().await.unwrap();
        recv.read_to_end(1 << 16).await.unwrap();
        // The slot's own reference goes (a new connection replaced it) while the
        // request waits for its answer.
        drop(slot);
        assert!(conn.close_reason().is_none());
        send.write_all(&response("200", b"late")).await.unwrap();
        send.finish().unwrap();
        closed_with(&conn).await
    };
    let ((o, failed), code) = tokio::join!(request, serve);
    assert_eq!((o.status, o.error, failed), (200, None, false));
    assert_eq!(code, u64::from(H3_NO_ERROR));
}

/// §4.2.2: a request larger than the server's SETTINGS_MAX_FIELD_SECTION_SIZE is
/// not sent.
#[tokio::test]
async fn a_request_over_the_servers_field_section_limit_is_not_sent() {
    let server = server();
    let (link, conn, req, _c) = connect(&server, http::Method::GET, b"").await;
    let mut s = conn.open_uni().await.unwrap();
    let mut settings = Vec::new();
    put_varint(&mut settings, SETTINGS_MAX_FIELD_SECTION_SIZE);
    put_varint(&mut settings, 100);
    let mut out = vec![0x00];
    put_frame(&mut out, SETTINGS, &settings);
    s.write_all(&out).await.unwrap();
    let deadline = tokio::time::Instant::now() + LIMIT;
    while link.max_section() == u64::MAX {
        assert!(tokio::time::Instant::now() < deadline, "SETTINGS not seen");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(link.max_section(), 100);
    let (o, failed) = exchange(&link, &req, false, None).await;
    assert_eq!((o.error, failed), (Some(ErrorKind::Protocol), false));
    let none = tokio::time::timeout(Duration::from_millis(200), conn.accept_bi()).await;
    assert!(none.is_err(), "a stream was opened");
}
