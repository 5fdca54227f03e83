//! Text made safe to show anywhere latscope writes it — a terminal, an HTML report,
//! an SVG chart, OpenMetrics or CSV, a Prometheus label: every control character but
//! newline and tab becomes visible as `\xNN` (or `\u{NNNN}`), so what a server, an
//! imported run or a label supplied cannot set a terminal's title, clear its screen,
//! or break a document. A leaf: each output applies it to the text it did not write
//! itself, before its own escaping (HTML's, OpenMetrics', CSV's).

use std::borrow::Cow;

/// `text` with every control character but `\n` and `\t` shown as an escape.
pub fn visible(text: &str) -> Cow<'_, str> {
    let bad = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(bad) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !bad(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:04x}}}", c as u32));
        }
    }
    Cow::Owned(out)
}

/// [`visible`], and a newline or tab shown too (`\x0a`, `\x09`): for one-line
/// fields such as a label.
pub fn one_line(text: &str) -> Cow<'_, str> {
    let v = visible(text);
    if !v.contains(['\n', '\t']) {
        return v;
    }
    Cow::Owned(v.replace('\n', "\\x0a").replace('\t', "\\x09"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_escapes_and_keeps_text() {
        assert_eq!(
            visible("a\x1b]0;pwned\x07b\n\tc\r\u{9b}"),
            "a\\x1b]0;pwned\\x07b\n\tc\\x0d\\x9b"
        );
        assert!(matches!(visible("plain ünïcode\n"), Cow::Borrowed(_)));
        assert_eq!(one_line("a\nb\tc\x1b"), "a\\x0ab\\x09c\\x1b");
    }
}
