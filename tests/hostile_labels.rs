//! Issue 28 item 13: escape codes in an imported run's label reached `export
//! --format openmetrics` and the HTML report raw (only the terminal was cleaned).
//! Every output now shows them as `\x1b` text: OpenMetrics, HTML (and its SVG
//! charts), CSV, as the terminal does.

use std::time::Duration;

use crate::hostile_py::measure;
use crate::util::temp_dir;
use crate::util_hostile::{response, Hostile, Reply};

const LIMIT: Duration = Duration::from_secs(60);
const EVIL: &str = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m";

#[test]
fn an_imported_label_cannot_smuggle_escape_codes() {
    let s = Hostile::start(|_| Reply::Bytes(response("200 OK", &[], "ok")));
    let dir = temp_dir("evil-label");
    let (db1, db2) = (dir.join("a.db"), dir.join("b.db"));
    let (db1, db2) = (db1.to_str().unwrap(), db2.to_str().unwrap());
    let m = measure(
        &[
            "load",
            "-n",
            "50",
            "-c",
            "2",
            "--db",
            db1,
            "--label",
            "plain",
            &s.url("/"),
        ],
        LIMIT,
    );
    assert_eq!(m.code(), Some(0), "{}", m.stderr());
    let export = dir.join("run.json");
    let m = measure(
        &[
            "export",
            "last",
            "--db",
            db1,
            "-o",
            export.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(m.code(), Some(0), "{}", m.stderr());
    // The hostile file: the label carries OSC and CSI sequences (JSON-escaped).
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    doc["run"]["label"] = serde_json::json!(EVIL);
    std::fs::write(&export, serde_json::to_string(&doc).unwrap()).unwrap();
    let m = measure(&["import", export.to_str().unwrap(), "--db", db2], LIMIT);
    assert_eq!(m.code(), Some(0), "{}", m.stderr());

    let om = dir.join("run.om");
    let html = dir.join("report.html");
    let csv = dir.join("report.csv");
    for (args, file) in [
        (
            vec![
                "export",
                "last",
                "--db",
                db2,
                "--format",
                "openmetrics",
                "-o",
                om.to_str().unwrap(),
            ],
            &om,
        ),
        (
            vec!["report", "last", "--db", db2, "-o", html.to_str().unwrap()],
            &html,
        ),
        (
            vec![
                "report",
                "last",
                "--db",
                db2,
                "-o",
                html.to_str().unwrap(),
                "--csv",
                csv.to_str().unwrap(),
            ],
            &csv,
        ),
    ] {
        let m = measure(&args, LIMIT);
        assert_eq!(m.code(), Some(0), "{args:?}: {}", m.stderr());
        let bytes = std::fs::read(file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !bytes.contains(&0x1b),
            "{args:?}: a raw ESC in {}",
            file.display()
        );
        assert!(
            !bytes.contains(&0x07),
            "{args:?}: a raw BEL in {}",
            file.display()
        );
        assert!(
            !text.contains('\u{9b}'),
            "{args:?}: a raw CSI in {}",
            file.display()
        );
        assert!(text.contains("evil"), "{args:?}: the label is still shown");
        assert!(
            text.contains("x1b"),
            "{args:?}: the escape is shown as text"
        );
    }
    // The terminal was already clean; it stays so.
    for args in [vec!["runs", "--db", db2], vec!["show", "last", "--db", db2]] {
        let m = measure(&args, LIMIT);
        assert!(!m.out.stdout.contains(&0x1b), "{args:?}");
    }
}
