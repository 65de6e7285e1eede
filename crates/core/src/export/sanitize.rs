//! The allow-list HTML from model output must pass before it is shown or saved.
//!
//! Model output is untrusted text: a page can contain anything, including markup that looks like
//! an attack. Only document structure survives: headings, paragraphs, lists, code, tables (with
//! spans), figures linked relatively, links to the web or mail. No scripts, styles, event
//! handlers, frames, embedded objects or SVG; their content is dropped, not shown as text.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use ammonia::{Builder, UrlRelative};

const ALLOWED_TAGS: &[&str] = &[
    "a",
    "b",
    "blockquote",
    "br",
    "caption",
    "center",
    "code",
    "col",
    "colgroup",
    "dd",
    "del",
    "div",
    "dl",
    "dt",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "img",
    "li",
    "ol",
    "p",
    "pre",
    "s",
    "span",
    "strong",
    "sub",
    "sup",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "u",
    "ul",
];

/// Removed together with everything inside them.
const DROPPED_WITH_CONTENT: &[&str] = &[
    "script", "style", "iframe", "frame", "frameset", "noframes", "object", "embed", "applet",
    "svg", "math", "noscript", "noembed", "template", "textarea", "select", "title", "xmp",
];

const TAG_ATTRIBUTES: &[(&str, &[&str])] = &[
    ("a", &["href", "title"]),
    ("img", &["src", "alt", "title", "width", "height"]),
    ("td", &["colspan", "rowspan"]),
    ("th", &["colspan", "rowspan"]),
    ("col", &["span"]),
    ("colgroup", &["span"]),
    ("ol", &["start"]),
];

/// Schemes a link may use; images may only be relative (see [`keep_attribute`]).
const URL_SCHEMES: &[&str] = &["http", "https", "mailto"];

static SANITIZER: LazyLock<Builder<'static>> = LazyLock::new(sanitizer);

fn sanitizer() -> Builder<'static> {
    let mut builder = Builder::empty();
    let attributes: HashMap<&str, HashSet<&str>> = TAG_ATTRIBUTES
        .iter()
        .map(|(tag, attrs)| (*tag, attrs.iter().copied().collect()))
        .collect();
    builder
        .tags(ALLOWED_TAGS.iter().copied().collect())
        .clean_content_tags(DROPPED_WITH_CONTENT.iter().copied().collect())
        .tag_attributes(attributes)
        .url_schemes(URL_SCHEMES.iter().copied().collect())
        .url_relative(UrlRelative::PassThrough)
        .link_rel(Some("noopener noreferrer"))
        .strip_comments(true)
        .attribute_filter(keep_attribute);
    builder
}

/// An image's source must be a path relative to the exported file, so a saved page never
/// fetches from the network or reads files outside its folder by absolute path.
fn keep_attribute<'u>(element: &str, attribute: &str, value: &'u str) -> Option<Cow<'u, str>> {
    if element == "img" && attribute == "src" && !is_relative_path(value) {
        return None;
    }
    Some(Cow::Borrowed(value))
}

/// No scheme (no `:` at all), no host (`//`), not rooted (`/`, `\`).
fn is_relative_path(url: &str) -> bool {
    let url = url.trim();
    !url.is_empty() && !url.contains(':') && !url.starts_with(['/', '\\'])
}

/// `html` with everything outside the allow-list removed.
pub(super) fn sanitize(html: &str) -> String {
    SANITIZER.clean(html).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths_count_as_relative() {
        assert!(is_relative_path("images/3_0.png"));
        assert!(!is_relative_path("https://example.com/a.png"));
        assert!(!is_relative_path("//example.com/a.png"));
        assert!(!is_relative_path("/etc/passwd"));
        assert!(!is_relative_path("data:image/png;base64,AAAA"));
        assert!(!is_relative_path(""));
    }
}
