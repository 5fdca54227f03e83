//! Fuzzing of the hand-written parsers of bytes from the network or from a file
//! (issue 28): one entry point per parser — `load/h2` framing and connection state,
//! HPACK, Huffman, `load/http1.rs` response framing, `load/h3` response framing, control stream and QPACK, `net/svcb.rs` DNS answers,
//! `watch/text.rs` exposition text, the remote-write body, the export file and its
//! V2 histograms. Each takes arbitrary bytes, must never panic, and checks its own
//! invariants. `fuzz/` runs them under libFuzzer (cargo-fuzz, nightly); on stable,
//! [`run`] drives them with seeded random inputs and mutations of valid seeds — a
//! bounded number of cases inside `cargo test`, many more from `bench/fuzz.sh`
//! (`LATSCOPE_FUZZ_CASES`, `LATSCOPE_FUZZ_SEED`). Not part of latscope's behaviour.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A fuzz target: its name and entry point.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, by the name `fuzz/` gives it.
pub const TARGETS: &[Target] = &[
    ("h2_conn", crate::load::fuzz_h2_conn),
    ("hpack", crate::load::fuzz_h2_hpack),
    ("huffman", crate::load::fuzz_h2_huffman),
    ("http1_response", crate::load::fuzz_h1_parser),
    ("h3_response", crate::load::fuzz_h3_response),
    ("h3_control", crate::load::fuzz_h3_control),
    ("qpack", crate::load::fuzz_h3_qpack),
    ("svcb", svcb),
    ("watch_text", watch_text),
    ("remote_write", remote_write),
    ("export", export),
    ("v2_histogram", v2_histogram),
];

/// `net/svcb.rs`: a DNS response; a decoded record's ALPN names and port are
/// readable back.
pub fn svcb(data: &[u8]) {
    if let Ok(records) = crate::net::svcb::decode_response(data) {
        for r in records {
            let _ = r.presentation();
            let _ = r.h3_port("example.com", 443);
        }
    }
}

/// `watch/text.rs`: exposition text (lossy UTF-8); every number parses or not,
/// never panics.
pub fn watch_text(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let e = crate::watch::text::parse(&text);
    let _ = e.is_counter("node_cpu_seconds_total");
    for line in text.lines().take(64) {
        if let Some((_, rest)) = line.split_once('{') {
            let _ = crate::watch::text::label_set(rest);
        }
        let _ = crate::watch::text::number(line.trim());
    }
}

/// The remote-write body: samples made from the data round-trip through snappy and
/// protobuf unchanged (the receiver's decoding).
pub fn remote_write(data: &[u8]) {
    use prost::Message;
    let text = String::from_utf8_lossy(data);
    let mut samples = Vec::new();
    for (i, part) in text.split('\n').take(32).enumerate() {
        let (k, v) = part.split_once('=').unwrap_or(("label", part));
        samples.push(crate::output::series::Sample {
            name: "latscope_requests_total",
            labels: vec![(k.to_string(), v.to_string())],
            value: part.len() as f64 / (i as f64 + 0.5),
            ts_ms: i64::from(data.get(i).copied().unwrap_or(0)) * 1000,
        });
    }
    let body = crate::output::remote_write::body(&samples);
    let raw = snap::raw::Decoder::new()
        .decompress_vec(&body)
        .expect("our own snappy block decodes");
    let back = crate::output::remote_write::WriteRequest::decode(raw.as_slice())
        .expect("our own protobuf decodes");
    assert_eq!(back, crate::output::remote_write::write_request(&samples));
}

/// The export file: read (streaming, typed), checked, or refused with a message; never a
/// panic.
pub fn export(data: &[u8]) {
    if let Ok(mut run) = crate::store::export::read(data) {
        let _ = crate::store::export::check(&mut run);
    }
}

/// A stored (V2 deflate) histogram: decoded within its bounds or refused.
pub fn v2_histogram(data: &[u8]) {
    let _ = crate::stats::v2::decode(data);
}

/// Valid inputs each target starts its mutations from.
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    let frame = |kind: u8, flags: u8, stream: u32, payload: &[u8]| {
        let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
        f.extend([kind, flags]);
        f.extend(stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    };
    match target {
        "h2_conn" => {
            let mut ok = vec![3u8];
            ok.extend(frame(4, 0, 0, &[0, 3, 0, 0, 0, 100]));
            ok.extend(frame(4, 1, 0, &[]));
            ok.extend(frame(1, 4, 1, b"\x88\x0f\x0d\x015"));
            ok.extend(frame(0, 1, 1, b"hello"));
            ok.extend(frame(6, 0, 0, b"pingpong"));
            ok.extend(frame(8, 0, 0, &[0, 0, 1, 0]));
            ok.extend(frame(1, 0, 3, b"\x88"));
            ok.extend(frame(9, 4, 3, b"\x40\x03x-ab\x01c"));
            ok.extend(frame(0, 9, 3, b"\x02dd\x00\x00"));
            ok.extend(frame(3, 0, 5, &[0, 0, 0, 7]));
            ok.extend(frame(7, 0, 0, &[0, 0, 0, 3, 0, 0, 0, 0]));
            let mut flood = vec![0x81u8];
            flood.extend(frame(6, 0, 0, b"pingpong").repeat(300));
            vec![ok, flood]
        }
        "hpack" => vec![
            b"\x82\x86\x84\x41\x0f\x77\x77\x77\x2e\x65\x78\x61\x6d\x70\x6c\x65\x2e\x63\x6f\x6d"
                .to_vec(),
            b"\x20\x3f\xe1\x1f\x88\xfe\x40\x0a\x63\x75\x73\x74\x6f\x6d\x2d\x6b\x65\x79\x0d\x63\x75\x73\x74\x6f\x6d\x2d\x68\x65\x61\x64\x65\x72\xfe\xbe"
                .to_vec(),
            b"\x48\x82\x64\x02\x58\x85\xae\xc3\x77\x1a\x4b".to_vec(),
        ],
        "huffman" => vec![
            b"\xf1\xe3\xc2\xe5\xf2\x3a\x6b\xa0\xab\x90\xf4\xff".to_vec(),
            b"\xa8\xeb\x10\x64\x9c\xbf".to_vec(),
        ],
        "http1_response" => vec![
            b"\x10HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
            b"\x40HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nfffffffffffffffe\r\n0\r\nX: y\r\n\r\n".to_vec(),
            b"\x01HTTP/1.0 404 Not Found\r\nContent-Length: 5, 5\r\nConnection: keep-alive\r\n\r\n".to_vec(),
            b"\x22HTTP/1.1 200 OK\r\nServer: x\r\n\r\nuntil close".to_vec(),
        ],
        "h3_response" => vec![
            // HEADERS (:status 200, content-length 5, x-cache HIT), a grease
            // frame, DATA, trailers.
            b"\x05\x01\x13\x00\x00\xd9\x54\x01\x35\x27\x00x-cache\x03HIT\x21\x03xyz\x00\x05hello\x01\x08\x00\x00\x23x-t\x011".to_vec(),
            // An interim head (103) first.
            b"\x01\x01\x03\x00\x00\xd8\x01\x13\x00\x00\xd9\x54\x01\x35\x27\x00x-cache\x03HIT\x00\x05hello".to_vec(),
        ],
        // SETTINGS, an unknown frame, two GOAWAYs; SETTINGS, a big unknown type.
        "h3_control" => vec![
            b"\x03\x04\x06\x06\x40\x64\x21\x44\x00\x21\x02ab\x07\x01\x08\x07\x01\x04".to_vec(),
            b"\x40\x04\x00\x80\x00\x5f\xff\x03\x00\x00\x00\x07\x01\x00".to_vec(),
        ],
        "qpack" => vec![
            b"\x00\x00\x51\x0b/index.html\xd1\xd7\x27\x00x-cache\x03HIT".to_vec(),
            b"\x00\x00\xd9\x5f\x1d\x85\xae\xc3\x77\x1a\x4b\xfe\x00\x00\xff\x23".to_vec(),
        ],
        "svcb" => {
            let mut m = vec![0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0];
            m.extend(b"\x07example\x03com\x00\x00\x41\x00\x01");
            m.extend(b"\xc0\x0c\x00\x41\x00\x01\x00\x00\x0e\x10");
            let rdata = b"\x00\x01\x00\x00\x01\x00\x06\x02h3\x02h2\x00\x03\x00\x02\x01\xbb";
            m.extend((rdata.len() as u16).to_be_bytes());
            m.extend(rdata);
            vec![m]
        }
        "watch_text" => vec![b"# HELP node_cpu_seconds_total x\n# TYPE node_cpu_seconds_total counter\nnode_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 123.4\nnode_load1 0.5 1700000000000\nx{a=\"b\\\"c\\n\"} NaN\n".to_vec()],
        "remote_write" => vec![b"run=r1\nendpoint=all\nlabel=\xe2\x82\xac".to_vec()],
        "export" => vec![br#"{"format":"latscope-run","format_version":1,"run":{"id":"x","kind":"load"}}"#.to_vec()],
        "v2_histogram" => {
            use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
            let mut h = crate::stats::new_histogram();
            for v in [1_000u64, 50_000, 3_000_000] {
                let _ = h.record(v);
            }
            let mut buf = Vec::new();
            let _ = V2DeflateSerializer::new().serialize(&h, &mut buf);
            vec![buf]
        }
        _ => Vec::new(),
    }
}

/// One input: random bytes, or a seed mutated (bytes changed, ranges cut,
/// duplicated or spliced, boundary values planted).
fn input(rng: &mut SmallRng, seeds: &[Vec<u8>]) -> Vec<u8> {
    if seeds.is_empty() || rng.random_bool(0.2) {
        let n = rng.random_range(0..512);
        return (0..n).map(|_| rng.random()).collect();
    }
    let mut v = seeds[rng.random_range(0..seeds.len())].clone();
    for _ in 0..rng.random_range(1..6) {
        let len = v.len();
        match rng.random_range(0..6) {
            0 if len > 0 => {
                let at = rng.random_range(0..len);
                v[at] = rng.random();
            }
            1 if len > 0 => {
                let at = rng.random_range(0..len);
                v[at] = [0x00, 0xff, 0x7f, 0x80, b'\r', b'\n', b'0', b'9'][rng.random_range(0..8)];
            }
            2 if len > 1 => {
                let a = rng.random_range(0..len);
                let b = rng.random_range(a..len);
                v.drain(a..b);
            }
            3 if len > 0 && len < 1 << 16 => {
                let a = rng.random_range(0..len);
                let b = rng.random_range(a..len.min(a + 64));
                let piece = v[a..b].to_vec();
                let at = rng.random_range(0..=len);
                for _ in 0..rng.random_range(1..8) {
                    v.splice(at..at, piece.iter().copied());
                }
            }
            4 => {
                let other = &seeds[rng.random_range(0..seeds.len())];
                if !other.is_empty() {
                    let a = rng.random_range(0..other.len());
                    let at = rng.random_range(0..=v.len());
                    v.splice(at..at, other[a..].iter().copied());
                }
            }
            _ => {
                let at = rng.random_range(0..=len);
                v.insert(at, rng.random());
            }
        }
    }
    v
}

/// Runs `cases` inputs through `target` from `seed`; returns how many ran. A panic
/// propagates with the input printed (hex) for a regression test.
pub fn run(target: &Target, cases: u64, seed: u64) -> u64 {
    let (name, f) = *target;
    let seeds = seeds(name);
    let mut rng = SmallRng::seed_from_u64(seed ^ name.len() as u64 ^ u64::from(name.as_bytes()[0]));
    for s in &seeds {
        f(s);
    }
    for _ in 0..cases {
        let data = input(&mut rng, &seeds);
        let caught = std::panic::catch_unwind(|| f(&data));
        if let Err(e) = caught {
            let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
            eprintln!("fuzz target {name} panicked on input {hex}");
            std::panic::resume_unwind(e);
        }
    }
    cases
}

/// Cases per target from `LATSCOPE_FUZZ_CASES` (default `default`).
pub fn cases(default: u64) -> u64 {
    std::env::var("LATSCOPE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every target, a bounded number of cases (a few seconds in all in `cargo
    /// test`: 20,000 per target, about a second; `bench/fuzz.sh` raises it).
    #[test]
    fn every_parser_survives_hostile_bytes() {
        let seed = std::env::var("LATSCOPE_FUZZ_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(28);
        for t in TARGETS {
            let n = run(t, cases(20_000), seed);
            assert!(n > 0);
        }
    }
}
