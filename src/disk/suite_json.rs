//! The database suite's own parts of the disk document as JSON — `workloads`,
//! `commit`, `layout` — which `schema::DiskDoc` places beside the one-workload fields
//! (`read` is the 4 KiB random reads at queue depth 32, `write` the sustained 1 MiB
//! writes, `fsync` the commit's fdatasync). Percentiles here are null where the I/Os
//! cannot support them.

use serde_json::{json, Value};

use crate::disk::commit::{CommitHists, CommitResult, SEGMENT};
use crate::disk::result::{dir_json, lat_json, r1, r2, rate};
use crate::disk::suite::{SuiteResult, WorkloadRun, SUITE_SECONDS};
use crate::disk::DirSummary;
use crate::stats::StoredHistogram;
use crate::stats::{Percentiles, Unit};

const MIB: f64 = 1024.0 * 1024.0;

impl SuiteResult {
    /// The suite's JSON document (without `verdict` and `findings`).
    pub fn to_json(&self) -> Value {
        let headline = |name: &str, f: fn(&crate::disk::DiskResult) -> DirSummary| {
            self.run(name)
                .map(|r| dir_json(f(r)))
                .unwrap_or_else(|| dir_json(DirSummary::default()))
        };
        let path = self
            .runs
            .first()
            .map(|r| r.result.options.path.display().to_string())
            .unwrap_or_default();
        let mut doc = json!({
            "kind": "disk",
            "mode": "suite",
            "path": path,
            "file": self.setup.file.display().to_string(),
            "created": self.setup.created,
            "size": self.setup.size,
            "pattern": "suite",
            "mix": Value::Null,
            "bs": Value::Null,
            "iodepth": Value::Null,
            "direct": self.setup.direct,
            "fsync": self.commit.is_some(),
            "engine": self.setup.engine.name(),
            "duration_s": r2(self.elapsed.as_secs_f64()),
            "suite_seconds": SUITE_SECONDS,
            "interrupted": self.interrupted,
            "laid_out": self.setup.laid_out,
            "layout": self.layout.map(|(bytes, t)| json!({
                "bytes": bytes,
                "s": r2(t.as_secs_f64()),
                "mib_s": r2(rate(bytes, t.as_secs_f64()) / MIB),
            })),
            "read": headline("read-4k-qd32", |r| r.read()),
            "write": headline("write-1m-qd8", |r| r.write()),
            "workloads": self.runs.iter().map(workload_json).collect::<Vec<_>>(),
            "commit": self.commit.as_ref().map(commit_json),
            "warnings": self.runs.first().map(|r| r.result.warnings()).unwrap_or_default(),
            "notes": self.notes,
        });
        if let Some(c) = &self.commit {
            let h = &c.steady.fsync;
            doc["fsync"] = json!({
                "count": h.len(),
                "lat_us": lat_json(&Percentiles::from_histogram(h, Unit::Micros), h.len()),
            });
        }
        doc
    }

    /// The stored histograms: `read` of the 4 KiB reads at depth 32 and `write` of the
    /// 1 MiB writes (whole run and per second, as a one-workload run stores them), and
    /// the commit's `fsync`; compare matches them by name across runs.
    pub fn histograms(&self) -> Vec<StoredHistogram> {
        let mut out = Vec::new();
        for (name, dir) in [("read-4k-qd32", "read"), ("write-1m-qd8", "write")] {
            if let Some(r) = self.run(name) {
                out.extend(r.histograms().into_iter().filter(|h| h.name == dir));
            }
        }
        if let Some(c) = &self.commit {
            let mut h = crate::disk::recorder::Hists::small();
            let _ = h.fsync.add(&c.steady.fsync);
            out.extend(crate::disk::result::stored(&h, None));
        }
        out
    }
}

fn workload_json(w: &WorkloadRun) -> Value {
    let r = &w.result;
    let mut doc = json!({
        "name": w.workload.name,
        "what": w.workload.what,
        "pattern": w.workload.pattern.name(),
        "bs": w.workload.bs,
        "iodepth": w.workload.iodepth,
        "fsync": w.workload.fsync,
        "duration_s": r2(r.elapsed.as_secs_f64()),
        "read": dir_json(r.read()),
        "write": dir_json(r.write()),
    });
    if let Some((count, lat)) = r.fsync() {
        doc["fsync"] = json!({ "count": count, "lat_us": lat_json(&lat, count) });
    }
    doc
}

fn hists_json(h: &CommitHists) -> Value {
    let p = |h| Percentiles::from_histogram(h, Unit::Micros);
    let n = h.count();
    json!({
        "commits": n,
        "lat_us": lat_json(&p(&h.commit), n),
        "write_lat_us": lat_json(&p(&h.write), n),
        "fsync_lat_us": lat_json(&p(&h.fsync), n),
    })
}

fn commit_json(c: &CommitResult) -> Value {
    let secs = c.steady_elapsed.as_secs_f64();
    let mut doc = hists_json(&c.steady);
    doc["bs"] = json!(c.bs);
    doc["duration_s"] = json!(r2(secs));
    doc["commits_per_s"] = json!(r1(rate(c.steady.count(), secs)));
    doc["per_second"] = json!(c.per_second);
    doc["append"] = hists_json(&c.append);
    doc["segment"] = json!({
        "bytes": SEGMENT,
        "written": c.segment_written,
        "ms": r1(c.segment_estimate().as_secs_f64() * 1e3),
        "extrapolated": !c.segment_complete(),
    });
    doc["starved"] = json!({
        "commits": c.starved.count(),
        "seconds": r2(c.starved_elapsed.as_secs_f64()),
        "kept": c.starved_kept,
    });
    doc["cpu_wait_pct"] = json!(c.cpu_wait_pct.map(r1));
    doc["cpu_pressure_pct"] = json!(c.cpu_pressure_pct.map(r1));
    doc["interrupted"] = json!(c.interrupted);
    doc
}
