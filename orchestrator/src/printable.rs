//! Text from models and sandboxes made safe for a terminal: every C0 and C1
//! control character but newline and tab (ESC above all: it starts the
//! sequences that move the cursor, retitle the window, rewrite the clipboard
//! or hide text) and DEL are shown as `\x1b`-style escapes instead of being
//! sent to the terminal. Every CLI renderer of such text goes through it.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with its control characters (except `\n` and `\t`) escaped.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            let code = u32::from(c);
            // Writing to a String cannot fail.
            let _ = if code <= 0xff {
                write!(out, "\\x{code:02x}")
            } else {
                write!(out, "\\u{{{code:x}}}")
            };
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_shown_not_sent() {
        assert_eq!(
            printable("ok \x1b]52;c;cm0gLXJmIH4=\x07 \x1b[2J\x1b[1;1H"),
            "ok \\x1b]52;c;cm0gLXJmIH4=\\x07 \\x1b[2J\\x1b[1;1H"
        );
        // C1 controls (CSI as one character, OSC), DEL and carriage return.
        assert_eq!(printable("a\u{9b}2Jb\u{9d}c"), "a\\x9b2Jb\\x9dc");
        assert_eq!(printable("x\x7fy\rz\x00"), "x\\x7fy\\x0dz\\x00");
    }

    #[test]
    fn newlines_tabs_and_other_text_pass_unchanged() {
        let text = "line one\n\tindented — ünïcödé ✓ 日本\n";
        assert!(matches!(printable(text), Cow::Borrowed(t) if t == text));
    }
}
