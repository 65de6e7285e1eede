//! A formula's items as OMML elements.

use std::fmt::Write as _;

use super::parse::{Item, Style};
use crate::export::docx::text::xml_safe;
use crate::export::math::escape_html;

pub(super) fn xml_of(items: &[Item]) -> String {
    let mut out = String::new();
    for item in items {
        write_item(&mut out, item);
    }
    out
}

fn write_item(out: &mut String, item: &Item) {
    match item {
        Item::Run { text, style } => {
            let properties = match style {
                Style::Math => "",
                Style::Plain => r#"<m:rPr><m:sty m:val="p"/></m:rPr>"#,
                Style::Bold => r#"<m:rPr><m:sty m:val="b"/></m:rPr>"#,
                Style::Text => r#"<m:rPr><m:nor/></m:rPr>"#,
            };
            let _ = write!(
                out,
                "<m:r>{properties}<m:t xml:space=\"preserve\">{}</m:t></m:r>",
                escape(text)
            );
        }
        Item::Scripts { base, sub, sup } => {
            let (tag, parts): (&str, Vec<(&str, &[Item])>) = match (sub, sup) {
                (Some(sub), Some(sup)) => {
                    ("sSubSup", vec![("e", base), ("sub", sub), ("sup", sup)])
                }
                (Some(sub), None) => ("sSub", vec![("e", base), ("sub", sub)]),
                (None, Some(sup)) => ("sSup", vec![("e", base), ("sup", sup)]),
                (None, None) => {
                    out.push_str(&xml_of(base));
                    return;
                }
            };
            element(out, tag, &parts);
        }
        Item::Fraction { num, den } => element(out, "f", &[("num", num), ("den", den)]),
        Item::Root { degree, radicand } => {
            out.push_str("<m:rad>");
            match degree {
                Some(degree) => {
                    let _ = write!(out, "<m:deg>{}</m:deg>", xml_of(degree));
                }
                None => out.push_str(r#"<m:radPr><m:degHide m:val="1"/></m:radPr><m:deg/>"#),
            }
            let _ = write!(out, "<m:e>{}</m:e></m:rad>", xml_of(radicand));
        }
        Item::Nary { symbol, sub, sup } => {
            let hide = |part: &Option<Vec<Item>>, name: &str| match part {
                None => format!(r#"<m:{name}Hide m:val="1"/>"#),
                Some(_) => String::new(),
            };
            let _ = write!(
                out,
                r#"<m:nary><m:naryPr><m:chr m:val="{symbol}"/><m:limLoc m:val="undOvr"/>{}{}</m:naryPr><m:sub>{}</m:sub><m:sup>{}</m:sup><m:e/></m:nary>"#,
                hide(sub, "sub"),
                hide(sup, "sup"),
                sub.as_deref().map(xml_of).unwrap_or_default(),
                sup.as_deref().map(xml_of).unwrap_or_default(),
            );
        }
        Item::Delimited { open, close, inner } => {
            let _ = write!(
                out,
                r#"<m:d><m:dPr><m:begChr m:val="{}"/><m:endChr m:val="{}"/></m:dPr><m:e>{}</m:e></m:d>"#,
                escape(open),
                escape(close),
                xml_of(inner)
            );
        }
        Item::Accent { mark, base } => {
            let _ = write!(
                out,
                r#"<m:acc><m:accPr><m:chr m:val="{mark}"/></m:accPr><m:e>{}</m:e></m:acc>"#,
                xml_of(base)
            );
        }
        Item::Bar { base } => {
            let _ = write!(
                out,
                r#"<m:bar><m:barPr><m:pos m:val="top"/></m:barPr><m:e>{}</m:e></m:bar>"#,
                xml_of(base)
            );
        }
        Item::Matrix { rows } => {
            out.push_str("<m:m>");
            for row in rows {
                out.push_str("<m:mr>");
                for cell in row {
                    let _ = write!(out, "<m:e>{}</m:e>", xml_of(cell));
                }
                out.push_str("</m:mr>");
            }
            out.push_str("</m:m>");
        }
    }
}

fn element(out: &mut String, tag: &str, parts: &[(&str, &[Item])]) {
    let _ = write!(out, "<m:{tag}>");
    for (part, items) in parts {
        let _ = write!(out, "<m:{part}>{}</m:{part}>", xml_of(items));
    }
    let _ = write!(out, "</m:{tag}>");
}

/// Text and attribute values made XML, without the characters XML cannot hold.
fn escape(text: &str) -> String {
    escape_html(&xml_safe(text))
}
