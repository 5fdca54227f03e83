//! `latscope disk` through the binary: every pattern, the JSON, --fsync, the text,
//! Ctrl-C and the saved run. Small files (8 MiB) and short runs (≤ 0.5 s) keep them
//! quick; each test checks that no test file is left behind.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::latscope;
use crate::util_disk::{check_dir, disk, disk_json, stderr, Dir};

/// Every pattern runs, touches only its directions, reports the disk JSON of
/// DESIGN.md, and leaves no file behind.
#[test]
fn each_pattern_reports_its_directions() {
    let dir = Dir::tmp("patterns");
    for (pattern, reads, writes) in [
        ("randread", true, false),
        ("randwrite", false, true),
        ("randrw", true, true),
        ("read", true, false),
        ("write", false, true),
    ] {
        let doc = disk_json(&[
            dir.path(),
            "--pattern",
            pattern,
            "--size",
            "8MB",
            "-d",
            "500ms",
            "--iodepth",
            "2",
        ]);
        assert_eq!(doc["kind"], "disk");
        assert_eq!(doc["pattern"], pattern);
        assert_eq!(doc["bs"], 4096);
        assert_eq!(doc["iodepth"], 2);
        assert_eq!(doc["fsync"], false);
        assert_eq!(doc["path"], dir.path());
        assert_eq!(doc["size"], 8 * 1024 * 1024);
        assert!(["io_uring", "threads"].contains(&doc["engine"].as_str().unwrap()));
        assert!(doc["direct"].is_boolean());
        assert!(doc["findings"].is_array());
        assert!(doc.get("fsync").is_some_and(Value::is_boolean));
        check_dir(&doc, "read", reads);
        check_dir(&doc, "write", writes);
        // Reads need a laid-out file; writes alone do not.
        assert_eq!(doc["laid_out"], reads, "{pattern}");
        let tl = doc["timeline"].as_array().unwrap();
        assert!(!tl.is_empty());
        assert_eq!(tl[0]["t"], 0);
        let total: f64 = tl
            .iter()
            .map(|s| {
                s[if reads { "read_iops" } else { "write_iops" }]
                    .as_f64()
                    .unwrap()
            })
            .sum();
        assert!(total > 0.0);
        assert!(dir.entries().is_empty(), "{pattern}: {:?}", dir.entries());
    }
}

/// randrw honours --mix roughly, on both engines, and says which engine ran.
#[test]
fn mix_and_engines() {
    let dir = Dir::tmp("mix");
    for engine in ["threads", "uring"] {
        let out = disk(&[
            dir.path(),
            "--pattern",
            "randrw",
            "--mix",
            "80",
            "--size",
            "8MB",
            "-d",
            "500ms",
            "--iodepth",
            "4",
            "--engine",
            engine,
            "--json",
        ]);
        if engine == "uring" && !out.status.success() {
            // io_uring may be disabled (seccomp, sysctl): then it must say so.
            assert!(
                stderr(&out).contains("io_uring is not available"),
                "{}",
                stderr(&out)
            );
            continue;
        }
        assert!(out.status.success(), "{}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let want = if engine == "uring" {
            "io_uring"
        } else {
            "threads"
        };
        assert_eq!(doc["engine"], want);
        assert_eq!(doc["mix"], 80);
        let r = doc["read"]["ios"].as_f64().unwrap();
        let w = doc["write"]["ios"].as_f64().unwrap();
        assert!(r + w >= 100.0, "{doc}");
        let pct = r / (r + w);
        assert!((0.7..=0.9).contains(&pct), "{engine}: read share {pct}");
    }
    assert!(dir.entries().is_empty());
}

/// --fsync times fdatasync on its own: one per write, in the JSON and the text.
#[test]
fn fsync_is_reported_on_its_own() {
    let dir = Dir::tmp("fsync");
    let doc = disk_json(&[
        dir.path(),
        "--pattern",
        "randwrite",
        "--fsync",
        "--size",
        "8MB",
        "-d",
        "500ms",
    ]);
    assert!(doc["fsync"]["count"].as_u64().is_some(), "{doc}");
    let syncs = doc["fsync"]["count"].as_u64().unwrap();
    let writes = doc["write"]["ios"].as_u64().unwrap();
    assert!(
        syncs > 0 && syncs <= writes && writes - syncs <= 1,
        "{syncs} {writes}"
    );
    let p99 = doc["fsync"]["lat_us"]["p99"].as_f64().unwrap();
    assert!(p99 > 0.0);
    assert!(doc["timeline"][0]["fsyncs"].as_u64().unwrap() > 0);

    let out = disk(&[
        dir.path(),
        "--pattern",
        "randrw",
        "--fsync",
        "--size",
        "8MB",
        "-d",
        "300ms",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("fdatasync ("), "{text}");
    assert!(text.contains("fdatasync after each write"), "{text}");
    assert!(text.contains("fsync p99"), "{text}");
    // Without --fsync there is no fsync object.
    let doc = disk_json(&[
        dir.path(),
        "--pattern",
        "randwrite",
        "--size",
        "8MB",
        "-d",
        "200ms",
    ]);
    assert_eq!(doc["fsync"], false);
    assert!(dir.entries().is_empty());
}

/// The text output names the file, the engine and the percentiles to p99.99; no
/// progress goes to a stderr that is not a terminal.
#[test]
fn text_output_reads_like_fio() {
    let dir = Dir::tmp("text");
    let out = disk(&[
        dir.path(),
        "--size",
        "8MB",
        "-d",
        "300ms",
        "--engine",
        "threads",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "disk ",
        "randrw 70% reads",
        "engine threads",
        "IOPS",
        "MiB/s",
        "p99.99",
        "per second",
        "findings",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    // Progress is for terminals only: nothing on a piped stderr.
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    assert!(dir.entries().is_empty());
}

/// Ctrl-C during the measurement: the run stops at once, prints what it measured,
/// exits 0 and removes the test file.
#[test]
fn sigint_keeps_results_and_removes_the_file() {
    let dir = Dir::tmp("sigint");
    let mut child = latscope()
        .args([
            "disk",
            dir.path(),
            "--pattern",
            "randread",
            "--size",
            "8MB",
            "-d",
            "60s",
            "--no-save",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    // The header line is printed when the measurement starts.
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.starts_with("disk "), "{line:?}");
    assert_eq!(
        dir.entries().len(),
        1,
        "the test file exists while measuring"
    );
    let t = Instant::now();
    // SAFETY: plain kill(2) to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "no exit after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert!(status.success(), "{status:?}\n{rest}");
    assert!(rest.contains("interrupted after"), "{rest}");
    assert!(rest.contains("read "), "{rest}");
    assert!(dir.entries().is_empty(), "{:?}", dir.entries());
}

/// The run is saved: `latscope runs` lists it with its headline numbers and `show`
/// prints the same text.
#[test]
fn saved_run_can_be_listed_and_shown() {
    let dir = Dir::tmp("saved");
    let db = dir.0.join("runs.db");
    let data = Dir::tmp("saved-data");
    let out = latscope()
        .args([
            "disk",
            data.path(),
            "--pattern",
            "randread",
            "--size",
            "8MB",
            "-d",
            "300ms",
        ])
        .arg("--db")
        .arg(&db)
        .args(["--label", "disk-it"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    let list = latscope()
        .args(["runs", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let runs: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(runs[0]["kind"], "disk");
    assert!(runs[0]["headline"]["read_iops"].as_f64().unwrap() > 0.0);
    let show = latscope()
        .args(["show", "disk-it", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(show.status.success(), "{}", stderr(&show));
    // The run's text ends with where it went (not part of the stored text).
    let (text, id) = printed
        .rsplit_once("\n  saved as run ")
        .unwrap_or_else(|| panic!("no `saved as run` line: {printed}"));
    assert_eq!(Some(id.trim()), runs[0]["id"].as_str(), "{printed}");
    assert_eq!(String::from_utf8_lossy(&show.stdout), text);
    let json = latscope()
        .args(["show", "disk-it", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["kind"], "disk");
    // The histograms are stored: the whole run's and each second's.
    let export = latscope()
        .args(["export", "disk-it", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(export.status.success(), "{}", stderr(&export));
    let exported: Value = serde_json::from_slice(&export.stdout).unwrap();
    let hists = exported["run"]["histograms"].as_array().unwrap();
    let has = |name: &str, second: Value| {
        hists
            .iter()
            .any(|h| h["name"] == name && h["second"] == second)
    };
    assert!(has("read", Value::Null), "{hists:?}");
    assert!(has("read", Value::from(0)), "{hists:?}");
    assert!(
        !hists.iter().any(|h| h["name"] == "write"),
        "a randread run has no writes"
    );
    assert!(data.entries().is_empty());
}

/// On a terminal (a pty from util-linux `script`), progress shows on stderr: the
/// layout, then each second's IOPS.
#[test]
fn progress_on_a_terminal() {
    if !crate::util_require::require("script") {
        return;
    }
    let dir = Dir::tmp("tty");
    let cmd = format!(
        "{} disk {} --pattern randread --size 8MB -d 1s --no-save",
        env!("CARGO_BIN_EXE_latscope"),
        dir.path()
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("laying out the test file"), "{text}");
    assert!(text.contains("1/1 s  read "), "{text}");
    assert!(dir.entries().is_empty());
}
