//! One second of the timeline, merged over the worker threads: the same code makes
//! the live feed's seconds during a run and the stored timeline after it, so what a
//! live consumer (remote-write, the live view) saw is what the run's JSON says.

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use super::recorder::{keeps_endpoint_seconds, ErrorKind, SecondAcc, KINDS};
use super::result::{ms, SecondResult};
use super::sys::SecondSample;
use crate::stats::histogram::new_histogram;

/// V2 deflate bytes of a histogram.
pub(crate) fn v2(h: &Histogram<u64>) -> Vec<u8> {
    let mut buf = Vec::new();
    let _ = V2DeflateSerializer::new().serialize(h, &mut buf);
    buf
}

/// Adds the histogram in `bytes` (V2, or V2 deflate; nothing when empty or unreadable).
fn add_v2(into: &mut Histogram<u64>, bytes: &[u8], de: &mut Deserializer) {
    if bytes.is_empty() {
        return;
    }
    if let Ok(one) = de.deserialize::<u64, _>(&mut &bytes[..]) {
        let _ = into.add(&one);
    }
}

/// Second `t` merged over the threads' parts (each thread's accumulator of that
/// second), with `endpoints` endpoints in the plan; returns the second and its latency
/// histogram. `sample` adds the host's numbers of the second (retransmits, CPU).
pub(crate) fn merge_second(
    t: usize,
    parts: &[&SecondAcc],
    endpoints: usize,
    sample: Option<&SecondSample>,
    de: &mut Deserializer,
) -> (SecondResult, Histogram<u64>) {
    let mut out = SecondResult {
        t: t as u32,
        ..Default::default()
    };
    let mut errors = [0u64; KINDS];
    let mut h = new_histogram();
    for s in parts {
        out.requests += s.requests;
        out.ok += s.ok;
        out.bytes += s.bytes;
        out.dropped += s.dropped;
        out.active += s.active;
        out.cache_hits += s.cache_hits;
        out.started += s.started;
        out.started_max_ms = out.started_max_ms.max(s.started_max_ns as f64 / 1e6);
        out.syn_retrans += s.syn_retrans;
        out.early_retrans += s.early_retrans;
        out.checks += s.checks;
        out.checks_failed += s.checks_failed;
        if out.endpoints.len() < s.endpoints.len() {
            out.endpoints.resize(s.endpoints.len(), (0, 0.0));
        }
        for (o, e) in out.endpoints.iter_mut().zip(&s.endpoints) {
            o.0 += e.started;
            o.1 = o.1.max(e.max_ns as f64 / 1e6);
        }
        for (i, n) in s.errors.iter().enumerate() {
            errors[i] += n;
        }
        add_v2(&mut h, &s.v2, de);
    }
    let p = ms(&h);
    out.p50_ms = p.p50;
    out.p90_ms = p.p90;
    out.p99_ms = p.p99;
    out.max_ms = p.max;
    out.errors = errors.iter().sum();
    out.errors_by_kind = ErrorKind::ALL
        .iter()
        .filter(|k| errors[**k as usize] > 0)
        .map(|k| (k.name().to_string(), errors[*k as usize]))
        .collect();
    if !h.is_empty() {
        out.v2 = v2(&h);
    }
    out.ep_v2 = per_endpoint(parts, endpoints, de);
    if let Some(s) = sample {
        out.retrans = s.retrans;
        out.host_syn_retrans = s.syn_retrans;
        out.cpu_pct = Some(s.cpu_pct);
    }
    (out, h)
}

/// The parts' histograms of one kind (`pick`), merged.
pub(crate) fn merge_v2(
    parts: &[&SecondAcc],
    pick: impl Fn(&SecondAcc) -> &[u8],
    de: &mut Deserializer,
) -> Histogram<u64> {
    let mut h = new_histogram();
    for s in parts {
        add_v2(&mut h, pick(s), de);
    }
    h
}

/// The second of each endpoint, merged over the threads (V2 deflate; empty for an
/// endpoint without requests that second, and no entries unless the run keeps
/// per-endpoint seconds).
fn per_endpoint(parts: &[&SecondAcc], endpoints: usize, de: &mut Deserializer) -> Vec<Vec<u8>> {
    if !keeps_endpoint_seconds(endpoints) {
        return Vec::new();
    }
    let mut h = new_histogram();
    (0..endpoints)
        .map(|e| {
            h.reset();
            for s in parts {
                if let Some(b) = s.ep_v2.get(e) {
                    add_v2(&mut h, b, de);
                }
            }
            if h.is_empty() {
                Vec::new()
            } else {
                v2(&h)
            }
        })
        .collect()
}
