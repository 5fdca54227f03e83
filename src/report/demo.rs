//! `latscope demo`'s text after the diagnoses: what was planted and whether each was
//! found, what followed from it, what was found beyond it, and what to try next.

use std::path::PathBuf;

use crate::lab::demo::Tally;

/// The tally as lines.
pub fn tally(t: &Tally) -> String {
    let mut text = format!("planted problems: {}\n", t.planted.join(", "));
    if t.missing.is_empty() {
        text.push_str("all of them were found.\n");
    } else {
        text.push_str(&format!("NOT found: {}\n", t.missing.join(", ")));
    }
    for (id, why) in &t.follows {
        text.push_str(&format!("{id} follows from {why}.\n"));
    }
    if !t.unexpected.is_empty() {
        text.push_str(&format!(
            "also found, not planted: {}\n",
            t.unexpected.join(", ")
        ));
    }
    text
}

/// "What to try next": the HTML report (or why it was not written), the stored run,
/// and commands to go on with.
pub fn next_steps(html: &Result<PathBuf, String>, id: Option<&str>) -> String {
    let mut s = String::from("\nwhat to try next:\n");
    match html {
        Ok(p) => s.push_str(&format!(
            "  open {} in a browser (charts, findings)\n",
            p.display()
        )),
        Err(e) => s.push_str(&format!("  (the HTML report was not written: {e})\n")),
    }
    s.push_str(
        "  (`latscope` not on your PATH? `cargo install --path .` in the clone puts it there)\n",
    );
    if let Some(id) = id {
        s.push_str(&format!(
            "  latscope show {id}            print this run again\n"
        ));
    }
    s.push_str(
        "  latscope lab --listen 127.0.0.1:8080 --stall-every 3s --stall-for 500ms\n\
         \x20 latscope load http://127.0.0.1:8080/ -c 20 -d 15s   stalls on a fast route: periodic-spikes\n\
         \x20 latscope report last -o load.html                     its per-second timeline as a chart\n\
         \x20 latscope https://your.site/                            diagnose your own site\n",
    );
    s
}
