//! Decoding a stored HdrHistogram (V2 deflate) without trusting it: the sizes a
//! histogram claims (its payload length, its value range) are checked against caps
//! before anything is allocated, so a crafted export cannot make `import` or
//! `report` allocate gigabytes. This module decodes; it never prints.

use std::io::Read;

use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

/// The V2 deflate cookie (HdrHistogram's encoding spec).
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// The cookie of the uncompressed V2 encoding inside it.
const V2_COOKIE: u32 = 0x1c84_9313;
/// The uncompressed V2 header: cookie, payload length, normalizing offset,
/// significant digits, lowest, highest, integer-to-double ratio.
const HEADER: usize = 40;
/// The largest decompressed histogram accepted: 1 MiB. latscope's histograms (1 µs ..
/// 1 h, 3 significant digits) need at most ~370 KB even with every bucket set.
pub const MAX_DECODED: usize = 1 << 20;
/// The most significant digits accepted (latscope writes 3).
const MAX_DIGITS: u32 = 3;
/// The highest trackable value accepted: 2^44 ns (~4.9 h; latscope's bound is 1 h).
const MAX_HIGHEST: u64 = 1 << 44;

/// Decodes a V2-deflate histogram, refusing one that is truncated, oversized or
/// claims bounds beyond latscope's; the error says which.
pub fn decode(v2: &[u8]) -> Result<Histogram<u64>, String> {
    let be32 = |b: &[u8], at: usize| u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let be64 = |b: &[u8], at: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[at..at + 8]);
        u64::from_be_bytes(a)
    };
    if v2.len() < 8 {
        return Err(format!("{} bytes, too short for a histogram", v2.len()));
    }
    if be32(v2, 0) != V2_COMPRESSED_COOKIE {
        return Err("not an HdrHistogram V2 deflate encoding (wrong cookie)".into());
    }
    let claimed = be32(v2, 4) as usize;
    if claimed != v2.len() - 8 {
        return Err(format!(
            "claims {claimed} compressed bytes but holds {} (truncated or padded)",
            v2.len() - 8
        ));
    }
    let mut inner = Vec::new();
    flate2::read::ZlibDecoder::new(&v2[8..])
        .take(MAX_DECODED as u64 + 1)
        .read_to_end(&mut inner)
        .map_err(|e| format!("cannot be inflated: {e}"))?;
    if inner.len() > MAX_DECODED {
        return Err(format!(
            "inflates to more than {MAX_DECODED} bytes (latscope's histograms need far less)"
        ));
    }
    if inner.len() < HEADER || be32(&inner, 0) != V2_COOKIE {
        return Err("its inflated header is missing or wrong".into());
    }
    let payload = be32(&inner, 4) as usize;
    if payload != inner.len() - HEADER {
        return Err(format!(
            "claims a {payload}-byte payload but holds {} bytes",
            inner.len() - HEADER
        ));
    }
    let digits = be32(&inner, 12);
    let (lowest, highest) = (be64(&inner, 16), be64(&inner, 24));
    if !(1..=MAX_DIGITS).contains(&digits) || lowest == 0 || highest > MAX_HIGHEST {
        return Err(format!(
            "bounds beyond latscope's (lowest {lowest}, highest {highest}, {digits} significant digits)"
        ));
    }
    Deserializer::new()
        .deserialize(&mut inner.as_slice())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};

    fn encoded() -> Vec<u8> {
        let mut h = crate::stats::histogram::new_histogram();
        for v in [1_000u64, 5_000_000, 3_000_000_000] {
            h.record(v).unwrap();
        }
        let mut buf = Vec::new();
        V2DeflateSerializer::new().serialize(&h, &mut buf).unwrap();
        buf
    }

    #[test]
    fn decodes_what_latscope_writes() {
        let h = decode(&encoded()).unwrap();
        assert_eq!(h.len(), 3);
    }

    #[test]
    fn refuses_truncated_padded_and_huge_claims() {
        let good = encoded();
        assert!(decode(&good[..good.len() - 3])
            .unwrap_err()
            .contains("truncated"));
        assert!(decode(&good[..5]).unwrap_err().contains("too short"));
        let mut padded = good.clone();
        padded.push(0);
        assert!(decode(&padded).is_err());
        // A payload length of 2 GB inside a valid deflate stream.
        let mut inner = vec![0u8; HEADER];
        inner[..4].copy_from_slice(&V2_COOKIE.to_be_bytes());
        inner[4..8].copy_from_slice(&0x7fff_ffffu32.to_be_bytes());
        inner[12..16].copy_from_slice(&3u32.to_be_bytes());
        inner[16..24].copy_from_slice(&1000u64.to_be_bytes());
        inner[24..32].copy_from_slice(&3_600_000_000_000u64.to_be_bytes());
        inner[32..40].copy_from_slice(&1.0f64.to_be_bytes());
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut z, &inner).unwrap();
        let z = z.finish().unwrap();
        let mut crafted = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        crafted.extend((z.len() as u32).to_be_bytes());
        crafted.extend(z);
        assert!(decode(&crafted).unwrap_err().contains("payload"));
    }
}
