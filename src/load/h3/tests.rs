//! The HTTP/3 request layer's parts, sans I/O: QPACK against RFC 9204's examples
//! and rules, a request stream's framing (RFC 9114 §4.1, §7), the control stream
//! (§6.2.1, §7.2). Against real servers: `tests/http3_load.rs` and the load suite.

use std::sync::Arc;

use super::control::Control;
use super::frame::*;
use super::qpack::{self, Decoder, STATIC};
use crate::load::fields::Sink;
use crate::load::script::{Capture, Kept};

#[derive(Default)]
struct All(Vec<(String, String)>);

impl Sink for All {
    fn wants(&self, _: &[u8]) -> bool {
        true
    }
    fn field(&mut self, name: &[u8], value: &[u8], _: usize) {
        self.0.push((
            String::from_utf8_lossy(name).into_owned(),
            String::from_utf8_lossy(value).into_owned(),
        ));
    }
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// RFC 9204 Appendix A, spot checks (indexes from 0).
#[test]
fn static_table_is_rfc_9204s() {
    assert_eq!(STATIC[0], (":authority", ""));
    assert_eq!(STATIC[17], (":method", "GET"));
    assert_eq!(STATIC[25], (":status", "200"));
    assert_eq!(STATIC[31], ("accept-encoding", "gzip, deflate, br"));
    assert_eq!(STATIC[63], (":status", "100"));
    assert_eq!(STATIC[95], ("user-agent", ""));
    assert_eq!(STATIC[98], ("x-frame-options", "sameorigin"));
}

/// RFC 9204 Appendix B.1: `:path: /index.html` as a literal with a static name
/// reference, prefix 0 0 (no dynamic table).
#[test]
fn encodes_appendix_b1() {
    let got = qpack::encode([(&b":path"[..], &b"/index.html"[..])]);
    assert_eq!(got, hex("0000 510b 2f69 6e64 6578 2e68 746d 6c"));
    let mut all = All::default();
    Decoder::default().decode(&got, &mut all).unwrap();
    assert_eq!(all.0, [(":path".into(), "/index.html".into())]);
}

/// Exact static matches are one octet (§4.5.2, indexes past 63 with the integer's
/// continuation); other names literal (§4.5.6); all decode back.
#[test]
fn encodes_and_decodes_a_request() {
    let fields: Vec<(&[u8], &[u8])> = vec![
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"example.com"),
        (b":path", b"/"),
        (b"user-agent", b"latscope"),
        (b"x-frame-options", b"sameorigin"),
        (b"x-custom", b"a value"),
    ];
    let got = qpack::encode(fields.iter().copied());
    assert_eq!(&got[..4], &[0, 0, 0xc0 | 17, 0xc0 | 23]);
    // Index 98: 0xff (63) then 35.
    assert!(got.windows(2).any(|w| w == [0xff, 35]), "{got:x?}");
    let mut all = All::default();
    Decoder::default().decode(&got, &mut all).unwrap();
    let back: Vec<(&[u8], &[u8])> = all
        .0
        .iter()
        .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
        .collect();
    assert_eq!(back, fields);
}

/// Huffman names and values decode (RFC 7541's code, §4.1.2); a value not wanted
/// is only counted.
#[test]
fn decodes_huffman_and_skips_unwanted_values() {
    let h = crate::load::h2::huffman::encode(b"custom-value");
    let n = crate::load::h2::huffman::encode(b"x-custom");
    let mut b = vec![0, 0, 0x28 | n.len() as u8];
    b.extend(&n);
    b.push(0x80 | h.len() as u8);
    b.extend(&h);
    let mut all = All::default();
    Decoder::default().decode(&b, &mut all).unwrap();
    assert_eq!(all.0, [("x-custom".into(), "custom-value".into())]);

    struct Lengths(Vec<(Vec<u8>, usize)>);
    impl Sink for Lengths {
        fn wants(&self, _: &[u8]) -> bool {
            false
        }
        fn field(&mut self, name: &[u8], value: &[u8], len: usize) {
            assert!(value.is_empty());
            self.0.push((name.to_vec(), len));
        }
    }
    let mut l = Lengths(Vec::new());
    Decoder::default().decode(&b, &mut l).unwrap();
    assert_eq!(l.0, [(b"x-custom".to_vec(), 12)]);
}

/// §2.2.3 and §4.5: with no dynamic table, a Required Insert Count other than 0,
/// a dynamic index or a post-base reference cannot be decoded; nor can a string
/// longer than the section or bad Huffman.
#[test]
fn refuses_the_dynamic_table_and_malformed_sections() {
    for bad in [
        &[0x01, 0x00, 0xd1][..],         // Required Insert Count 1
        &[0x00, 0x00, 0x80],             // indexed, dynamic
        &[0x00, 0x00, 0x40, 0x00],       // name reference, dynamic
        &[0x00, 0x00, 0x10],             // indexed post-base
        &[0x00, 0x00, 0x00, 0x00],       // literal post-base name reference
        &[0x00, 0x00, 0xff, 0x7f],       // static index 190
        &[0x00, 0x00, 0x51, 0x05, b'a'], // value cut short
        &[0x00, 0x00, 0x51, 0x81, 0xff], // EOS in Huffman
        &[0x00],                         // no Delta Base
    ] {
        let mut all = All::default();
        assert!(
            Decoder::default().decode(bad, &mut all).is_err(),
            "{bad:x?}"
        );
    }
}

/// A response's frames: HEADERS (`:status`, content-length, x-cache) then DATA.
fn response(status: &str, body: &[u8], extra: &[u8]) -> Vec<u8> {
    let section = qpack::encode([
        (&b":status"[..], status.as_bytes()),
        (b"content-length", body.len().to_string().as_bytes()),
        (b"x-cache", b"HIT"),
    ]);
    let mut out = Vec::new();
    put_frame(&mut out, HEADERS, &section);
    out.extend(extra);
    put_frame(&mut out, DATA, body);
    out
}

fn feed_all(data: &[u8], piece: usize) -> Result<crate::load::recorder::Outcome, H3Error> {
    let mut r = Response::new(false, false);
    for c in data.chunks(piece) {
        r.feed(c, None)?;
    }
    r.finish()
}

/// §4.1: a head and a body, fed whole and in pieces down to one octet: the same
/// status, bytes (body and head fields as HTTP/1.1 counts them) and cache verdict.
/// Unknown frame types (here a reserved grease type, §7.2.8) are skipped.
#[test]
fn reads_a_response_in_any_pieces() {
    let mut grease = Vec::new();
    put_frame(&mut grease, 0x21, b"xyz");
    let data = response("200", b"hello", &grease);
    for piece in [1, 2, 3, 7, data.len()] {
        let o = feed_all(&data, piece).unwrap();
        assert_eq!(o.status, 200);
        let head = ("content-length".len() + 1 + 4 + "x-cache".len() + 3 + 4) as u64;
        assert_eq!(o.bytes, 5 + head, "piece {piece}");
        assert_eq!(o.cache.tally, crate::cache::Tally::Hit);
        assert!(o.error.is_none());
    }
    let o = feed_all(&response("503", b"", &[]), 1).unwrap();
    assert_eq!(o.error, Some(crate::load::recorder::ErrorKind::Http5xx));
}

/// §4.1: interim (1xx) heads are skipped, and a scenario keeps the final head's
/// fields only; trailers after the body end it; a body past the trailers is the
/// connection's H3_FRAME_UNEXPECTED (§4.1, frame sequence).
#[test]
fn interim_heads_trailers_and_kept_fields() {
    let interim = qpack::encode([(&b":status"[..], &b"103"[..]), (b"x-cache", b"MISS")]);
    let mut data = Vec::new();
    put_frame(&mut data, HEADERS, &interim);
    data.extend(response("200", b"body!", &[]));
    let trailer = qpack::encode([(&b"x-trailer"[..], &b"1"[..])]);
    put_frame(&mut data, HEADERS, &trailer);
    let capture = Arc::new(Capture {
        headers: vec!["x-cache".into(), "x-trailer".into()],
        set_cookie: false,
        body: true,
    });
    let mut kept = Kept::new(capture);
    let mut r = Response::new(false, false);
    for c in data.chunks(3) {
        r.feed(c, Some(&mut kept)).unwrap();
    }
    let o = r.finish().unwrap();
    assert_eq!(o.status, 200);
    assert_eq!(kept.headers, [("x-cache".to_string(), "HIT".to_string())]);
    assert_eq!(kept.body, b"body!");

    let mut more = data.clone();
    put_frame(&mut more, DATA, b"x");
    assert_eq!(
        feed_all(&more, 1000).unwrap_err(),
        H3Error::conn(H3_FRAME_UNEXPECTED)
    );
}

/// §7.1, §4.1.2, §7.2: what ends a stream or the connection in error.
#[test]
fn malformed_responses() {
    let ok = response("200", b"hello", &[]);
    // Cut inside the body: a truncated frame at the stream's end.
    assert_eq!(
        feed_all(&ok[..ok.len() - 1], 4).unwrap_err(),
        H3Error::conn(H3_FRAME_ERROR)
    );
    // Cut inside a frame head.
    let mut cut = ok.clone();
    cut.push(0x40);
    assert_eq!(
        feed_all(&cut, 1).unwrap_err(),
        H3Error::conn(H3_FRAME_ERROR)
    );
    // DATA before any head.
    let mut early = Vec::new();
    put_frame(&mut early, DATA, &[0]);
    assert_eq!(
        feed_all(&early, 1).unwrap_err(),
        H3Error::conn(H3_FRAME_UNEXPECTED)
    );
    // No head at all; only an interim one.
    assert_eq!(
        feed_all(&[], 1).unwrap_err(),
        H3Error::stream(H3_MESSAGE_ERROR)
    );
    let interim = qpack::encode([(&b":status"[..], &b"103"[..])]);
    let mut d = Vec::new();
    put_frame(&mut d, HEADERS, &interim);
    assert_eq!(
        feed_all(&d, 1).unwrap_err(),
        H3Error::stream(H3_MESSAGE_ERROR)
    );
    // Control-stream frames, HTTP/2's types, and pushes never allowed.
    for (kind, code) in [
        (SETTINGS, H3_FRAME_UNEXPECTED),
        (GOAWAY, H3_FRAME_UNEXPECTED),
        (0x2, H3_FRAME_UNEXPECTED),
        (PUSH_PROMISE, H3_ID_ERROR),
    ] {
        let mut d = Vec::new();
        put_frame(&mut d, kind, &[0]);
        assert_eq!(feed_all(&d, 1).unwrap_err(), H3Error::conn(code), "{kind}");
    }
    // A section the decoder refuses; an empty HEADERS frame.
    let mut d = Vec::new();
    put_frame(&mut d, HEADERS, &[0, 0, 0x80]);
    assert_eq!(
        feed_all(&d, 2).unwrap_err(),
        H3Error::conn(QPACK_DECOMPRESSION_FAILED)
    );
    let mut d = Vec::new();
    put_frame_head(&mut d, HEADERS, 0);
    assert_eq!(
        feed_all(&d, 2).unwrap_err(),
        H3Error::conn(QPACK_DECOMPRESSION_FAILED)
    );
    // A head without :status, a bad status, a bad content-length, an uppercase
    // name, CR or NUL in a value, a request's pseudo-field, :status after a
    // regular field (§4.2, §4.3).
    for fields in [
        vec![(&b"x-a"[..], &b"1"[..])],
        vec![(b":status", b"20")],
        vec![(b":status", b"200"), (b"content-length", b"5, 6")],
        vec![(b":status", b"200"), (b"X-Cache", b"HIT")],
        vec![(b":status", b"200"), (b"x-a", b"1\r\nx-b: 2")],
        vec![(b":status", b"200"), (b"x-a", b"\0")],
        vec![(b":status", b"200"), (b":path", b"/")],
        vec![(b"x-a", b"1"), (b":status", b"200")],
    ] {
        let s = qpack::encode(fields);
        let mut d = Vec::new();
        put_frame(&mut d, HEADERS, &s);
        assert_eq!(
            feed_all(&d, 5).unwrap_err(),
            H3Error::stream(H3_MESSAGE_ERROR)
        );
    }
    // A HEADERS frame over the announced limit, refused from its head.
    let mut d = Vec::new();
    put_frame_head(&mut d, HEADERS, MAX_SECTION + 1);
    assert_eq!(
        feed_all(&d, 100).unwrap_err(),
        H3Error::stream(H3_EXCESSIVE_LOAD)
    );
}

/// A big unknown frame and a big body pass without being buffered.
#[test]
fn large_frames_stream_through() {
    let body = vec![b'b'; 1 << 20];
    let mut unknown = Vec::new();
    put_frame_head(&mut unknown, 0x1f * 7 + 0x21, 1 << 20);
    unknown.extend(vec![0u8; 1 << 20]);
    let data = response("200", &body, &unknown);
    let mut r = Response::new(false, false);
    for c in data.chunks(1200) {
        r.feed(c, None).unwrap();
        assert!(r.buffered() == 0);
    }
    assert_eq!(r.finish().unwrap().status, 200);
}

fn settings(pairs: &[(u64, u64)]) -> Vec<u8> {
    let mut p = Vec::new();
    for &(id, v) in pairs {
        put_varint(&mut p, id);
        put_varint(&mut p, v);
    }
    let mut f = Vec::new();
    put_frame(&mut f, SETTINGS, &p);
    f
}

fn goaway(id: u64) -> Vec<u8> {
    let mut p = Vec::new();
    put_varint(&mut p, id);
    let mut f = Vec::new();
    put_frame(&mut f, GOAWAY, &p);
    f
}

fn control(data: &[u8], piece: usize) -> Result<Control, H3Error> {
    let mut c = Control::default();
    for p in data.chunks(piece) {
        c.feed(p)?;
    }
    Ok(c)
}

/// §6.2.1, §7.2.4, §5.2: SETTINGS first and once; GOAWAY read in any pieces and
/// never increasing; unknown frames (even large ones) skipped.
#[test]
fn control_stream() {
    let mut data = settings(&[(0x6, 16384), (0x1, 0), (0x21, 7)]);
    let mut big = Vec::new();
    put_frame_head(&mut big, 0x21, 100_000);
    big.extend(vec![0; 100_000]);
    data.extend(&big);
    data.extend(goaway(8));
    for piece in [1, 5, 1000, data.len()] {
        let c = control(&data, piece).unwrap();
        assert_eq!(c.goaway, Some(8), "piece {piece}");
        assert!(c.buffered() < 16);
    }
    let mut down = data.clone();
    down.extend(goaway(4));
    assert_eq!(control(&down, 3).unwrap().goaway, Some(4));
    let mut up = data.clone();
    up.extend(goaway(12));
    assert_eq!(control(&up, 3).unwrap_err(), H3Error::conn(H3_ID_ERROR));
    let mut twice = data.clone();
    twice.extend(settings(&[]));
    assert_eq!(
        control(&twice, 7).unwrap_err(),
        H3Error::conn(H3_FRAME_UNEXPECTED)
    );

    assert_eq!(
        control(&goaway(0), 1).unwrap_err(),
        H3Error::conn(H3_MISSING_SETTINGS)
    );
    for bad in [&[(0x6, 1), (0x6, 2)][..], &[(0x2, 0)], &[(0x5, 0)]] {
        assert_eq!(
            control(&settings(bad), 2).unwrap_err(),
            H3Error::conn(H3_SETTINGS_ERROR),
            "{bad:?}"
        );
    }
    let mut huge = Vec::new();
    put_frame_head(&mut huge, SETTINGS, 1 << 20);
    assert_eq!(
        control(&huge, 4).unwrap_err(),
        H3Error::conn(H3_EXCESSIVE_LOAD)
    );
    let c = control(&settings(&[(SETTINGS_MAX_FIELD_SECTION_SIZE, 9000)]), 1).unwrap();
    assert_eq!(c.max_section, Some(9000));
    let mut data = settings(&[]);
    let mut push = Vec::new();
    put_frame(&mut push, PUSH_PROMISE, &[0]);
    data.extend(push);
    assert_eq!(
        control(&data, 4).unwrap_err(),
        H3Error::conn(H3_FRAME_UNEXPECTED)
    );
    let mut data = settings(&[]);
    let mut h = Vec::new();
    put_frame_head(&mut h, HEADERS, 0);
    data.extend(h);
    assert_eq!(
        control(&data, 4).unwrap_err(),
        H3Error::conn(H3_FRAME_UNEXPECTED)
    );
}

/// RFC 9000 §16 (and its Appendix A.1 examples).
#[test]
fn varints() {
    for (v, bytes) in [
        (37u64, "25"),
        (15293, "7bbd"),
        (494878333, "9d7f3e7d"),
        (151288809941952652, "c2197c5eff14e88c"),
    ] {
        let mut out = Vec::new();
        put_varint(&mut out, v);
        assert_eq!(out, hex(bytes));
        assert_eq!(varint(&out), Some((v, out.len())));
        assert_eq!(varint(&out[..out.len() - 1]), None);
    }
}

/// The fuzz targets' own seeds pass through them.
#[test]
fn fuzz_entry_points_take_their_seeds() {
    for seed in crate::fuzzing::seeds("h3_response") {
        super::fuzz_response(&seed);
    }
    for seed in crate::fuzzing::seeds("h3_control") {
        super::fuzz_control(&seed);
    }
    for seed in crate::fuzzing::seeds("qpack") {
        super::fuzz_qpack(&seed);
    }
}

/// §4.1.2: the DATA frames' lengths must add up to Content-Length (a short body
/// is caught at the end, a long one at the frame that passes it); a response to
/// HEAD, a 204 and a 304 carry no content whatever their Content-Length says
/// (RFC 9110 §6.4.1).
#[test]
fn content_length_against_the_data() {
    let head = |status: &str, length: &str| {
        let s = qpack::encode([
            (&b":status"[..], status.as_bytes()),
            (b"content-length", length.as_bytes()),
        ]);
        let mut d = Vec::new();
        put_frame(&mut d, HEADERS, &s);
        d
    };
    let data = |body: &[u8]| {
        let mut d = Vec::new();
        put_frame(&mut d, DATA, body);
        d
    };
    let run = |bytes: &[u8], is_head: bool| {
        let mut r = Response::new(false, is_head);
        for c in bytes.chunks(3) {
            r.feed(c, None)?;
        }
        r.finish()
    };
    let msg = H3Error::stream(H3_MESSAGE_ERROR);
    // Two DATA frames adding up: fine; short; long.
    let ok = [head("200", "6"), data(b"abc"), data(b"def")].concat();
    assert_eq!(run(&ok, false).unwrap().status, 200);
    let short = [head("200", "6"), data(b"abc")].concat();
    assert_eq!(run(&short, false).unwrap_err(), msg);
    let long = [head("200", "2"), data(b"abc")].concat();
    assert_eq!(run(&long, false).unwrap_err(), msg);
    // No content: HEAD with the GET's length, 204, 304; a body there is malformed.
    assert_eq!(run(&head("200", "1000"), true).unwrap().status, 200);
    assert_eq!(run(&head("304", "1000"), false).unwrap().status, 304);
    assert_eq!(run(&head("204", "0"), false).unwrap().status, 204);
    let body_to_head = [head("200", "3"), data(b"abc")].concat();
    assert_eq!(run(&body_to_head, true).unwrap_err(), msg);
}
