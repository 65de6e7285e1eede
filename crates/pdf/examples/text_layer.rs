//! Prints one page's text layer as PDFium gives it to DeepRead: its words and ruling lines, as JSON, for
//! looking at what the layout analysis works from.
//!
//!     cargo run -p deepread-pdf --example text_layer -- FILE.pdf [PAGE]

use std::path::PathBuf;

use deepread_pdf::{bind_pdfium, Document};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = PathBuf::from(args.next().ok_or("usage: text_layer FILE.pdf [PAGE]")?);
    let page: usize = args.next().map_or(Ok(1), |p| p.parse())?;
    bind_pdfium(None)?;
    let document = Document::open(&path, None)?;
    let text = document.text_layer(page.saturating_sub(1))?;
    println!("{}", serde_json::to_string_pretty(&text)?);
    Ok(())
}
