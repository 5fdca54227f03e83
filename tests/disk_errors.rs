//! `latscope disk` on existing files, O_DIRECT and its fallback, and the error
//! cases (exit 2 for usage, 1 for run failures).

use std::path::Path;

use serde_json::Value;

use crate::util_disk::{disk, disk_json, stderr, Dir};

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
    let hint = "chattr (e2fsprogs) on a filesystem that supports +i, or a non-root user";
    if !crate::util_require::require_that(locked_ok, "cannot lock a directory here", hint) {
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
    if !crate::util_require::require_that(shm.is_dir(), "no /dev/shm", "mount tmpfs on /dev/shm") {
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
