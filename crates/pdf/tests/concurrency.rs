//! One document shared by several threads renders the same pixels as one thread does.

mod common;

use std::sync::Arc;

use common::{fixture, init_pdfium, within};
use deepread_pdf::{Document, RenderSize};

#[test]
fn threads_sharing_a_document_get_the_same_renders_and_text() {
    init_pdfium();
    let path = fixture("pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf");
    let doc = Arc::new(Document::open(&path, None).unwrap());
    let alone: Vec<_> = (0..4)
        .map(|i| doc.render_page(i, RenderSize::Dpi(50.0)).unwrap())
        .collect();
    let words_alone = doc.text_layer(0).unwrap();
    let shared = Arc::clone(&doc);
    let together = within(120, "concurrent renders", move || {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let doc = Arc::clone(&shared);
                std::thread::spawn(move || {
                    let img = doc.render_page(i, RenderSize::Dpi(50.0)).unwrap();
                    let words = doc.text_layer(0).unwrap();
                    (img, words)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    for (i, (img, words)) in together.into_iter().enumerate() {
        assert!(
            img == alone[i],
            "page {i} differs when rendered concurrently"
        );
        assert_eq!(words, words_alone);
    }
}
