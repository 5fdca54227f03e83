//! HPACK's Huffman code (RFC 7541 §5.2, Appendix B), decoding only: a table of
//! 256 states × 16 nibbles built once from the code, so a string is decoded four
//! bits at a time with one lookup each (at most one symbol per nibble: the
//! shortest code is 5 bits). Padding must be a prefix of EOS of at most 7 bits,
//! and EOS itself is an error (§5.2).

use std::sync::LazyLock;

/// A malformed Huffman string (EOS inside, or bad padding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadHuffman;

/// One step of the decoder: the state after a nibble, and what it emitted.
#[derive(Clone, Copy, Default)]
struct Step {
    next: u8,
    flags: u8,
    sym: u8,
}

const EMIT: u8 = 1;
const FAIL: u8 = 2;

struct Table {
    steps: Vec<[Step; 16]>,
    /// Whether a string may end in this state (§5.2: padding is at most 7 bits
    /// of EOS's leading ones).
    accept: Vec<bool>,
}

static TABLE: LazyLock<Table> = LazyLock::new(build);

/// Builds the code tree, then walks it a nibble at a time from each inner node.
fn build() -> Table {
    // Inner nodes: children as node index, or LEAF | symbol.
    const LEAF: u16 = 0x8000;
    let mut tree: Vec<[u16; 2]> = vec![[0, 0]];
    let mut depth = vec![0u8];
    let mut ones = vec![true];
    for (sym, (&code, &len)) in CODES.iter().zip(LENGTHS.iter()).enumerate() {
        let mut node = 0usize;
        for i in (0..len).rev() {
            let bit = ((code >> i) & 1) as usize;
            if i == 0 {
                tree[node][bit] = LEAF | sym as u16;
            } else {
                if tree[node][bit] == 0 {
                    tree.push([0, 0]);
                    depth.push(depth[node] + 1);
                    ones.push(ones[node] && bit == 1);
                    tree[node][bit] = (tree.len() - 1) as u16;
                }
                node = tree[node][bit] as usize;
            }
        }
    }
    debug_assert_eq!(tree.len(), 256);
    let mut steps = vec![[Step::default(); 16]; tree.len()];
    for (state, row) in steps.iter_mut().enumerate() {
        for (nibble, step) in row.iter_mut().enumerate() {
            let mut node = state;
            for i in (0..4).rev() {
                let child = tree[node][(nibble >> i) & 1];
                if child & LEAF != 0 {
                    let sym = child & !LEAF;
                    if sym == 256 {
                        step.flags |= FAIL;
                        break;
                    }
                    step.flags |= EMIT;
                    step.sym = sym as u8;
                    node = 0;
                } else {
                    node = child as usize;
                }
            }
            step.next = node as u8;
        }
    }
    let accept = (0..tree.len()).map(|n| ones[n] && depth[n] <= 7).collect();
    Table { steps, accept }
}

/// Decodes `src`, appending the octets to `out` when given; returns how many
/// octets it decodes to.
pub fn decode(src: &[u8], mut out: Option<&mut Vec<u8>>) -> Result<usize, BadHuffman> {
    let t = &*TABLE;
    let mut state = 0usize;
    let mut n = 0;
    for &b in src {
        for nibble in [b >> 4, b & 0x0f] {
            let step = t.steps[state][nibble as usize];
            if step.flags & FAIL != 0 {
                return Err(BadHuffman);
            }
            if step.flags & EMIT != 0 {
                n += 1;
                if let Some(o) = out.as_deref_mut() {
                    o.push(step.sym);
                }
            }
            state = step.next as usize;
        }
    }
    if t.accept[state] {
        Ok(n)
    } else {
        Err(BadHuffman)
    }
}

/// Encodes `src` (for tests: the client sends its strings raw).
#[cfg(test)]
pub fn encode(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u64, 0u32);
    for &b in src {
        acc = (acc << LENGTHS[b as usize]) | u64::from(CODES[b as usize]);
        bits += u32::from(LENGTHS[b as usize]);
        while bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    if bits > 0 {
        out.push(((acc << (8 - bits)) as u8) | (0xff >> bits));
    }
    out
}

/// Each symbol's code (right-aligned), RFC 7541 Appendix B; 256 is EOS.
const CODES: [u32; 257] = [
    0x1ff8, 0x7fffd8, 0xfffffe2, 0xfffffe3, 0xfffffe4, 0xfffffe5, 0xfffffe6, 0xfffffe7, 0xfffffe8,
    0xffffea, 0x3ffffffc, 0xfffffe9, 0xfffffea, 0x3ffffffd, 0xfffffeb, 0xfffffec, 0xfffffed,
    0xfffffee, 0xfffffef, 0xffffff0, 0xffffff1, 0xffffff2, 0x3ffffffe, 0xffffff3, 0xffffff4,
    0xffffff5, 0xffffff6, 0xffffff7, 0xffffff8, 0xffffff9, 0xffffffa, 0xffffffb, 0x14, 0x3f8,
    0x3f9, 0xffa, 0x1ff9, 0x15, 0xf8, 0x7fa, 0x3fa, 0x3fb, 0xf9, 0x7fb, 0xfa, 0x16, 0x17, 0x18,
    0x0, 0x1, 0x2, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f, 0x5c, 0xfb, 0x7ffc, 0x20, 0xffb,
    0x3fc, 0x1ffa, 0x21, 0x5d, 0x5e, 0x5f, 0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
    0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f, 0x70, 0x71, 0x72, 0xfc, 0x73, 0xfd, 0x1ffb, 0x7fff0,
    0x1ffc, 0x3ffc, 0x22, 0x7ffd, 0x3, 0x23, 0x4, 0x24, 0x5, 0x25, 0x26, 0x27, 0x6, 0x74, 0x75,
    0x28, 0x29, 0x2a, 0x7, 0x2b, 0x76, 0x2c, 0x8, 0x9, 0x2d, 0x77, 0x78, 0x79, 0x7a, 0x7b, 0x7ffe,
    0x7fc, 0x3ffd, 0x1ffd, 0xffffffc, 0xfffe6, 0x3fffd2, 0xfffe7, 0xfffe8, 0x3fffd3, 0x3fffd4,
    0x3fffd5, 0x7fffd9, 0x3fffd6, 0x7fffda, 0x7fffdb, 0x7fffdc, 0x7fffdd, 0x7fffde, 0xffffeb,
    0x7fffdf, 0xffffec, 0xffffed, 0x3fffd7, 0x7fffe0, 0xffffee, 0x7fffe1, 0x7fffe2, 0x7fffe3,
    0x7fffe4, 0x1fffdc, 0x3fffd8, 0x7fffe5, 0x3fffd9, 0x7fffe6, 0x7fffe7, 0xffffef, 0x3fffda,
    0x1fffdd, 0xfffe9, 0x3fffdb, 0x3fffdc, 0x7fffe8, 0x7fffe9, 0x1fffde, 0x7fffea, 0x3fffdd,
    0x3fffde, 0xfffff0, 0x1fffdf, 0x3fffdf, 0x7fffeb, 0x7fffec, 0x1fffe0, 0x1fffe1, 0x3fffe0,
    0x1fffe2, 0x7fffed, 0x3fffe1, 0x7fffee, 0x7fffef, 0xfffea, 0x3fffe2, 0x3fffe3, 0x3fffe4,
    0x7ffff0, 0x3fffe5, 0x3fffe6, 0x7ffff1, 0x3ffffe0, 0x3ffffe1, 0xfffeb, 0x7fff1, 0x3fffe7,
    0x7ffff2, 0x3fffe8, 0x1ffffec, 0x3ffffe2, 0x3ffffe3, 0x3ffffe4, 0x7ffffde, 0x7ffffdf,
    0x3ffffe5, 0xfffff1, 0x1ffffed, 0x7fff2, 0x1fffe3, 0x3ffffe6, 0x7ffffe0, 0x7ffffe1, 0x3ffffe7,
    0x7ffffe2, 0xfffff2, 0x1fffe4, 0x1fffe5, 0x3ffffe8, 0x3ffffe9, 0xffffffd, 0x7ffffe3, 0x7ffffe4,
    0x7ffffe5, 0xfffec, 0xfffff3, 0xfffed, 0x1fffe6, 0x3fffe9, 0x1fffe7, 0x1fffe8, 0x7ffff3,
    0x3fffea, 0x3fffeb, 0x1ffffee, 0x1ffffef, 0xfffff4, 0xfffff5, 0x3ffffea, 0x7ffff4, 0x3ffffeb,
    0x7ffffe6, 0x3ffffec, 0x3ffffed, 0x7ffffe7, 0x7ffffe8, 0x7ffffe9, 0x7ffffea, 0x7ffffeb,
    0xffffffe, 0x7ffffec, 0x7ffffed, 0x7ffffee, 0x7ffffef, 0x7fffff0, 0x3ffffee, 0x3fffffff,
];

/// Each symbol's code length in bits.
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7541 C.4.1: "www.example.com" Huffman-coded.
    #[test]
    fn decodes_the_rfc_example() {
        let src = [
            0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ];
        let mut out = Vec::new();
        assert_eq!(decode(&src, Some(&mut out)), Ok(15));
        assert_eq!(out, b"www.example.com");
        assert_eq!(decode(&src, None), Ok(15));
        assert_eq!(encode(b"www.example.com"), src);
    }

    /// Every octet round-trips, one at a time and all together.
    #[test]
    fn every_octet_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        let mut out = Vec::new();
        assert_eq!(decode(&encode(&all), Some(&mut out)), Ok(256));
        assert_eq!(out, all);
        for b in 0..=255u8 {
            let mut out = Vec::new();
            assert_eq!(decode(&encode(&[b]), Some(&mut out)), Ok(1), "{b}");
            assert_eq!(out, [b]);
        }
    }

    /// §5.2: padding longer than 7 bits, padding that is not EOS's ones, and EOS
    /// itself are errors.
    #[test]
    fn bad_padding_and_eos_are_errors() {
        // 'a' is 00011 (5 bits): padded with 111 is fine, with 000 is not.
        assert_eq!(decode(&[0b0001_1111], None), Ok(1));
        assert_eq!(decode(&[0b0001_1000], None), Err(BadHuffman));
        // A whole byte of ones is 8 bits of padding.
        assert_eq!(decode(&[0b0001_1111, 0xff], None), Err(BadHuffman));
        // EOS (30 ones) spelled out.
        assert_eq!(decode(&[0xff, 0xff, 0xff, 0xff], None), Err(BadHuffman));
    }
}
