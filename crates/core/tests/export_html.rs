//! `markdown_to_safe_html`: hostile model output comes out inert, real model output keeps its
//! tables, captions and math.

mod common;

use common::{grounding_dir, raw_of_stdout_capture, read};
use deepread_core::export::markdown_to_safe_html;
use deepread_core::markdown::{markdown_from_raw, MarkdownOptions};

/// Fragments that must not survive in any form.
const FORBIDDEN: &[&str] = &[
    "<script",
    "alert(",
    "onerror",
    "onload",
    "onclick",
    "javascript:",
    "data:",
    "<iframe",
    "<object",
    "<embed",
    "<style",
    "style=",
    "<svg",
    "evil.example",
    "<form",
    "<meta",
    "<link",
    "<base",
];

fn assert_inert(markdown: &str) -> String {
    let html = markdown_to_safe_html(markdown);
    let lower = html.to_lowercase();
    for fragment in FORBIDDEN {
        assert!(
            !lower.contains(fragment),
            "{fragment:?} survived in {html:?} (from {markdown:?})"
        );
    }
    html
}

#[test]
fn scripts_and_handlers_are_removed() {
    assert_inert("Intro\n\n<script>alert(1)</script>\n\nOutro");
    assert_inert("<img src=x onerror=alert(1)>");
    assert_inert("<div onclick=\"alert(1)\" style=\"position:fixed\">text</div>");
    assert_inert("<td onmouseover=alert(1)>cell</td>");
    assert_inert("<table><tr><td><img src=\"x\" onload=\"alert(1)\"></td></tr></table>");
    assert_inert("<body onload=alert(1)>");
}

#[test]
fn dangerous_urls_are_removed() {
    let html =
        assert_inert("[click](javascript:alert(1)) and <a href=\"JaVaScRiPt:alert(2)\">x</a>");
    assert!(html.contains("click"), "{html}");
    assert_inert("<a href=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\">x</a>");
    assert_inert("![](data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=)");
    assert_inert("<img src=\"https://evil.example/track.png\">");
    assert_inert("![tracker](//evil.example/pixel.gif)");
}

#[test]
fn embedded_documents_and_styles_are_removed_with_their_content() {
    assert_inert("<iframe src=\"https://evil.example\">fallback alert(1)</iframe>");
    assert_inert("<object data=\"https://evil.example/x.swf\"></object><embed src=\"https://evil.example/y\">");
    assert_inert("<style>body { display: none }</style>visible");
    assert_inert("<svg><script>alert(1)</script><circle onload=\"alert(2)\"/></svg>");
    assert_inert("<math><mtext><style><img src=x onerror=alert(1)></style></mtext></math>");
    assert_inert("<form action=\"https://evil.example\"><input name=a></form>");
    assert_inert("<meta http-equiv=\"refresh\" content=\"0;url=https://evil.example\">");
    assert_inert("<link rel=stylesheet href=\"https://evil.example/a.css\"><base href=\"https://evil.example/\">");
}

#[test]
fn markup_inside_math_stays_text() {
    // The formula is shown as written, so its text remains, but only as escaped text.
    let html = markdown_to_safe_html("\\(<script>alert(1)</script>\\)");
    assert_eq!(html, "<p>\\(&lt;script&gt;alert(1)&lt;/script&gt;\\)</p>\n");
}

#[test]
fn safe_structure_is_kept() {
    let html = assert_inert(
        "# Title\n\n- one\n- ~~two~~\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n`code` and [site](https://example.org)\n\n![](images/3_0.png)",
    );
    for kept in [
        "<h1>Title</h1>",
        "<li>one</li>",
        "<del>two</del>",
        "<th>a</th>",
        "<td>2</td>",
        "<code>code</code>",
        "href=\"https://example.org\"",
        "rel=\"noopener noreferrer\"",
        "<img src=\"images/3_0.png\" alt=\"\">",
    ] {
        assert!(html.contains(kept), "{kept:?} missing from {html}");
    }
}

#[test]
fn math_survives_markdown_rendering_unmangled() {
    for math in [
        "\\(a_1 * b_2 * c_3\\)",
        "\\[ \\sum_{i=1}^{n} x_i^2 \\]",
        "$$\\frac{a}{b}_{*}$$",
        "\\[\n\\begin{aligned} x &= 1 \\\\ y &= 2 \\end{aligned}\n\\]",
    ] {
        let html = markdown_to_safe_html(&format!("Before {math} after"));
        let escaped = math.replace('&', "&amp;");
        assert!(html.contains(&escaped), "{math:?} became {html:?}");
        assert!(!html.contains("<em>"), "{html}");
    }
}

#[test]
fn a_real_table_keeps_every_cell_and_span() {
    let raw =
        read(&grounding_dir().join("with_source/docling_md_deepseek/deepseek_example.output.md"));
    let markdown = markdown_from_raw(&raw, &MarkdownOptions::for_page(0));
    let html = assert_inert(&markdown);
    for tag in ["<tr", "<th", "<td", "rowspan=\"2\"", "colspan=\"3\""] {
        assert_eq!(html.matches(tag).count(), raw.matches(tag).count(), "{tag}");
    }
    assert!(html.contains("<td>0.965</td>"));
}

#[test]
fn real_centred_captions_are_kept() {
    let manual = grounding_dir().join("with_source/xiongpu1_agent/vastera_manual");
    let raw = raw_of_stdout_capture(&read(&manual.join("page015.stdout.md")));
    let markdown = markdown_from_raw(&raw, &MarkdownOptions::for_page(14));
    let html = assert_inert(&markdown);
    assert!(
        html.contains("<center>Filter exhaust valve. </center>"),
        "{html}"
    );
    assert_eq!(
        html.matches("<center>").count(),
        raw.matches("<center>").count()
    );
    assert!(html.contains("<img src=\"images/14_0.png\" alt=\"\">"));
}

#[test]
fn real_math_is_kept_verbatim() {
    let cases = [
        (
            "with_source/thukiy_R-G-/theory/mathe_theorie-64/output.md",
            "\\[ \\int f(x) \\, dx = F(x) + c \\]",
        ),
        (
            "with_source/docling_md_deepseek/deepseek_title.output.md",
            "Information systems \\(\\rightarrow\\) Document structure; \\(\\cdot\\) Applied",
        ),
    ];
    for (file, math) in cases {
        let raw = read(&grounding_dir().join(file));
        assert!(raw.contains(math), "fixture {file} changed");
        let html = markdown_to_safe_html(&markdown_from_raw(&raw, &MarkdownOptions::for_page(0)));
        assert!(html.contains(math), "{math:?} lost from {file}");
    }
    let manual = grounding_dir().join("with_source/xiongpu1_agent/vastera_manual");
    let raw = raw_of_stdout_capture(&read(&manual.join("page014.stdout.md")));
    let html = markdown_to_safe_html(&markdown_from_raw(&raw, &MarkdownOptions::for_page(13)));
    assert!(
        html.contains("set temp \\(+1^{\\circ}C\\) ( \\(34^{\\circ}F\\) )"),
        "{html}"
    );
}
