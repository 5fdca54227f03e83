//! A histogram in the form a run keeps it: named, optionally one second of a
//! timeline, serialised as HdrHistogram V2 deflate (hex in JSON exports). Results
//! produce it, the store saves it, reports and merges read it back through
//! [`super::v2::decode`]. This module holds data; it never prints.

use serde::{Deserialize, Serialize};

/// A histogram kept with a run (nanoseconds, as `stats::histogram` records them):
/// `name` says what it measures, `second` is set for the per-second histograms of a
/// timeline (offset from the run's start), `v2` is the V2-deflate serialisation.
///
/// Names, by kind of run:
/// - load: `latency` (all endpoints), `latency:<endpoint>`, `service_time` (open
///   model), `connect`; per-second: `latency` with `second = Some(t)`.
/// - disk: `read`, `write`, `fsync`; per-second: the same names with `second`.
/// - probe: none (every sample is in the summary JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredHistogram {
    pub name: String,
    pub second: Option<u32>,
    #[serde(with = "hex_bytes")]
    pub v2: Vec<u8>,
}

/// Serialises bytes as a hex string in JSON exports.
mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        let mut out = String::with_capacity(bytes.len() * 2);
        for b in bytes {
            out.push_str(&format!("{b:02x}"));
        }
        s.serialize_str(&out)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        if text.len() % 2 != 0 {
            return Err(serde::de::Error::custom("odd-length hex string"));
        }
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(serde::de::Error::custom))
            .collect()
    }
}
