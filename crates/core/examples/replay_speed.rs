//! How fast a page's output is read as it streams: the longest real capture (about 8,100 tokens)
//! fed in token-sized pieces to the parser, the loop sentinel, and the final Markdown.
//!
//! `cargo run --release -p deepread-core --example replay_speed` (fixtures from DEEPREAD_FIXTURES,
//! else ../shared/fixtures beside the workspace).

use std::path::PathBuf;
use std::time::Instant;

use deepread_core::markdown::{page_markdown, MarkdownOptions};
use deepread_core::{LoopSentinel, Parser, SentinelConfig};

const CAPTURE: &str = "grounding/with_source/thukiy_R-G-/exercises/\
                       Uebungsblatt_CDS_Mathe2_Ana9_Loesungen_p010/output.md";

fn fixtures_dir() -> PathBuf {
    std::env::var_os("DEEPREAD_FIXTURES").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures"),
        PathBuf::from,
    )
}

/// Pieces of about four bytes, the size of a token, cut on character boundaries.
fn token_sized_pieces(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for (i, _) in text.char_indices() {
        if i - start >= 4 {
            pieces.push(&text[start..i]);
            start = i;
        }
    }
    pieces.push(&text[start..]);
    pieces
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let raw = std::fs::read_to_string(fixtures_dir().join(CAPTURE))?;
    let pieces = token_sized_pieces(&raw);
    let rounds = 20;
    let mut best = [f64::MAX; 3];
    for _ in 0..rounds {
        let t = Instant::now();
        let mut parser = Parser::new();
        for piece in &pieces {
            parser.push(piece);
        }
        parser.finish();
        let parse = t.elapsed().as_secs_f64();

        let t = Instant::now();
        // Never stopping, so every piece is examined.
        let config = SentinelConfig {
            min_novelty: 0.0,
            token_budget: None,
            ..SentinelConfig::default()
        };
        let mut sentinel = LoopSentinel::new(config);
        for piece in &pieces {
            sentinel.push(piece, 1);
        }
        let sentinel_s = t.elapsed().as_secs_f64();

        let t = Instant::now();
        let markdown = page_markdown(&parser, &MarkdownOptions::for_page(0));
        let markdown_s = t.elapsed().as_secs_f64();
        assert!(!markdown.is_empty());

        for (b, s) in best.iter_mut().zip([parse, sentinel_s, markdown_s]) {
            *b = b.min(s);
        }
    }
    println!(
        "{} bytes in {} pieces; best of {rounds}: parser {:.2} ms, sentinel {:.2} ms, markdown {:.2} ms",
        raw.len(),
        pieces.len(),
        best[0] * 1e3,
        best[1] * 1e3,
        best[2] * 1e3
    );
    Ok(())
}
