//! Helpers for the `latscope disk` tests: scratch directories and running the binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::util::latscope;

/// A fresh directory, removed when dropped. `base` is the parent.
pub struct Dir(pub PathBuf);

impl Dir {
    /// Under the system temp directory (may be tmpfs elsewhere).
    pub fn tmp(name: &str) -> Dir {
        Dir::under(&std::env::temp_dir(), name)
    }

    /// Under the build's target directory: a real filesystem, for O_DIRECT tests.
    pub fn real(name: &str) -> Dir {
        Dir::under(Path::new(env!("CARGO_TARGET_TMPDIR")), name)
    }

    pub fn under(base: &Path, name: &str) -> Dir {
        let d = base.join(format!("latscope-it-disk-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    pub fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }

    /// Names of what is in the directory.
    pub fn entries(&self) -> Vec<String> {
        std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn disk(args: &[&str]) -> Output {
    latscope()
        .arg("disk")
        .args(args)
        .arg("--no-save")
        .output()
        .unwrap()
}

/// Runs `latscope disk ARGS --json`, expects success, returns the JSON.
pub fn disk_json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = disk(&all);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Checks one direction of the JSON: counts, rates and ordered percentiles.
pub fn check_dir(doc: &Value, dir: &str, expect_ios: bool) {
    let d = &doc[dir];
    let ios = d["ios"].as_u64().unwrap();
    assert_eq!(ios > 0, expect_ios, "{dir}: {d}");
    if !expect_ios {
        return;
    }
    let secs = doc["duration_s"].as_f64().unwrap();
    let iops = d["iops"].as_f64().unwrap();
    assert!((iops - ios as f64 / secs).abs() <= 0.01 * iops + 1.0, "{d}");
    let bs = doc["bs"].as_f64().unwrap();
    let bw = d["bw_mib_s"].as_f64().unwrap();
    assert!(
        (bw - iops * bs / 1048576.0).abs() <= 0.01 * bw + 0.01,
        "{d}"
    );
    let lat = &d["lat_us"];
    let order = ["min", "p50", "p90", "p99", "p999", "p9999", "max"];
    let v: Vec<f64> = order.iter().map(|k| lat[k].as_f64().unwrap()).collect();
    assert!(v.windows(2).all(|w| w[0] <= w[1]), "{lat}");
    assert!(v[0] > 0.0, "{lat}");
    assert!(lat["mean"].as_f64().unwrap() > 0.0);
}
