//! Nothing lost, nothing leaked (issue 15), for the store: a run the store cannot take
//! is written to a file and the command exits 1; a stdout that cannot be written does
//! not lose the run; processes creating one new store at once all succeed; imports
//! are checked field by field and histogram by histogram; secrets are redacted in
//! everything stored; terminal escapes from a file or server never reach the
//! terminal; an empty `LATSCOPE_DB` is the default store; a read-only store is read.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::store::{record, run_ok, temp_dir, write_export};
use crate::util_hostile::{run_cmd, stderr, stdout};

const LIMIT: Duration = Duration::from_secs(60);

fn latscope_in(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_latscope"));
    c.current_dir(dir);
    c
}

/// The export files latscope wrote in `dir` for runs it could not store.
fn fallbacks(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("latscope-run-") && n.ends_with(".json"))
        })
        .collect();
    v.sort();
    v
}

/// Issue 15 item 1: a store that cannot be written (a corrupt file, a directory,
/// /dev/null) does not drop a measured run with exit 0: the run is written to an
/// export file (beside the store, or in the working directory when the store is a
/// device), stderr says where, the exit code is 1, and the file imports into a good
/// store. `--no-save` is unchanged (exit 0, nothing written).
#[test]
fn failed_save_writes_the_run_to_a_file_and_exits_1() {
    let lab = crate::util_lab::healthy();
    let url = lab.url("/");
    let dir = temp_dir("failed-save");
    let corrupt = dir.join("corrupt.db");
    std::fs::write(&corrupt, vec![0x5a; 8192]).unwrap();
    let as_dir = dir.join("a-directory.db");
    std::fs::create_dir_all(&as_dir).unwrap();
    let cwd = dir.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let good = dir.join("good.db");
    for (db, written_in) in [
        (corrupt.clone(), dir.clone()),
        (as_dir.clone(), dir.clone()),
        (PathBuf::from("/dev/null"), cwd.clone()),
    ] {
        let before = fallbacks(&written_in).len();
        let mut c = latscope_in(&cwd);
        c.args(["probe", &url, "-n", "1", "--db"]).arg(&db);
        let (out, _) = run_cmd(c, LIMIT);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{db:?}: {err}");
        assert!(
            err.contains("not saved") && err.contains("written to"),
            "{err}"
        );
        assert!(
            stdout(&out).contains("127.0.0.1"),
            "the run is still printed"
        );
        let files = fallbacks(&written_in);
        assert_eq!(files.len(), before + 1, "{db:?}: {err}");
        let file = files
            .iter()
            .find(|f| err.contains(&f.display().to_string()))
            .unwrap_or_else(|| panic!("stderr names the file: {err}"));
        let id = run_ok(&[
            "import",
            file.to_str().unwrap(),
            "--db",
            good.to_str().unwrap(),
        ]);
        assert!(!id.trim().is_empty());
    }
    let listed: serde_json::Value =
        serde_json::from_str(&run_ok(&["runs", "--json", "--db", good.to_str().unwrap()])).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 3);
    // --no-save: nothing to lose, nothing written, exit 0.
    let before = fallbacks(&dir).len();
    let mut c = latscope_in(&cwd);
    c.args(["probe", &url, "-n", "1", "--no-save", "--db"])
        .arg(&corrupt);
    let (out, _) = run_cmd(c, LIMIT);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(fallbacks(&dir).len(), before);
}

/// Issue 15 item 2: a stdout that cannot be written (`> /dev/full`) fails the
/// command, but the run was saved first (probe, load, diagnose, disk).
#[test]
fn full_stdout_does_not_lose_the_run() {
    let lab = crate::util_lab::healthy();
    let url = lab.url("/");
    let dir = temp_dir("dev-full");
    let db = dir.join("runs.db");
    let db = db.to_str().unwrap();
    let data = dir.join("data.bin");
    std::fs::write(&data, vec![1u8; 1 << 20]).unwrap();
    let data = data.to_str().unwrap();
    for args in [
        vec!["probe", url.as_str(), "-n", "1", "--label", "full-probe"],
        vec![
            "load",
            url.as_str(),
            "-n",
            "5",
            "-c",
            "1",
            "--label",
            "full-load",
        ],
        vec![
            "diagnose",
            url.as_str(),
            "-n",
            "1",
            "--no-load",
            "--label",
            "full-diagnose",
        ],
        vec![
            "disk",
            data,
            "-d",
            "1s",
            "--buffered",
            "--pattern",
            "randread",
            "--label",
            "full-disk",
        ],
    ] {
        let mut c = latscope_in(&dir);
        c.args(&args).args(["--db", db]);
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        c.stdout(full).stdin(Stdio::null()).stderr(Stdio::piped());
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("space"),
            "{args:?}"
        );
    }
    let listed = run_ok(&["runs", "--db", db]);
    for label in ["full-probe", "full-load", "full-diagnose", "full-disk"] {
        assert!(listed.contains(label), "{label}: {listed}");
    }
}

/// Issue 15 item 3: processes creating one new store at the same moment all
/// succeed — creating it (schema, WAL switch) waits for the other writer as every
/// later write does. Ten fresh stores, eight importers each, started together.
#[test]
fn processes_creating_one_new_store_all_succeed() {
    let dir = temp_dir("create-race");
    let files: Vec<PathBuf> = (0..8)
        .map(|i| write_export(&dir, &record(&format!("c{i:09}"), "h")))
        .collect();
    for round in 0..10 {
        let db = dir.join(format!("fresh-{round}.db"));
        let children: Vec<_> = files
            .iter()
            .map(|f| {
                Command::new(env!("CARGO_BIN_EXE_latscope"))
                    .arg("import")
                    .arg(f)
                    .arg("--db")
                    .arg(&db)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let listed: serde_json::Value =
            serde_json::from_str(&run_ok(&["runs", "--json", "--db", db.to_str().unwrap()]))
                .unwrap();
        assert_eq!(listed.as_array().unwrap().len(), 8);
    }
}

/// Issue 15 item 9: `import` refuses (exit 2, naming the problem) a histogram that
/// claims a 2 GB payload, a truncated histogram, an unknown kind and a summary that
/// is not an object — under a 512 MB address-space limit, so a regression that
/// allocates what the file claims fails instead of eating the machine.
#[test]
fn import_refuses_crafted_and_truncated_files() {
    let dir = temp_dir("import-bad");
    let db = dir.join("runs.db");
    let good = record("ab00000001", "h");
    let mut huge = good.clone();
    huge.id = "ab00000002".into();
    huge.histograms[0].v2 = crafted_histogram(0x7fff_fff0);
    let mut truncated = good.clone();
    truncated.id = "ab00000003".into();
    let n = truncated.histograms[0].v2.len();
    truncated.histograms[0].v2.truncate(n - 4);
    let mut kind = good.clone();
    kind.id = "ab00000004".into();
    kind.kind = "rm -rf".into();
    let mut summary = good.clone();
    summary.id = "ab00000005".into();
    summary.summary = json!("text");
    for (r, says) in [
        (&huge, "histograms[0]"),
        (&truncated, "truncated"),
        (&kind, "run.kind"),
        (&summary, "run.summary"),
    ] {
        let file = write_export(&dir, r);
        let (out, _) = crate::util_hostile::run_capped(
            &[
                "import",
                file.to_str().unwrap(),
                "--db",
                db.to_str().unwrap(),
            ],
            512 * 1024,
            LIMIT,
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", r.id);
        assert!(err.contains(says), "{}: {err}", r.id);
    }
    let file = write_export(&dir, &good);
    run_ok(&[
        "import",
        file.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    let listed = run_ok(&["runs", "--db", db.to_str().unwrap()]);
    assert!(
        listed.contains("ab00000001") && !listed.contains("ab00000002"),
        "{listed}"
    );
}

/// A V2-deflate histogram whose inner header claims a payload of `claim` bytes.
fn crafted_histogram(claim: u32) -> Vec<u8> {
    let mut inner = Vec::new();
    inner.extend(0x1c84_9313u32.to_be_bytes());
    inner.extend(claim.to_be_bytes());
    inner.extend(0u32.to_be_bytes());
    inner.extend(3u32.to_be_bytes());
    inner.extend(1000u64.to_be_bytes());
    inner.extend(3_600_000_000_000u64.to_be_bytes());
    inner.extend(1.0f64.to_be_bytes());
    inner.extend([0u8; 64]);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut z, &inner).unwrap();
    let z = z.finish().unwrap();
    let mut out = 0x1c84_9314u32.to_be_bytes().to_vec();
    out.extend((z.len() as u32).to_be_bytes());
    out.extend(z);
    out
}

/// Issue 15 items 10 and 11: URL credentials, secret query parameters and secret
/// headers (built-in list, suffixes, `--redact-header`) never reach the store:
/// runs, show, show --json, export all come back without them, with the host and
/// path kept. Also for a load run's endpoint names (histograms, `--raw`).
#[test]
fn secrets_in_urls_and_headers_are_not_stored() {
    let lab = crate::util_lab::healthy();
    let dir = temp_dir("secrets");
    let db = dir.join("runs.db");
    let db = db.to_str().unwrap();
    let port = lab
        .url("/")
        .split(':')
        .nth(2)
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let url = format!(
        "http://alice:pa55word@127.0.0.1:{port}/text/1k?page=2&access_token=T0KEN&api_key=K3Y"
    );
    let headers = [
        "X-Api-Key: hdr-apikey",
        "X-Vault-Token: hdr-vault",
        "Proxy-Authorization: Basic hdr-proxy",
        "X-Client-Secret: hdr-secret",
        "X-Custom-Thing: hdr-custom",
    ];
    let raw = dir.join("raw.csv");
    let mut common = vec!["--db", db, "--redact-header", "x-custom-thing"];
    for h in &headers {
        common.extend(["-H", h]);
    }
    let mut probe = vec!["probe", url.as_str(), "-n", "1"];
    probe.extend(&common);
    run_ok(&probe);
    let mut load = vec![
        "load",
        url.as_str(),
        "-n",
        "5",
        "-c",
        "1",
        "--raw",
        raw.to_str().unwrap(),
    ];
    load.extend(&common);
    run_ok(&load);
    let secrets = [
        "pa55word",
        "alice",
        "T0KEN",
        "K3Y",
        "hdr-apikey",
        "hdr-vault",
        "hdr-proxy",
        "hdr-secret",
        "hdr-custom",
    ];
    let mut seen = String::new();
    seen.push_str(&run_ok(&["runs", "--db", db]));
    seen.push_str(&run_ok(&["runs", "--json", "--db", db]));
    for run in ["last", "last~1"] {
        seen.push_str(&run_ok(&["show", run, "--db", db]));
        seen.push_str(&run_ok(&["show", run, "--json", "--db", db]));
        seen.push_str(&run_ok(&["export", run, "--db", db]));
    }
    seen.push_str(&std::fs::read_to_string(&raw).unwrap());
    for s in secrets {
        assert!(!seen.contains(s), "'{s}' was stored: {seen}");
    }
    assert!(
        seen.contains(&format!("127.0.0.1:{port}/text/1k?page=2")),
        "{seen}"
    );
    assert!(seen.contains("[redacted]"));
}

/// Issue 15 items 12 and 13: an imported file is redacted as a run of this latscope
/// would be, and its text (terminal escapes that set the title and clear the screen)
/// reaches the terminal with the escapes shown, not obeyed — in `show` and `runs`.
#[test]
fn import_is_redacted_and_shows_no_terminal_escapes() {
    let dir = temp_dir("import-escapes");
    let db = dir.join("runs.db");
    let db = db.to_str().unwrap();
    let mut r = record("ee00000001", "h");
    r.target = "https://bob:hunter2@example.test/x?token=abc\x1b[2J".into();
    r.label = Some("evil\x1b]0;pwned\x07".into());
    r.text = "hello \x1b]0;pwned\x07\x1b[2J\x1b[H world\nAuthorization: Bearer zzz\n".into();
    r.config = json!({"headers": ["X-Auth-Token: sekrit"], "url": "http://u:p@h/?sig=s1"});
    let file = write_export(&dir, &r);
    run_ok(&["import", file.to_str().unwrap(), "--db", db]);
    let shown = run_ok(&["show", "ee00000001", "--db", db]);
    assert!(
        !shown.contains('\x1b') && !shown.contains('\x07'),
        "{shown:?}"
    );
    assert!(
        shown.contains("hello") && shown.contains("world"),
        "{shown:?}"
    );
    assert!(!shown.contains("zzz"), "{shown:?}");
    let listed = run_ok(&["runs", "--db", db]);
    assert!(
        !listed.contains('\x1b') && !listed.contains('\x07'),
        "{listed:?}"
    );
    let exported = run_ok(&["export", "ee00000001", "--db", db]);
    for s in ["hunter2", "sekrit", "s1\"", "token=abc"] {
        assert!(!exported.contains(s), "'{s}' in {exported}");
    }
    assert!(exported.contains("example.test/x"), "{exported}");
}

/// Issue 15 item 21: `LATSCOPE_DB=` (set, empty) is the default store, not a usage
/// error; a store on a read-only mount is still listed and shown, and says it is
/// read-only (skipped where no private mount namespace can be made).
#[test]
fn empty_latscope_db_and_read_only_store() {
    let dir = temp_dir("ro-store");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_latscope"))
        .args(["runs"])
        .env("LATSCOPE_DB", "")
        .env("HOME", &home)
        .env_remove("XDG_DATA_HOME")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(".local/share/latscope/runs.db"));

    let ro = dir.join("ro");
    std::fs::create_dir_all(&ro).unwrap();
    let db = ro.join("runs.db");
    let file = write_export(&dir, &record("ff00000001", "h"));
    run_ok(&[
        "import",
        file.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    let bin = env!("CARGO_BIN_EXE_latscope");
    let script = format!(
        "mount --bind {d} {d} && mount -o remount,ro,bind {d} || exit 77; \
         {bin} runs --db {db} && {bin} show ff00000001 --db {db}",
        d = ro.display(),
        db = db.display()
    );
    let (out, _) = run_cmd(
        {
            let mut c = Command::new("unshare");
            c.args(["--mount", "--propagation", "private", "sh", "-c", &script]);
            c
        },
        LIMIT,
    );
    let no_mount_ns = out.status.code() == Some(77) || stderr(&out).contains("unshare");
    let why = format!("no private mount namespace ({})", stderr(&out));
    if !crate::util_require::require_that(!no_mount_ns, &why, "run as root with unshare") {
        return;
    }
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("read-only"), "{err}");
    let text = stdout(&out);
    assert!(
        text.contains("ff00000001") && text.contains("123 req/s"),
        "{text}"
    );
}

/// Issue 15 item 10: a run stored by an older latscope, secrets and all, comes out of
/// `runs`, `show` and `export` redacted.
#[test]
fn old_unredacted_runs_are_redacted_on_the_way_out() {
    let dir = temp_dir("old-secrets");
    let db = dir.join("runs.db");
    let mut r = record("0d00000001", "h");
    r.target = "http://carol:letmein@old.test/p?api_key=OLDKEY".into();
    r.text = "GET http://carol:letmein@old.test/p?api_key=OLDKEY\nCookie: sid=OLDSID\n".into();
    r.summary = json!({"kind": "load", "url": "http://old.test/?token=OLDTOKEN"});
    let mut store = latscope::store::Store::open(&db).unwrap();
    store.save(&r).unwrap();
    drop(store);
    let db = db.to_str().unwrap();
    let mut seen = run_ok(&["runs", "--db", db]);
    seen.push_str(&run_ok(&["runs", "--json", "--db", db]));
    seen.push_str(&run_ok(&["show", "0d00000001", "--db", db]));
    seen.push_str(&run_ok(&["show", "0d00000001", "--json", "--db", db]));
    seen.push_str(&run_ok(&["export", "0d00000001", "--db", db]));
    for s in ["letmein", "OLDKEY", "OLDSID", "OLDTOKEN"] {
        assert!(!seen.contains(s), "'{s}' shown: {seen}");
    }
    assert!(seen.contains("old.test/p"), "{seen}");
}
