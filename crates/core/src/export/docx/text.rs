//! The model's text made fit for WordprocessingML, and runs of it.

use docx_rs::{Run, RunFonts};

use super::omml::{is_marker, marked_formula};
use crate::export::math::{Piece, ProtectedMath};

/// The font of a formula's run, for a reader that does not take Office Math.
const MATH_FONT: &str = "Cambria Math";
/// The font of code spans and code blocks.
const CODE_FONT: &str = "Consolas";

/// How the Markdown around a piece of text styles it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct RunStyle {
    pub bold: bool,
    pub italic: bool,
    pub strike: bool,
    pub code: bool,
}

/// `text` without control characters other than tab, line feed and carriage return, and
/// without U+FFFE and U+FFFF. The model's text is untrusted and docx-rs escapes markup but passes
/// these through: most are not XML at all, and one of them makes Word refuse the whole file (DEL
/// and the C1 controls are XML, but never text anyone meant).
pub(super) fn xml_safe(text: &str) -> String {
    text.chars().filter(|c| is_wanted_xml_char(*c)).collect()
}

fn is_wanted_xml_char(c: char) -> bool {
    let xml = matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..);
    // The formula markers are ours alone: text that holds one cannot pass for a formula.
    xml && (!c.is_control() || matches!(c, '\t' | '\n' | '\r')) && !is_marker(c)
}

/// A run of plain text in `style`.
pub(super) fn text_run(text: &str, style: RunStyle) -> Run {
    let mut run = Run::new().add_text(xml_safe(text));
    if style.bold {
        run = run.bold();
    }
    if style.italic {
        run = run.italic();
    }
    if style.strike {
        run = run.strike();
    }
    if style.code {
        run = run.fonts(font(CODE_FONT));
    }
    run
}

/// A LaTeX span, which becomes Office Math once docx-rs has written the document (`omml`); the run's
/// math font is for a reader that keeps the run as it is.
pub(super) fn math_run(latex: &str) -> Run {
    Run::new()
        .add_text(marked_formula(&xml_safe(latex)))
        .fonts(font(MATH_FONT))
}

/// The runs of `text` (made from `math`'s protected text): its plain parts in `style`, its math
/// spans as [`math_run`]s.
pub(super) fn runs(text: &str, math: &ProtectedMath, style: RunStyle) -> Vec<Run> {
    math.pieces(text)
        .into_iter()
        .map(|piece| match piece {
            Piece::Text(text) => text_run(text, style),
            Piece::Math(latex) => math_run(latex),
        })
        .collect()
}

fn font(name: &str) -> RunFonts {
    RunFonts::new()
        .ascii(name)
        .hi_ansi(name)
        .cs(name)
        .east_asia(name)
}

/// The text of an HTML fragment of the model's (a `<center>` caption, text beside a table): tags
/// dropped, `<br>` a line break, the entities the model writes decoded, white space collapsed.
pub(super) fn html_text(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(start) = rest.find('<') {
        push_source(&mut text, &rest[..start]);
        let Some(end) = rest[start..].find('>') else {
            // A lone `<` is text, as a browser shows it.
            push_source(&mut text, &rest[start..]);
            rest = "";
            break;
        };
        if is_line_break_tag(&rest[start..=start + end]) {
            text.push('\n');
        } else {
            text.push(' ');
        }
        rest = &rest[start + end + 1..];
    }
    push_source(&mut text, rest);
    collapse_spaces(&decode_entities(&text))
}

/// Source line ends are white space in HTML: only `<br>` makes a line end in the text.
fn push_source(text: &mut String, source: &str) {
    text.extend(source.chars().map(|c| if c == '\n' { ' ' } else { c }));
}

/// `<br>`, `<br/>`, `<br />` (any case), and `</br>`, which browsers also read as a line break.
pub(super) fn is_line_break_tag(tag: &str) -> bool {
    let name = tag
        .trim_start_matches('<')
        .trim_start_matches('/')
        .trim_end_matches('>')
        .trim_end_matches('/')
        .trim();
    name.eq_ignore_ascii_case("br")
}

/// Runs of spaces, tabs and source line ends become one space; `\n` (from `<br>`) is kept.
fn collapse_spaces(text: &str) -> String {
    text.split('\n')
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('&') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let decoded = after
            .find(';')
            .filter(|end| *end <= 10)
            .and_then(|end| Some((entity(&after[..end])?, end)));
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    let numeric = |digits: &str, radix| u32::from_str_radix(digits, radix).ok();
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some('\u{A0}'),
        _ => {
            let code = if let Some(hex) = name.strip_prefix("#x").or(name.strip_prefix("#X")) {
                numeric(hex, 16)
            } else {
                numeric(name.strip_prefix('#')?, 10)
            };
            char::from_u32(code?)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_xml_cannot_hold_are_dropped() {
        assert_eq!(
            xml_safe("a\u{0}b\u{7}c\u{B}d\u{1F}e\u{FFFE}f\u{FFFF}g\u{7F}h\u{85}"),
            "abcdefgh"
        );
        assert_eq!(xml_safe("tab\there\nnew 𝑥 é"), "tab\there\nnew 𝑥 é");
    }

    #[test]
    fn html_fragments_become_their_text() {
        assert_eq!(
            html_text("<center>Filter exhaust valve. </center>  \n"),
            "Filter exhaust valve."
        );
        assert_eq!(
            html_text("<p>a &amp; b<br/>c &lt;d&gt; &#233;&#x41;</p>"),
            "a & b\nc <d> éA"
        );
        assert_eq!(html_text("x < y & z"), "x < y & z");
    }
}
