//! `latscope disk` through the binary: every pattern, the JSON, --fsync, the test
//! file's cleanup (also after Ctrl-C), existing files, O_DIRECT and its fallback, and
//! the error cases. Small files (8 MiB) and short runs (≤ 1 s) keep them quick.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::latscope;

/// A fresh directory, removed when dropped. `base` is the parent.
struct Dir(PathBuf);

impl Dir {
    /// Under the system temp directory (may be tmpfs elsewhere).
    fn tmp(name: &str) -> Dir {
        Dir::under(&std::env::temp_dir(), name)
    }

    /// Under the build's target directory: a real filesystem, for O_DIRECT tests.
    fn real(name: &str) -> Dir {
        Dir::under(Path::new(env!("CARGO_TARGET_TMPDIR")), name)
    }

    fn under(base: &Path, name: &str) -> Dir {
        let d = base.join(format!("latscope-it-disk-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }

    /// Names of what is in the directory.
    fn entries(&self) -> Vec<String> {
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

fn disk(args: &[&str]) -> Output {
    latscope()
        .arg("disk")
        .args(args)
        .arg("--no-save")
        .output()
        .unwrap()
}

/// Runs `latscope disk ARGS --json`, expects success, returns the JSON.
fn disk_json(args: &[&str]) -> Value {
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

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Checks one direction of the JSON: counts, rates and ordered percentiles.
fn check_dir(doc: &Value, dir: &str, expect_ios: bool) {
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

/// The text output names the file, the engine and the percentiles to p99.99.
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

/// An existing file is only read: its content is unchanged and it stays; write
/// patterns need --write; with --write it is written and still stays.
#[test]
fn existing_file_is_read_only_unless_write() {
    let dir = Dir::tmp("existing");
    let file = dir.0.join("data.bin");
    let content: Vec<u8> = (0..4 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&file, &content).unwrap();
    let f = file.to_str().unwrap();

    let doc = disk_json(&[f, "--pattern", "randread", "-d", "300ms"]);
    assert_eq!(doc["created"], false);
    assert_eq!(
        doc["size"],
        4 * 1024 * 1024,
        "defaults to the file's length"
    );
    assert!(doc["read"]["ios"].as_u64().unwrap() > 0);
    assert!(std::fs::read(&file).unwrap() == content, "content changed");

    let out = disk(&[f, "--pattern", "randrw", "-d", "200ms"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--write"), "{}", stderr(&out));
    let out = disk(&[f, "--pattern", "randread", "--precondition", "-d", "200ms"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(std::fs::read(&file).unwrap() == content, "content changed");

    let doc = disk_json(&[f, "--pattern", "randwrite", "--write", "-d", "200ms"]);
    assert!(doc["write"]["ios"].as_u64().unwrap() > 0);
    assert!(file.exists(), "an existing file is never removed");
    assert_eq!(
        std::fs::metadata(&file).unwrap().len(),
        content.len() as u64
    );
}

/// Bad input exits 2 with a message naming the problem; nothing is left behind.
#[test]
fn usage_errors_exit_2() {
    let dir = Dir::real("usage");
    let missing = dir.0.join("nope");
    let small = dir.0.join("small.bin");
    std::fs::write(&small, vec![1u8; 1024 * 1024]).unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![missing.to_str().unwrap()], "no such file"),
        (
            vec![
                small.to_str().unwrap(),
                "--size",
                "8MB",
                "--pattern",
                "randread",
            ],
            "too small",
        ),
        (
            vec![
                small.to_str().unwrap(),
                "--bs",
                "2MB",
                "--pattern",
                "randread",
            ],
            "too small",
        ),
        (
            vec![dir.path(), "--pattern", "randread", "--fsync"],
            "--fsync",
        ),
        (vec![dir.path(), "--bs", "0"], "--bs"),
        (vec![dir.path(), "--size", "1k"], "--size"),
        (vec![dir.path(), "-d", "0"], "--duration"),
        (
            vec![dir.path(), "--bs", "1000", "--size", "1MB"],
            "alignment",
        ),
        (vec![dir.path(), "--pattern", "sideways"], "sideways"),
    ];
    for (args, want) in cases {
        let out = disk(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(dir.entries(), ["small.bin"]);
}

/// Run failures exit 1: not enough space, no permission to create the file.
#[test]
fn run_failures_exit_1() {
    let dir = Dir::tmp("fail");
    let out = disk(&[dir.path(), "--size", "100T"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("no space"), "{}", stderr(&out));
    assert!(dir.entries().is_empty());

    // A directory nobody may write into. root ignores modes; an immutable
    // directory stops it too.
    let locked = Dir::real("locked");
    let root = unsafe { libc::geteuid() } == 0;
    let locked_ok = if root {
        std::process::Command::new("chattr")
            .args(["+i", locked.path()])
            .status()
            .is_ok_and(|s| s.success())
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&locked.0, std::fs::Permissions::from_mode(0o500)).is_ok()
    };
    if !locked_ok {
        eprintln!("skipping the permission case: cannot lock a directory here");
        return;
    }
    let out = disk(&[locked.path(), "--size", "1MB", "-d", "100ms"]);
    if root {
        let _ = std::process::Command::new("chattr")
            .args(["-i", locked.path()])
            .status();
    }
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("permission denied"),
        "{}",
        stderr(&out)
    );
}

/// On a real filesystem the default is O_DIRECT; --buffered turns it off without
/// a warning; --direct works where the filesystem allows it.
#[test]
fn direct_io_on_a_real_filesystem() {
    let dir = Dir::real("direct");
    let doc = disk_json(&[
        dir.path(),
        "--pattern",
        "randread",
        "--size",
        "8MB",
        "-d",
        "200ms",
    ]);
    let fs_direct = doc["direct"].as_bool().unwrap();
    let out = disk(&[
        dir.path(),
        "--pattern",
        "randread",
        "--size",
        "8MB",
        "-d",
        "200ms",
        "--buffered",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let buffered: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(buffered["direct"], false);
    assert!(!stderr(&out).contains("O_DIRECT"), "{}", stderr(&out));
    let out = disk(&[
        dir.path(),
        "--pattern",
        "randread",
        "--size",
        "8MB",
        "-d",
        "200ms",
        "--direct",
        "--json",
    ]);
    if fs_direct {
        assert!(out.status.success(), "{}", stderr(&out));
        let d: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(d["direct"], true);
        assert!(d["warnings"].as_array().unwrap().is_empty(), "{d}");
    } else {
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("O_DIRECT refused"),
            "{}",
            stderr(&out)
        );
    }
    assert!(dir.entries().is_empty());
}

/// tmpfs (/dev/shm): O_DIRECT works on new kernels; where it is refused, the run
/// falls back to buffered I/O and warns — it never fails by default.
#[test]
fn tmpfs_direct_or_fallback_with_warning() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        eprintln!("skipping: no /dev/shm");
        return;
    }
    let dir = Dir::under(shm, "tmpfs");
    let out = disk(&[
        dir.path(),
        "--pattern",
        "randread",
        "--size",
        "8MB",
        "-d",
        "200ms",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let warned = stderr(&out).contains("refuses O_DIRECT");
    assert_eq!(doc["direct"] == false, warned, "{doc} {}", stderr(&out));
    assert_eq!(
        doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("O_DIRECT")),
        warned
    );
    assert!(doc["read"]["ios"].as_u64().unwrap() > 0);
    assert!(dir.entries().is_empty());
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
    assert_eq!(String::from_utf8_lossy(&show.stdout), printed);
    let json = latscope()
        .args(["show", "disk-it", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["kind"], "disk");
    assert!(data.entries().is_empty());
}
