//! Printing a finished run: its JSON document with `--json`, otherwise its text.

use std::io::Write;

/// Writes `doc` (pretty JSON and a newline) when `json`, else `text`, to stdout, and
/// flushes it before the caller goes on to save or report. A closed stdout
/// (`latscope … | head`) is not an error: the run is still saved and its exit code
/// stands.
pub(crate) fn print(json: bool, doc: &impl serde::Serialize, text: &str) -> anyhow::Result<()> {
    let write = || -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        if json {
            // URL credentials and token parameters are redacted as the store
            // redacts them, unless --show-secrets (crate::redact).
            let mut doc = serde_json::to_value(doc).map_err(std::io::Error::from)?;
            crate::redact::json_for_output(&mut doc);
            serde_json::to_writer_pretty(&mut out, &doc).map_err(std::io::Error::from)?;
            writeln!(out)?;
        } else {
            out.write_all(clean(&crate::redact::for_output(text)).as_bytes())?;
        }
        out.flush()
    };
    match write() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Prints a document already turned into JSON as [`print`] does, with its `first`
/// field first and the rest in their usual order (a `serde_json::Value` object keeps
/// its keys sorted, so [`print`]'s redaction pass cannot keep an order of its own):
/// `latscope disk`'s verdict leads its document.
pub(crate) fn print_first(
    json: bool,
    mut doc: serde_json::Value,
    first: &str,
    text: &str,
) -> anyhow::Result<()> {
    if !json {
        return print(false, &(), text);
    }
    crate::redact::json_for_output(&mut doc);
    let write = || -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &FirstKey(&doc, first))
            .map_err(std::io::Error::from)?;
        writeln!(out)?;
        out.flush()
    };
    match write() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// A JSON object serialized with one key first, the rest in their order.
struct FirstKey<'a>(&'a serde_json::Value, &'a str);

impl serde::Serialize for FirstKey<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let first = self.1;
        match self.0.as_object() {
            Some(map) => s.collect_map(
                map.get_key_value(first)
                    .into_iter()
                    .chain(map.iter().filter(|(k, _)| *k != first)),
            ),
            None => self.0.serialize(s),
        }
    }
}

/// Writes `text` to stdout as it is, secrets included: for documents whose
/// secrets are meant to be there (`k8s job`'s Secret manifest), never for a run's
/// output.
pub(crate) fn say_verbatim(text: &str) -> anyhow::Result<()> {
    let write = || -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        out.write_all(clean(text).as_bytes())?;
        out.flush()
    };
    match write() {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Writes `text` to stdout as [`print`] does, for the lines a command adds around
/// its result ("saved as run …"): never `print!`, which panics on a closed pipe.
pub(crate) fn say(text: &str) -> anyhow::Result<()> {
    print(false, &(), text)
}

/// The line every saving command ends its text with — `saved as run ID`, the name
/// `show`, `compare`, `report` and `export` take — unless the output is `--json` (the
/// id is in the store; a JSON reader wants one document), `--quiet`, or nothing was
/// stored.
pub(crate) fn say_saved(json: bool, saved: &super::saving::Saved) -> anyhow::Result<()> {
    match saved.id() {
        Some(id) if !json && !crate::report::progress::quiet() => {
            say(&format!("\n  saved as run {id}\n"))
        }
        _ => Ok(()),
    }
}

/// Text for the terminal with every control character but newline and tab shown as
/// `\xNN` (or `\u{NNNN}`): what a server or a stored/imported file supplied (a
/// header, a reason phrase, a run's text) cannot set the title, clear the screen or
/// rewrite earlier lines. latscope's own stdout text holds no escapes.
pub(crate) fn clean(text: &str) -> std::borrow::Cow<'_, str> {
    crate::visible::visible(text)
}

#[cfg(test)]
mod tests {
    #[test]
    fn clean_shows_escapes_and_keeps_newlines() {
        assert_eq!(
            super::clean("a\x1b]0;pwned\x07b\n\tc\r"),
            "a\\x1b]0;pwned\\x07b\n\tc\\x0d"
        );
        assert_eq!(super::clean("plain\n"), "plain\n");
    }
}
