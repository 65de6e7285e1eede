//! The model's LaTeX as Office Math (OMML), which Word and LibreOffice typeset: fractions, roots, scripts,
//! big operators with limits, delimiters that grow, accents, matrices and cases, Greek and the common
//! symbols. A command it does not know is kept as written, so nothing of the formula is lost.

mod parse;
mod symbols;
mod write;

/// A formula's LaTeX travels through docx-rs as the text of a run between these (private use characters,
/// taken out of every other text), and [`office_math`] makes each such run Office Math.
const FORMULA_START: char = '\u{E010}';
const FORMULA_END: char = '\u{E011}';
const MATH_NAMESPACE: &str =
    r#" xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math""#;

/// The text of the run that stands for `latex` until [`office_math`] replaces it.
pub(super) fn marked_formula(latex: &str) -> String {
    let latex: String = latex.chars().filter(|c| !is_marker(*c)).collect();
    format!("{FORMULA_START}{latex}{FORMULA_END}")
}

pub(super) fn is_marker(c: char) -> bool {
    c == FORMULA_START || c == FORMULA_END
}

/// `document.xml` as docx-rs wrote it, with every run that holds a marked formula replaced by the formula in
/// Office Math, and the math namespace declared.
pub(super) fn office_math(document_xml: Vec<u8>) -> Vec<u8> {
    let xml = match String::from_utf8(document_xml) {
        Ok(xml) => xml,
        // docx-rs writes UTF-8; anything else is passed on as it is.
        Err(error) => return error.into_bytes(),
    };
    if !xml.contains(FORMULA_START) {
        return xml.into_bytes();
    }
    let mut out = String::with_capacity(xml.len());
    let mut rest = xml.as_str();
    while let Some(marker) = rest.find(FORMULA_START) {
        let before = &rest[..marker];
        let run_start = before.rfind("<w:r>").max(before.rfind("<w:r "));
        let (Some(run_start), Some(end)) = (run_start, rest[marker..].find(FORMULA_END)) else {
            break;
        };
        let Some(run_end) = rest[marker + end..]
            .find("</w:r>")
            .map(|e| marker + end + e + "</w:r>".len())
        else {
            break;
        };
        let latex = unescape(&rest[marker + FORMULA_START.len_utf8()..marker + end]);
        out.push_str(&rest[..run_start]);
        out.push_str(&latex_to_omml(&latex));
        rest = &rest[run_end..];
    }
    out.push_str(rest);
    out.replacen("<w:document ", &format!("<w:document{MATH_NAMESPACE} "), 1)
        .into_bytes()
}

/// Text as XML escaped it, back.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// `latex` (delimiters `\( \)`, `\[ \]` or `$$` included or not) as one `<m:oMath>` element.
pub(super) fn latex_to_omml(latex: &str) -> String {
    let body = strip_delimiters(latex.trim());
    format!(
        "<m:oMath>{}</m:oMath>",
        write::xml_of(&parse::formula(body))
    )
}

fn strip_delimiters(latex: &str) -> &str {
    for (open, close) in [("\\[", "\\]"), ("\\(", "\\)"), ("$$", "$$")] {
        if let Some(inner) = latex.strip_prefix(open).and_then(|l| l.strip_suffix(close)) {
            return inner;
        }
    }
    latex
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `latex` as Office Math, parsed (so well-formed), for `look` to look into.
    fn omml<T>(latex: &str, look: impl FnOnce(&roxmltree::Document) -> T) -> T {
        let xml = format!(
            r#"<w xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math">{}</w>"#,
            latex_to_omml(latex)
        );
        look(&roxmltree::Document::parse(&xml).expect("well-formed XML"))
    }

    /// The element names in document order, without the namespace.
    fn shape(latex: &str) -> Vec<String> {
        omml(latex, |doc| {
            doc.descendants()
                .filter(|n| n.is_element())
                .map(|n| n.tag_name().name().to_owned())
                .filter(|n| !matches!(n.as_str(), "w" | "rPr" | "sty" | "nor"))
                .collect()
        })
    }

    fn text(latex: &str) -> String {
        omml(latex, |doc| {
            doc.descendants()
                .filter(|n| n.tag_name().name() == "t")
                .filter_map(|n| n.text())
                .collect()
        })
    }

    /// The `m:val` of the elements named `name`.
    fn values(latex: &str, names: &[&str]) -> Vec<String> {
        omml(latex, |doc| {
            doc.descendants()
                .filter(|n| names.contains(&n.tag_name().name()))
                .filter_map(|n| n.attributes().next().map(|a| a.value().to_owned()))
                .collect()
        })
    }

    #[test]
    fn a_fraction_with_scripts_and_greek_is_office_math() {
        assert_eq!(
            shape(r"\(\frac{a^2}{\beta_i}\)"),
            [
                "oMath", "f", "num", "sSup", "e", "r", "t", "sup", "r", "t", "den", "sSub", "e",
                "r", "t", "sub", "r", "t"
            ]
        );
        assert_eq!(text(r"\(\frac{a^2}{\beta_i}\)"), "a2βi");
    }

    #[test]
    fn roots_sums_and_growing_delimiters() {
        assert_eq!(text(r"\sqrt[3]{x} + \sqrt{y}"), "3x+y");
        assert_eq!(values(r"\sum_{i=1}^{n} x_i", &["chr"]), ["∑"]);
        assert_eq!(text(r"\sum_{i=1}^{n} x_i"), "i=1nxi");
        assert_eq!(text(r"\left( \frac{1}{2} \right]"), "12");
        assert_eq!(
            values(r"\left( x \right]", &["begChr", "endChr"]),
            ["(", "]"]
        );
    }

    #[test]
    fn matrices_and_cases_are_rows_of_cells() {
        let xml = latex_to_omml(r"\begin{pmatrix} a & b \\ c & d \end{pmatrix}");
        assert_eq!(xml.matches("<m:mr>").count(), 2);
        assert_eq!(
            xml.matches("<m:e>").count(),
            5,
            "the delimiter's and four cells: {xml}"
        );
        let cases =
            latex_to_omml(r"f(x) = \begin{cases} 1 & x > 0 \\ 0 & \text{otherwise} \\ \end{cases}");
        assert_eq!(cases.matches("<m:mr>").count(), 2);
        assert!(cases.contains("otherwise"));
    }

    #[test]
    fn words_stay_upright_and_unknown_commands_stay_as_written() {
        assert_eq!(text(r"\text{speed up} \times 2"), "speed up×2");
        assert!(latex_to_omml(r"\text{speed up}").contains("<m:nor/>"));
        assert_eq!(text(r"\sin x + \foo{y}"), r"sinx+\fooy");
    }

    #[test]
    fn unbalanced_and_hostile_input_stays_well_formed() {
        for latex in [
            r"\frac{a",
            r"}{",
            r"x^",
            r"\left( x",
            r"\begin{matrix} a &",
            "<script>&\"",
            "\u{1}a\u{FFFF}",
        ] {
            omml(latex, |_| ());
        }
        assert_eq!(text("a < b & c"), "a<b&c");
    }
}
