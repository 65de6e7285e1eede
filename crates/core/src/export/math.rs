//! Keeping LaTeX intact through Markdown rendering.
//!
//! The model writes math as `\( … \)`, `\[ … \]` and sometimes `$$ … $$`, for KaTeX to typeset
//! from the page's text. A Markdown renderer would mangle it: `\(` and `\[` are escapes that lose
//! their backslash, and `_`, `*` inside formulas become emphasis. So every closed math span is
//! swapped for a placeholder before rendering and put back, HTML-escaped, afterwards.

/// Placeholders are `OPEN digits CLOSE`, from the Unicode private use area: the renderer passes
/// them through as plain text, and they are removed from the input first so output cannot forge one.
const OPEN: char = '\u{E000}';
const CLOSE: char = '\u{E001}';

/// Markdown with its math spans replaced by placeholders, and the spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ProtectedMath {
    pub text: String,
    spans: Vec<String>,
}

/// Math delimiters: opener and its closer.
const DELIMITERS: [(&str, &str); 3] = [("\\[", "\\]"), ("\\(", "\\)"), ("$$", "$$")];

/// Replaces every closed math span with a placeholder. An opener without its closer is left as
/// text: there is no formula to protect.
pub(super) fn protect_math(markdown: &str) -> ProtectedMath {
    let source: String = markdown
        .chars()
        .filter(|c| *c != OPEN && *c != CLOSE)
        .collect();
    let bytes = source.as_bytes();
    let mut text = String::with_capacity(source.len());
    let mut spans = Vec::new();
    let mut copied = 0;
    let mut i = 0;
    // Delimiters are ASCII, and ASCII bytes never occur inside a multi-byte UTF-8 character, so
    // every index sliced at below is a character boundary.
    while i < bytes.len() {
        let opener = DELIMITERS
            .iter()
            .find(|(open, _)| bytes[i..].starts_with(open.as_bytes()));
        match opener {
            Some((open, close)) => match find_closer(bytes, i + open.len(), close) {
                Some(end) => {
                    text.push_str(&source[copied..i]);
                    text.push(OPEN);
                    text.push_str(&spans.len().to_string());
                    text.push(CLOSE);
                    spans.push(source[i..end].to_owned());
                    copied = end;
                    i = end;
                }
                None => i += open.len(),
            },
            // `\\` is an escaped backslash: the character after it opens nothing.
            None if bytes[i] == b'\\' => i += 2,
            None => i += 1,
        }
    }
    text.push_str(&source[copied..]);
    ProtectedMath { text, spans }
}

/// The end (exclusive) of the span whose content starts at `from`, skipping escaped characters so
/// `\\` (a LaTeX line break) never reads as the start of `\]`.
fn find_closer(bytes: &[u8], from: usize, close: &str) -> Option<usize> {
    let mut j = from;
    while j < bytes.len() {
        if bytes[j..].starts_with(close.as_bytes()) {
            return Some(j + close.len());
        }
        j += if bytes[j] == b'\\' { 2 } else { 1 };
    }
    None
}

/// A piece of text made from [`ProtectedMath::text`]: plain text, or a math span as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Piece<'a> {
    Text(&'a str),
    Math(&'a str),
}

impl ProtectedMath {
    /// Puts the math back into HTML rendered from [`ProtectedMath::text`], escaped as HTML text.
    pub fn restore(&self, html: &str) -> String {
        let mut out = String::with_capacity(html.len());
        for piece in self.pieces(html) {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Math(math) => out.push_str(&escape_html(math)),
            }
        }
        out
    }

    /// `text` (made from [`ProtectedMath::text`]) cut into plain text and the math spans its
    /// placeholders stand for, in order, for output that is not HTML.
    pub fn pieces<'a>(&'a self, text: &'a str) -> Vec<Piece<'a>> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find(OPEN) {
            if start > 0 {
                pieces.push(Piece::Text(&rest[..start]));
            }
            let after = &rest[start + OPEN.len_utf8()..];
            let span = after.find(CLOSE).and_then(|end| {
                let index: usize = after[..end].parse().ok()?;
                Some((self.spans.get(index)?, end))
            });
            match span {
                Some((math, end)) => {
                    pieces.push(Piece::Math(math));
                    rest = &after[end + CLOSE.len_utf8()..];
                }
                // Not one of ours (cannot happen: input placeholders were removed); drop the mark.
                None => rest = after,
            }
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest));
        }
        pieces
    }
}

/// Text made safe to place in HTML content or a quoted attribute.
pub(crate) fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(markdown: &str) -> String {
        let protected = protect_math(markdown);
        protected.restore(&protected.text)
    }

    #[test]
    fn every_kind_of_span_is_replaced_and_restored() {
        let md = "a \\(x_1\\) b \\[y^2\\] c $$z*w$$ d";
        let protected = protect_math(md);
        assert_eq!(protected.spans, ["\\(x_1\\)", "\\[y^2\\]", "$$z*w$$"]);
        assert!(!protected.text.contains('\\') && !protected.text.contains('$'));
        assert_eq!(protected.restore(&protected.text), md);
    }

    #[test]
    fn latex_line_breaks_do_not_close_display_math() {
        let md = "\\[ a \\\\ b \\] tail";
        let protected = protect_math(md);
        assert_eq!(protected.spans, ["\\[ a \\\\ b \\]"]);
    }

    #[test]
    fn escaped_backslashes_and_unclosed_openers_stay_text() {
        let protected = protect_math("C:\\\\[dir] and \\( never closed");
        assert!(protected.spans.is_empty());
        assert_eq!(protected.text, "C:\\\\[dir] and \\( never closed");
    }

    #[test]
    fn forged_placeholders_are_removed() {
        assert_eq!(roundtrip("x\u{E000}0\u{E001}y \\(a\\)"), "x0y \\(a\\)");
    }

    #[test]
    fn pieces_give_the_math_back_as_written() {
        let protected = protect_math("a \\(x<1\\) b $$y$$");
        assert_eq!(
            protected.pieces(&protected.text),
            [
                Piece::Text("a "),
                Piece::Math("\\(x<1\\)"),
                Piece::Text(" b "),
                Piece::Math("$$y$$"),
            ]
        );
    }

    #[test]
    fn restored_math_is_escaped() {
        assert_eq!(roundtrip("\\(a<b & c\\)"), "\\(a&lt;b &amp; c\\)");
    }
}
