//! The Prometheus remote-write 1.0 wire format: the few protobuf messages of
//! `prometheus/prompb` (WriteRequest, TimeSeries, Label, Sample), derived by hand with
//! prost, and the body a write sends: the encoded WriteRequest compressed with snappy's
//! *block* format (not the framed stream format), as the spec requires
//! (<https://prometheus.io/docs/specs/remote_write_spec/>). Encoding only: sending is
//! in `sender`.

use prost::Message;

use super::series::Sample;

/// `prometheus.WriteRequest` (field 2 is reserved; metadata, field 3, is not sent).
#[derive(Clone, PartialEq, Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// `prometheus.TimeSeries`: one label set and its samples, oldest first.
#[derive(Clone, PartialEq, Message)]
pub struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<PbSample>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`: a value at a time (Unix milliseconds).
#[derive(Clone, PartialEq, Message)]
pub struct PbSample {
    #[prost(double, tag = "1")]
    pub value: f64,
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// The WriteRequest for `samples`: one TimeSeries per label set (in order of first
/// appearance), its samples in the order given, labels sorted by name with
/// `__name__` among them, as the spec requires.
pub fn write_request(samples: &[Sample]) -> WriteRequest {
    let mut series: Vec<TimeSeries> = Vec::new();
    type Key<'a> = (&'a str, &'a [(String, String)]);
    let mut index: std::collections::HashMap<Key, usize> = std::collections::HashMap::new();
    for s in samples {
        let at = *index.entry((s.name, &s.labels)).or_insert_with(|| {
            let mut labels: Vec<Label> = s
                .labels
                .iter()
                .map(|(n, v)| Label {
                    name: n.clone(),
                    value: v.clone(),
                })
                .collect();
            labels.push(Label {
                name: "__name__".into(),
                value: s.name.into(),
            });
            labels.sort_by(|a, b| a.name.cmp(&b.name));
            series.push(TimeSeries {
                labels,
                samples: Vec::new(),
            });
            series.len() - 1
        });
        series[at].samples.push(PbSample {
            value: s.value,
            timestamp: s.ts_ms,
        });
    }
    WriteRequest { timeseries: series }
}

/// The body of one remote write: the protobuf, snappy block-compressed.
pub fn body(samples: &[Sample]) -> Vec<u8> {
    let raw = write_request(samples).encode_to_vec();
    // Compressing a few KB cannot fail; an empty body would be refused by the
    // receiver and counted as a failed write.
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &'static str, labels: &[(&str, &str)], value: f64, ts_ms: i64) -> Sample {
        Sample {
            name,
            labels: labels
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            value,
            ts_ms,
        }
    }

    /// The body decompresses (snappy block format) and decodes back to the same
    /// series: one TimeSeries per label set, samples in time order, labels sorted by
    /// name with `__name__` in its sorted place (an upper-case label sorts before it).
    #[test]
    fn body_round_trips_through_snappy_and_protobuf() {
        let samples = vec![
            sample(
                "latscope_requests_total",
                &[("run", "r1"), ("endpoint", "all")],
                10.0,
                1000,
            ),
            sample(
                "latscope_active",
                &[("run", "r1"), ("Zone", "eu")],
                4.0,
                1000,
            ),
            sample(
                "latscope_requests_total",
                &[("run", "r1"), ("endpoint", "all")],
                25.0,
                2000,
            ),
        ];
        let body = body(&samples);
        let raw = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
        let req = WriteRequest::decode(&raw[..]).unwrap();
        assert_eq!(req.timeseries.len(), 2);
        let names: Vec<&str> = req.timeseries[0]
            .labels
            .iter()
            .map(|l| l.name.as_str())
            .collect();
        assert_eq!(names, ["__name__", "endpoint", "run"]);
        assert_eq!(req.timeseries[0].labels[0].value, "latscope_requests_total");
        assert_eq!(
            req.timeseries[0].samples,
            vec![
                PbSample {
                    value: 10.0,
                    timestamp: 1000
                },
                PbSample {
                    value: 25.0,
                    timestamp: 2000
                }
            ]
        );
        let names: Vec<&str> = req.timeseries[1]
            .labels
            .iter()
            .map(|l| l.name.as_str())
            .collect();
        assert_eq!(names, ["Zone", "__name__", "run"]);
    }

    /// The bytes are the protobuf wire format the spec's .proto describes: field 1 of
    /// WriteRequest is a length-delimited TimeSeries (tag 0x0a), a Sample's value is a
    /// fixed64 double (tag 0x09) and its timestamp a varint (tag 0x10).
    #[test]
    fn wire_bytes_follow_the_proto() {
        let req = write_request(&[sample("m", &[], 1.5, 7)]);
        let bytes = req.encode_to_vec();
        assert_eq!(bytes[0], 0x0a);
        let sample = PbSample {
            value: 1.5,
            timestamp: 7,
        }
        .encode_to_vec();
        let mut want = vec![0x09];
        want.extend_from_slice(&1.5f64.to_le_bytes());
        want.extend_from_slice(&[0x10, 7]);
        assert_eq!(sample, want);
        let label = Label {
            name: "a".into(),
            value: "b".into(),
        }
        .encode_to_vec();
        assert_eq!(label, [0x0a, 1, b'a', 0x12, 1, b'b']);
    }
}
