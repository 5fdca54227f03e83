//! The HTTP/2 client without I/O: requests as encoded, a connection fed server
//! frames (whole, split at every byte, and garbage), and what each stream ends
//! with.

use bytes::Bytes;
use rand::{Rng, SeedableRng};

use super::conn::{Conn, Done};
use super::frame::{self, Head};
use super::hpack::{self, Decoder, Sink};
use super::Request;
use crate::load::plan::Endpoint;
use crate::load::recorder::ErrorKind;
use crate::net::Target;

fn endpoint(method: http::Method, path: &str, body: &'static [u8], headers: &[&str]) -> Endpoint {
    Endpoint {
        name: "x".into(),
        method,
        path_and_query: path.into(),
        headers: headers
            .iter()
            .map(|h| crate::net::request::field(h))
            .collect(),
        body: Bytes::from_static(body),
        weight: 1,
    }
}

fn request(method: http::Method, body: &'static [u8], headers: &[&str]) -> Request {
    let t = Target::parse("http://127.0.0.1:8080/").unwrap();
    Request::new(&t, &endpoint(method, "/a?b=1", body, headers)).unwrap()
}

/// Every decoded field, in order (also for `head_tests`).
#[derive(Default)]
pub(super) struct All(pub(super) Vec<(String, String)>);

impl Sink for All {
    fn wants(&self, _: &[u8]) -> bool {
        true
    }
    fn field(&mut self, n: &[u8], v: &[u8], _: usize) {
        self.0.push((
            String::from_utf8_lossy(n).into_owned(),
            String::from_utf8_lossy(v).into_owned(),
        ));
    }
}

/// Splits `bytes` into frames: (header, payload).
fn frames(bytes: &[u8]) -> Vec<(Head, Vec<u8>)> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < bytes.len() {
        let h = Head::parse(&bytes[at..]).unwrap();
        out.push((h, bytes[at + 9..at + 9 + h.len].to_vec()));
        at += 9 + h.len;
    }
    out
}

/// A server frame.
fn server(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::write_head(&mut out, payload.len(), kind, flags, stream);
    out.extend_from_slice(payload);
    out
}

/// A response head: `:status` and `fields`, as literals without indexing.
fn head_block(status: &str, fields: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    hpack::put_field(&mut b, ":status", status.as_bytes());
    for (n, v) in fields {
        hpack::put_field(&mut b, n, v.as_bytes());
    }
    b
}

/// A connection past the handshake, with the server's `settings`; its queued
/// output is dropped.
fn settled(settings: &[(u16, u32)]) -> Conn {
    let mut c = Conn::new(false);
    let mut s = Vec::new();
    frame::write_settings(&mut s, settings);
    assert_eq!(c.recv(&s), s.len());
    assert!(c.settled());
    c.out.clear();
    c
}

fn feed(c: &mut Conn, bytes: &[u8]) {
    assert_eq!(c.recv(bytes), bytes.len());
}

/// GET is one HEADERS frame with END_STREAM, its fields indexed after the first;
/// the block carries the pseudo-fields, the defaults and `-H` headers (a `Host`
/// header as `:authority`, `Connection` dropped: RFC 9113 §8.2.2, §8.3.1).
#[test]
fn requests_are_encoded_once() {
    let r = request(
        http::Method::GET,
        b"",
        &["Host: example.test", "Connection: close", "X-A: 1"],
    );
    let mut c = settled(&[]);
    let i = c.start(&r);
    let j = c.start(&r);
    assert_ne!(i, j);
    let f = frames(&c.out);
    assert_eq!(f.len(), 2);
    assert_eq!((f[0].0.stream, f[1].0.stream), (1, 3));
    assert_eq!(f[0].0.kind, frame::HEADERS);
    assert_eq!(f[0].0.flags, frame::END_HEADERS | frame::END_STREAM);
    // The second names by index what the first added to the server's table
    // (RFC 7541 §6.1, §6.2.1): one octet a field, and the same fields decoded.
    assert_eq!(f[1].1.len(), 8, "{:?}", f[1].1);
    let mut dec = Decoder::default();
    let mut again = All::default();
    let mut all = All::default();
    dec.decode(&f[0].1, &mut all).unwrap();
    dec.decode(&f[1].1, &mut again).unwrap();
    assert_eq!(all.0, again.0);
    let names: Vec<&str> = all.0.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            ":method",
            ":scheme",
            ":path",
            ":authority",
            "user-agent",
            "accept",
            "accept-encoding",
            "x-a"
        ]
    );
    assert_eq!(all.0[2].1, "/a?b=1");
    assert_eq!(all.0[3].1, "example.test");
    assert_eq!(c.open(), 2);
}

/// A POST body goes out as DATA within the server's stream and connection
/// windows and its frame size, and the rest after WINDOW_UPDATE (§6.9).
#[test]
fn request_bodies_respect_flow_control() {
    let body: &'static [u8] = &[7u8; 40_000];
    let r = request(http::Method::POST, body, &[]);
    let mut c = settled(&[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 20_000)]);
    let i = c.start(&r);
    let f = frames(&c.out);
    assert_eq!(f[0].0.flags, frame::END_HEADERS);
    let mut all = All::default();
    Decoder::default().decode(&f[0].1, &mut all).unwrap();
    assert!(all.0.contains(&("content-length".into(), "40000".into())));
    let sizes: Vec<usize> = f[1..].iter().map(|(h, _)| h.len).collect();
    assert_eq!(sizes, [16_384, 3_616]);
    assert!(f[1..]
        .iter()
        .all(|(h, _)| h.kind == frame::DATA && h.flags == 0));
    c.out.clear();
    c.send_body(i, r.body());
    assert!(c.out.is_empty(), "no window left");
    let mut inc = Vec::new();
    frame::write_window_update(&mut inc, 1, 30_000);
    feed(&mut c, &inc);
    c.send_body(i, r.body());
    // The connection window (65,535) is not the limit yet: the stream's is 30,000.
    let f = frames(&c.out);
    let sizes: Vec<usize> = f.iter().map(|(h, _)| h.len).collect();
    assert_eq!(sizes, [16_384, 3_616]);
    assert_eq!(f[1].0.flags, frame::END_STREAM);
    c.out.clear();
    // A response before the body is done would reset the stream; here it ends.
    let block = head_block("201", &[]);
    feed(
        &mut c,
        &server(
            frame::HEADERS,
            frame::END_HEADERS | frame::END_STREAM,
            1,
            &block,
        ),
    );
    let d = c.take(i).unwrap();
    assert_eq!(
        (d.outcome.status, d.outcome.error, d.retry),
        (201, None, false)
    );
    assert!(c.out.is_empty());
}

fn response(stream: u32, status: &str, body: &[u8]) -> Vec<u8> {
    let block = head_block(status, &[("content-length", "5"), ("x-cache", "HIT")]);
    let mut out = server(frame::HEADERS, frame::END_HEADERS, stream, &block);
    out.extend(server(frame::DATA, frame::END_STREAM, stream, body));
    out
}

/// A response's status, bytes (head fields as HTTP/1.1 counts them plus the
/// body) and cache verdict; fed whole and one byte at a time alike.
#[test]
fn responses_in_any_split() {
    let r = request(http::Method::GET, b"", &[]);
    let bytes = response(1, "200", b"hello");
    for split in [false, true] {
        let mut c = settled(&[]);
        let i = c.start(&r);
        if split {
            let mut buf = Vec::new();
            for &b in &bytes {
                buf.push(b);
                let used = c.recv(&buf);
                buf.drain(..used);
            }
            assert!(buf.is_empty());
        } else {
            feed(&mut c, &bytes);
        }
        let d = c.take(i).unwrap();
        let o = d.outcome;
        assert_eq!((o.status, o.error, d.retry), (200, None, false));
        let head = ("content-length".len() + 1 + 4 + "x-cache".len() + 3 + 4) as u64;
        assert_eq!(o.bytes, head + 5);
        assert_eq!(o.cache.tally, crate::cache::Tally::Hit);
        assert_eq!(c.open(), 0);
    }
}

/// The server's SETTINGS_MAX_CONCURRENT_STREAMS bounds the streams open; the
/// settings are acknowledged, a PING answered with its payload.
#[test]
fn settings_ping_and_the_stream_limit() {
    let mut c = Conn::new(false);
    assert!(c.out.starts_with(frame::PREFACE));
    c.out.clear();
    let mut s = Vec::new();
    frame::write_settings(&mut s, &[(frame::SETTINGS_MAX_CONCURRENT_STREAMS, 2)]);
    s.extend(server(frame::PING, 0, 0, b"pingpong"));
    feed(&mut c, &s);
    let f = frames(&c.out);
    assert_eq!((f[0].0.kind, f[0].0.flags), (frame::SETTINGS, frame::ACK));
    assert_eq!(
        (f[1].0.kind, f[1].0.flags, &f[1].1[..]),
        (frame::PING, frame::ACK, &b"pingpong"[..])
    );
    let r = request(http::Method::GET, b"", &[]);
    c.start(&r);
    assert!(c.has_room());
    let j = c.start(&r);
    assert!(!c.has_room());
    feed(&mut c, &response(3, "404", b"nope!"));
    assert!(c.has_room());
    let d = c.take(j).unwrap();
    assert_eq!(d.outcome.error, Some(ErrorKind::Http4xx));
}

/// GOAWAY: streams after its last id were not processed (retried elsewhere),
/// earlier ones complete, no new stream starts (RFC 9113 §6.8); RST_STREAM fails
/// only its stream, REFUSED_STREAM may be retried (§8.7).
#[test]
fn goaway_and_rst_stream() {
    let r = request(http::Method::GET, b"", &[]);
    let mut c = settled(&[]);
    let e: Vec<usize> = (0..4).map(|_| c.start(&r)).collect();
    let mut b = server(frame::RST_STREAM, 0, 1, &2u32.to_be_bytes());
    b.extend(server(
        frame::RST_STREAM,
        0,
        3,
        &frame::REFUSED_STREAM.to_be_bytes(),
    ));
    let mut ga = 5u32.to_be_bytes().to_vec();
    ga.extend(0u32.to_be_bytes());
    b.extend(server(frame::GOAWAY, 0, 0, &ga));
    feed(&mut c, &b);
    let kind = |d: Done| (d.outcome.error, d.retry);
    assert_eq!(kind(c.take(e[0]).unwrap()), (Some(ErrorKind::Reset), false));
    assert_eq!(kind(c.take(e[1]).unwrap()), (Some(ErrorKind::Reset), true));
    assert!(c.take(e[2]).is_none());
    assert_eq!(kind(c.take(e[3]).unwrap()), (Some(ErrorKind::Reset), true));
    assert!(!c.usable());
    feed(&mut c, &response(5, "200", b"hello"));
    assert_eq!(kind(c.take(e[2]).unwrap()), (None, false));
}

/// The end of the stream fails open streams: one with no response byte yet may be
/// retried, one cut in its body is a reset.
#[test]
fn end_of_stream() {
    let r = request(http::Method::GET, b"", &[]);
    let mut c = settled(&[]);
    let (i, j) = (c.start(&r), c.start(&r));
    let block = head_block("200", &[]);
    feed(
        &mut c,
        &server(frame::HEADERS, frame::END_HEADERS, 3, &block),
    );
    c.closed(None);
    assert_eq!(c.dead(), Some(ErrorKind::Reset));
    assert!(c.take(i).unwrap().retry);
    let d = c.take(j).unwrap();
    assert_eq!(
        (d.outcome.error, d.retry, d.outcome.status),
        (Some(ErrorKind::Reset), false, 200)
    );
}

/// Connection errors fail every open stream as `protocol` and send GOAWAY: DATA
/// on stream 0, HEADERS on a stream never opened, a frame over the size
/// announced, a broken header block, CONTINUATION out of place.
#[test]
fn protocol_errors() {
    let r = request(http::Method::GET, b"", &[]);
    let big = vec![0u8; frame::DEFAULT_MAX_FRAME + 1];
    for bad in [
        server(frame::DATA, 0, 0, b"x"),
        server(frame::HEADERS, frame::END_HEADERS, 7, &[0x88]),
        server(frame::HEADERS, frame::END_HEADERS, 2, &[0x88]),
        server(frame::DATA, 0, 1, &big),
        server(frame::HEADERS, frame::END_HEADERS, 1, &[0x80]),
        server(frame::CONTINUATION, frame::END_HEADERS, 1, &[0x88]),
        server(
            frame::PUSH_PROMISE,
            frame::END_HEADERS,
            1,
            &[0, 0, 0, 2, 0x88],
        ),
        server(frame::SETTINGS, 0, 0, &[0, 4, 0xff, 0xff, 0xff, 0xff]),
        server(frame::WINDOW_UPDATE, 0, 0, &[0, 0, 0, 0]),
    ] {
        let mut c = settled(&[]);
        let i = c.start(&r);
        c.out.clear();
        assert_eq!(c.recv(&bad), bad.len());
        assert_eq!(c.dead(), Some(ErrorKind::Protocol), "{bad:?}");
        let d = c.take(i).unwrap();
        assert_eq!(
            (d.outcome.error, d.retry),
            (Some(ErrorKind::Protocol), false)
        );
        assert_eq!(frames(&c.out)[0].0.kind, frame::GOAWAY);
    }
    // DATA before the response head is a stream error: only that stream fails.
    let mut c = settled(&[]);
    let (i, j) = (c.start(&r), c.start(&r));
    feed(&mut c, &server(frame::DATA, 0, 1, b"x"));
    assert_eq!(c.take(i).unwrap().outcome.error, Some(ErrorKind::Protocol));
    assert!(c.take(j).is_none() && c.dead().is_none());
}

/// Interim 1xx heads are skipped, trailers end the stream, a head split over
/// CONTINUATION frames is joined, and a header block for a stream given up on is
/// still decoded (its table entry is used by the next block).
#[test]
fn interim_trailers_continuation_and_the_table() {
    let r = request(http::Method::GET, b"", &[]);
    let mut c = settled(&[]);
    let i = c.start(&r);
    let gone = c.start(&r);
    c.cancel(gone);
    let f = frames(&c.out);
    assert_eq!(
        (f.last().unwrap().0.kind, f.last().unwrap().0.stream),
        (frame::RST_STREAM, 3)
    );
    // Stream 3 (cancelled) gets a head that indexes `x-cache: HIT`.
    let mut idx = vec![0x88];
    idx.push(0x40);
    hpack::put_string(&mut idx, b"x-cache");
    hpack::put_string(&mut idx, b"HIT");
    let mut b = server(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        3,
        &idx,
    );
    b.extend(server(
        frame::HEADERS,
        frame::END_HEADERS,
        1,
        &head_block("100", &[]),
    ));
    // Stream 1's final head refers to it (index 62), across a CONTINUATION.
    b.extend(server(frame::HEADERS, 0, 1, &[0x88]));
    b.extend(server(frame::CONTINUATION, frame::END_HEADERS, 1, &[0xbe]));
    b.extend(server(frame::DATA, 0, 1, b"abc"));
    b.extend(server(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        1,
        &head_block_trailer(),
    ));
    feed(&mut c, &b);
    let d = c.take(i).unwrap();
    assert_eq!((d.outcome.status, d.outcome.error), (200, None));
    assert_eq!(d.outcome.cache.tally, crate::cache::Tally::Hit);
    assert_eq!(d.outcome.bytes, ("x-cache".len() + 3 + 4 + 3) as u64);
}

fn head_block_trailer() -> Vec<u8> {
    let mut b = Vec::new();
    hpack::put_field(&mut b, "grpc-status", b"0");
    b
}

/// The receive windows are replenished in big batches: no WINDOW_UPDATE until half
/// of the 2^30 − 1 window is used.
#[test]
fn window_updates_come_in_batches() {
    let r = request(http::Method::GET, b"", &[]);
    let mut c = settled(&[]);
    let i = c.start(&r);
    c.out.clear();
    feed(
        &mut c,
        &server(frame::HEADERS, frame::END_HEADERS, 1, &[0x88]),
    );
    let chunk = vec![0u8; frame::DEFAULT_MAX_FRAME];
    let data = server(frame::DATA, 0, 1, &chunk);
    for _ in 0..1000 {
        feed(&mut c, &data);
    }
    assert!(c.out.is_empty());
    for _ in 0..33_000 {
        feed(&mut c, &data);
    }
    let f = frames(&c.out);
    assert_eq!(
        f.len(),
        2,
        "one update for the connection, one for the stream"
    );
    assert!(f.iter().all(|(h, _)| h.kind == frame::WINDOW_UPDATE));
    feed(&mut c, &server(frame::DATA, frame::END_STREAM, 1, b""));
    assert_eq!(
        c.take(i).unwrap().outcome.bytes,
        34_000 * frame::DEFAULT_MAX_FRAME as u64
    );
}

/// Random bytes, and valid traffic with random bytes flipped, never panic: the
/// connection either reads them or ends with an error, and every stream ends.
#[test]
fn garbage_never_panics() {
    let r = request(http::Method::POST, b"body", &[]);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(21);
    let mut valid = Vec::new();
    frame::write_settings(&mut valid, &[(frame::SETTINGS_MAX_CONCURRENT_STREAMS, 9)]);
    valid.extend(response(1, "200", b"hello"));
    valid.extend(server(frame::PING, 0, 0, b"12345678"));
    valid.extend(response(3, "503", b"oops!"));
    for round in 0..20_000 {
        let bytes: Vec<u8> = if round % 2 == 0 {
            let n = rng.random_range(0..200);
            (0..n).map(|_| rng.random()).collect()
        } else {
            let mut v = valid.clone();
            for _ in 0..rng.random_range(1..4) {
                let at = rng.random_range(0..v.len());
                v[at] = rng.random();
            }
            v
        };
        let mut c = Conn::new(false);
        let e: Vec<usize> = (0..3).map(|_| c.start(&r)).collect();
        let mut buf = bytes.clone();
        while !buf.is_empty() {
            let used = c.recv(&buf);
            if used == 0 {
                break;
            }
            buf.drain(..used);
        }
        c.closed(None);
        for i in e {
            assert!(c.take(i).is_some());
        }
    }
}

/// A head equal to the last one is decoded again when it changed the HPACK table
/// (here it adds an entry each time: the third head refers to the older of the
/// two), and reused when it did not.
#[test]
fn repeated_heads_keep_the_table_right() {
    let r = request(http::Method::GET, b"", &[]);
    let mut c = settled(&[]);
    let e: Vec<usize> = (0..4).map(|_| c.start(&r)).collect();
    let mut idx = vec![0x88, 0x40];
    hpack::put_string(&mut idx, b"x-cache");
    hpack::put_string(&mut idx, b"HIT");
    let end = frame::END_HEADERS | frame::END_STREAM;
    let mut b = server(frame::HEADERS, end, 1, &idx);
    b.extend(server(frame::HEADERS, end, 3, &idx));
    b.extend(server(frame::HEADERS, end, 5, &[0x88, 0xbf]));
    b.extend(server(frame::HEADERS, end, 7, &[0x88, 0xbf]));
    feed(&mut c, &b);
    assert!(c.dead().is_none());
    for i in e {
        let d = c.take(i).unwrap();
        assert_eq!((d.outcome.status, d.outcome.error), (200, None));
        assert_eq!(d.outcome.cache.tally, crate::cache::Tally::Hit);
        assert_eq!(d.outcome.bytes, ("x-cache".len() + 3 + 4) as u64);
    }
}

/// Issue 28 item 3: a server that floods PING (or SETTINGS) and reads nothing made
/// the client queue an ACK for each, without end (2.0–2.7 GB in 25 s). At most
/// MAX_PENDING_ACKS answers wait unwritten; the next ends the connection with
/// GOAWAY ENHANCE_YOUR_CALM and its streams fail as protocol errors.
#[test]
fn control_frame_floods_are_bounded() {
    use super::conn::MAX_PENDING_ACKS;
    let r = request(http::Method::GET, b"", &[]);
    for flood in [
        server(frame::PING, 0, 0, b"pingpong"),
        server(frame::SETTINGS, 0, 0, &[]),
    ] {
        let mut c = settled(&[]);
        let e = c.start(&r);
        c.flushed();
        let many: Vec<u8> = flood.repeat(10_000);
        feed(&mut c, &many);
        assert_eq!(c.dead(), Some(ErrorKind::Protocol));
        let f = frames(&c.out);
        assert_eq!(f.len(), MAX_PENDING_ACKS as usize + 1, "ACKs then GOAWAY");
        let (h, p) = f.last().unwrap();
        assert_eq!(h.kind, frame::GOAWAY);
        assert_eq!(frame::u32_at(p, 4), frame::ENHANCE_YOUR_CALM);
        assert_eq!(c.take(e).unwrap().outcome.error, Some(ErrorKind::Protocol));
    }
    // A server whose ACKs are written (the socket takes them) may ping on.
    let mut c = settled(&[]);
    let ping = server(frame::PING, 0, 0, b"pingpong");
    for _ in 0..20 {
        feed(&mut c, &ping.repeat(MAX_PENDING_ACKS as usize / 2));
        c.flushed();
    }
    assert_eq!(c.dead(), None);
}

/// Issue 28 item 3: an endless run of empty CONTINUATION frames (CVE-2024-27316)
/// ends the connection with ENHANCE_YOUR_CALM; a head in a few frames is fine.
#[test]
fn continuation_floods_end_the_connection() {
    let r = request(http::Method::GET, b"", &[]);
    let mut c = settled(&[]);
    let e = c.start(&r);
    let block = head_block("200", &[("server", "x")]);
    let mut b = server(frame::HEADERS, frame::END_STREAM, 1, &block[..2]);
    b.extend(server(frame::CONTINUATION, 0, 1, &block[2..4]));
    b.extend(server(
        frame::CONTINUATION,
        frame::END_HEADERS,
        1,
        &block[4..],
    ));
    feed(&mut c, &b);
    assert_eq!(c.take(e).unwrap().outcome.status, 200);
    let e = c.start(&r);
    c.flushed();
    let mut b = server(frame::HEADERS, 0, 3, &block);
    b.extend(server(frame::CONTINUATION, 0, 3, &[]).repeat(1000));
    feed(&mut c, &b);
    assert_eq!(c.dead(), Some(ErrorKind::Protocol));
    let f = frames(&c.out);
    assert_eq!(
        frame::u32_at(&f.last().unwrap().1, 4),
        frame::ENHANCE_YOUR_CALM
    );
    assert_eq!(c.take(e).unwrap().outcome.error, Some(ErrorKind::Protocol));
}

/// Issue 28 item 3, the rest of the review: WINDOW_UPDATE, RST_STREAM, PRIORITY,
/// GOAWAY and unknown frames queue nothing however many come; a stream's window
/// overflowing resets that stream only.
#[test]
fn other_frame_floods_queue_nothing() {
    let r = request(http::Method::GET, b"", &[]);
    let mut c = settled(&[]);
    c.start(&r);
    let e = c.start(&r);
    c.flushed();
    let mut b = Vec::new();
    b.extend(server(frame::WINDOW_UPDATE, 0, 0, &1u32.to_be_bytes()).repeat(1000));
    b.extend(server(frame::WINDOW_UPDATE, 0, 3, &1u32.to_be_bytes()).repeat(1000));
    b.extend(server(frame::WINDOW_UPDATE, 0, 9, &1u32.to_be_bytes()).repeat(1000));
    b.extend(server(frame::RST_STREAM, 0, 1, &0u32.to_be_bytes()).repeat(1000));
    b.extend(server(frame::PRIORITY, 0, 3, &[0, 0, 0, 0, 16]).repeat(1000));
    b.extend(server(0xfa, 0, 0, b"unknown").repeat(1000));
    b.extend(server(frame::GOAWAY, 0, 0, &[0, 0, 0, 3, 0, 0, 0, 0]).repeat(1000));
    feed(&mut c, &b);
    assert_eq!(c.dead(), None);
    assert!(c.out.is_empty(), "{} bytes queued", c.out.len());
    assert!(!c.is_done(e));
}

/// Issue 28 item 10: an invalid `content-length` fails its stream as a protocol
/// error (the h2 crate's rule in the probe, RFC 9113 §8.1.1); a valid one passes.
#[test]
fn invalid_content_length_fails_the_stream() {
    let r = request(http::Method::GET, b"", &[]);
    let mut c = settled(&[]);
    let bad = c.start(&r);
    let good = c.start(&r);
    let mut b = Vec::new();
    let block = head_block("200", &[("content-length", "-1")]);
    b.extend(server(frame::HEADERS, frame::END_HEADERS, 1, &block));
    b.extend(server(frame::DATA, frame::END_STREAM, 1, b"hello"));
    let block = head_block("200", &[("content-length", "5")]);
    b.extend(server(frame::HEADERS, frame::END_HEADERS, 3, &block));
    b.extend(server(frame::DATA, frame::END_STREAM, 3, b"hello"));
    feed(&mut c, &b);
    assert_eq!(
        c.take(bad).unwrap().outcome.error,
        Some(ErrorKind::Protocol)
    );
    let ok = c.take(good).unwrap().outcome;
    assert_eq!((ok.status, ok.error), (200, None));
}

/// A scenario's stream keeps what its checks read (issue 34): the final head's
/// named fields and `set-cookie` (an interim 103's and the trailers' left out), its
/// body across DATA frames, and a field sent as an index into the dynamic table; a stream beside it
/// that keeps nothing is read as ever, and each gets back only its own.
#[test]
fn a_stream_keeps_what_its_checks_read() {
    use crate::load::script::{Capture, Kept};
    use std::sync::Arc;
    let capture = Arc::new(Capture {
        headers: vec!["x-user".into()],
        set_cookie: true,
        body: true,
    });
    let r = request(http::Method::GET, b"", &[]);
    let mut c = settled(&[]);
    let (one, plain, five) = (c.start(&r), c.start(&r), c.start(&r));
    c.keep(one, Box::new(Kept::new(capture.clone())));
    c.keep(five, Box::new(Kept::new(capture)));
    // :status 200, x-user: kim (indexed: the table's entry 62), two cookies.
    let mut block = vec![0x88, 0x40];
    hpack::put_string(&mut block, b"x-user");
    hpack::put_string(&mut block, b"kim");
    hpack::put_field(&mut block, "set-cookie", b"a=1");
    hpack::put_field(&mut block, "set-cookie", b"b=2");
    let interim = head_block("103", &[("x-user", "interim"), ("link", "</s.css>")]);
    let mut b = server(frame::HEADERS, frame::END_HEADERS, 1, &interim);
    b.extend(server(frame::HEADERS, frame::END_HEADERS, 1, &block));
    b.extend(server(frame::DATA, 0, 1, b"hel"));
    b.extend(server(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        3,
        &block,
    ));
    b.extend(server(frame::DATA, 0, 1, b"lo"));
    // Trailers end stream 1: not kept (HTTP/1.1 and HTTP/3 keep none).
    let mut trailer = Vec::new();
    hpack::put_field(&mut trailer, "x-user", b"trailer");
    b.extend(server(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        1,
        &trailer,
    ));
    b.extend(server(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        5,
        &[0x88, 0xbe],
    ));
    feed(&mut c, &b);
    assert!(c.dead().is_none());
    let d = c.take(one).unwrap();
    assert_eq!(
        (d.outcome.status, d.outcome.bytes as usize > 5),
        (200, true)
    );
    let k = c.kept(one).unwrap();
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    };
    assert_eq!(
        k.headers,
        pairs(&[
            ("x-user", "kim"),
            ("set-cookie", "a=1"),
            ("set-cookie", "b=2")
        ])
    );
    assert_eq!(k.body, b"hello");
    let d = c.take(plain).unwrap();
    assert_eq!(d.outcome.status, 200);
    assert!(c.kept(plain).is_none());
    let d = c.take(five).unwrap();
    assert_eq!(d.outcome.status, 200);
    let k = c.kept(five).unwrap();
    assert_eq!(k.headers, pairs(&[("x-user", "kim")]));
    assert!(k.body.is_empty());
}
