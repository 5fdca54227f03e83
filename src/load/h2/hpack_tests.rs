//! HPACK decoder tests: RFC 7541 Appendix C.2–C.6 (with and without Huffman,
//! eviction with a 256-octet table), size updates and malformed blocks.

use super::*;

/// Collects every field, decoding every value.
#[derive(Default)]
struct All(Vec<(String, String)>);

impl Sink for All {
    fn wants(&self, _: &[u8]) -> bool {
        true
    }
    fn field(&mut self, name: &[u8], value: &[u8], len: usize) {
        assert_eq!(value.len(), len);
        self.0.push((
            String::from_utf8(name.to_vec()).unwrap(),
            String::from_utf8(value.to_vec()).unwrap(),
        ));
    }
}

/// Wants no value: (name, decoded length) only.
#[derive(Default)]
struct Lengths(Vec<(String, usize)>);

impl Sink for Lengths {
    fn wants(&self, _: &[u8]) -> bool {
        false
    }
    fn field(&mut self, name: &[u8], _: &[u8], len: usize) {
        self.0
            .push((String::from_utf8(name.to_vec()).unwrap(), len));
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

fn decode(d: &mut Decoder, block: &str) -> Vec<(String, String)> {
    let mut all = All::default();
    d.decode(&hex(block), &mut all).unwrap();
    all.0
}

const AUTH: (&str, &str) = (":authority", "www.example.com");

/// C.3 and C.4: three requests on one connection, without and with Huffman;
/// the table grows to 164 octets.
#[test]
fn rfc7541_c3_c4_requests() {
    for blocks in [
        [
            "828684410f7777772e6578616d706c652e636f6d",
            "828684be58086e6f2d6361636865",
            "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
        ],
        [
            "828684418cf1e3c2e5f23a6ba0ab90f4ff",
            "828684be5886a8eb10649cbf",
            "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
        ],
    ] {
        let mut d = Decoder::default();
        let get = [
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/"),
            AUTH,
        ];
        assert_eq!(decode(&mut d, blocks[0]), pairs(&get));
        assert_eq!(d.entries(), pairs(&[AUTH]));
        assert_eq!(d.table_size(), 57);
        let mut second = get.to_vec();
        second.push(("cache-control", "no-cache"));
        assert_eq!(decode(&mut d, blocks[1]), pairs(&second));
        assert_eq!(d.table_size(), 110);
        let third = [
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/index.html"),
            AUTH,
            ("custom-key", "custom-value"),
        ];
        assert_eq!(decode(&mut d, blocks[2]), pairs(&third));
        assert_eq!(
            d.entries(),
            pairs(&[
                ("custom-key", "custom-value"),
                ("cache-control", "no-cache"),
                AUTH
            ])
        );
        assert_eq!(d.table_size(), 164);
    }
}

const DATE1: (&str, &str) = ("date", "Mon, 21 Oct 2013 20:13:21 GMT");
const DATE2: (&str, &str) = ("date", "Mon, 21 Oct 2013 20:13:22 GMT");
const LOC: (&str, &str) = ("location", "https://www.example.com");
const PRIV: (&str, &str) = ("cache-control", "private");
const COOKIE: (&str, &str) = (
    "set-cookie",
    "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
);

/// C.5 and C.6: three responses with a 256-octet table, without and with
/// Huffman: the second evicts ":status: 302", the third evicts three entries.
#[test]
fn rfc7541_c5_c6_responses_evict() {
    for blocks in [
        [
            "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d",
            "4803333037c1c0bf",
            "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31",
        ],
        [
            "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
            "4883640effc1c0bf",
            "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
        ],
    ] {
        let mut d = Decoder::new(256);
        assert_eq!(
            decode(&mut d, blocks[0]),
            pairs(&[(":status", "302"), PRIV, DATE1, LOC])
        );
        assert_eq!(d.entries(), pairs(&[LOC, DATE1, PRIV, (":status", "302")]));
        assert_eq!(d.table_size(), 222);
        assert_eq!(
            decode(&mut d, blocks[1]),
            pairs(&[(":status", "307"), PRIV, DATE1, LOC])
        );
        assert_eq!(d.entries(), pairs(&[(":status", "307"), LOC, DATE1, PRIV]));
        assert_eq!(d.table_size(), 222);
        assert_eq!(
            decode(&mut d, blocks[2]),
            pairs(&[
                (":status", "200"),
                PRIV,
                DATE2,
                LOC,
                ("content-encoding", "gzip"),
                COOKIE
            ])
        );
        assert_eq!(
            d.entries(),
            pairs(&[COOKIE, ("content-encoding", "gzip"), DATE2])
        );
        assert_eq!(d.table_size(), 215);
    }
}

/// A sink that wants no value still gets each value's decoded length, and the
/// table stays the same as with one that wants all (C.6, Huffman throughout).
#[test]
fn unwanted_values_keep_the_table_right() {
    let blocks = [
        "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
        "4883640effc1c0bf",
    ];
    let mut d = Decoder::new(256);
    let mut first = Lengths::default();
    d.decode(&hex(blocks[0]), &mut first).unwrap();
    assert_eq!(
        first.0,
        [
            (":status".to_string(), 3),
            ("cache-control".to_string(), 7),
            ("date".to_string(), 29),
            ("location".to_string(), 23)
        ]
    );
    let mut second = All::default();
    d.decode(&hex(blocks[1]), &mut second).unwrap();
    assert_eq!(second.0, pairs(&[(":status", "307"), PRIV, DATE1, LOC]));
    // A literal without indexing, Huffman value, not wanted: length only.
    let mut block = Vec::new();
    put_int(&mut block, 4, 0, 54); // server
    let coded = huffman::encode(b"nginx/1.26");
    put_int(&mut block, 7, 0x80, coded.len());
    block.extend_from_slice(&coded);
    let mut l = Lengths::default();
    d.decode(&block, &mut l).unwrap();
    assert_eq!(l.0, [("server".to_string(), 10)]);
}

/// C.2.1–C.2.4, and the encoder's writers read back.
#[test]
fn rfc7541_c2_fields_and_the_encoder() {
    let mut d = Decoder::default();
    assert_eq!(
        decode(
            &mut d,
            "400a637573746f6d2d6b65790d637573746f6d2d686561646572"
        ),
        pairs(&[("custom-key", "custom-header")])
    );
    assert_eq!(d.table_size(), 55);
    assert_eq!(
        decode(&mut d, "040c2f73616d706c652f70617468"),
        pairs(&[(":path", "/sample/path")])
    );
    assert_eq!(
        decode(&mut d, "100870617373776f726406736563726574"),
        pairs(&[("password", "secret")])
    );
    assert_eq!(decode(&mut d, "82"), pairs(&[(":method", "GET")]));
    assert_eq!(d.table_size(), 55);
    let mut out = Vec::new();
    put_field(&mut out, ":method", b"GET");
    put_field(&mut out, ":path", b"/sample/path");
    put_field(&mut out, "x-custom", b"v");
    put_field(&mut out, "accept-encoding", b"gzip, deflate");
    put_int(&mut out, 5, 0, 1337);
    assert_eq!(&out[..15], hex("82040c2f73616d706c652f70617468"));
    let mut all = All::default();
    let end = out.len() - 3;
    assert_eq!(&out[end..], [0x1f, 0x9a, 0x0a]); // C.1.2
    Decoder::default().decode(&out[..end], &mut all).unwrap();
    assert_eq!(
        all.0,
        pairs(&[
            (":method", "GET"),
            (":path", "/sample/path"),
            ("x-custom", "v"),
            ("accept-encoding", "gzip, deflate")
        ])
    );
}

/// §4.3, §6.3: a size update shrinks the table (evicting), may not exceed the
/// announced size and may not follow a field.
#[test]
fn size_updates() {
    let mut d = Decoder::default();
    decode(
        &mut d,
        "400a637573746f6d2d6b65790d637573746f6d2d686561646572",
    );
    assert_eq!(d.table_size(), 55);
    // 0x20: size 0 empties the table; then 54 would not fit an entry of 55.
    assert_eq!(decode(&mut d, "20"), pairs(&[]));
    assert_eq!(d.table_size(), 0);
    assert!(d.decode(&hex("be"), &mut All::default()).is_err());
    let mut up = Vec::new();
    put_int(&mut up, 5, 0x20, 4097);
    assert!(d.decode(&up, &mut All::default()).is_err());
    assert!(d.decode(&hex("8220"), &mut All::default()).is_err());
    up.clear();
    put_int(&mut up, 5, 0x20, 54);
    up.extend_from_slice(&hex("400a637573746f6d2d6b65790d637573746f6d2d686561646572"));
    decode(
        &mut d,
        &up.iter().map(|b| format!("{b:02x}")).collect::<String>(),
    );
    // The entry (55 octets) did not fit a 54-octet table: not added (§4.4).
    assert_eq!(d.table_size(), 0);
    // Two updates before the first field are what §4.2 needs; a third is a flood
    // (issue 28 item 3).
    assert!(d.decode(&hex("202082"), &mut All::default()).is_ok());
    assert!(d.decode(&hex("20202082"), &mut All::default()).is_err());
    assert!(d.decode(&[0x20; 10_000], &mut All::default()).is_err());
}

/// Malformed blocks are errors: index 0, an index past the tables, a truncated
/// string or integer, bad Huffman, an overlong integer.
#[test]
fn malformed_blocks_are_errors() {
    for bad in [
        "80",
        "be",
        "ff7f",
        "0005616263",
        "00",
        "0f",
        "4a",
        "0081000161",
        "0fffffffffff01",
        "3fe1",
    ] {
        assert!(
            Decoder::default()
                .decode(&hex(bad), &mut All::default())
                .is_err(),
            "{bad}"
        );
    }
}
