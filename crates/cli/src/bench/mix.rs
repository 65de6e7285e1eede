//! The output lengths of a synthetic document's pages: how many tokens each page generates before its forced
//! end, drawn from a fixed seed so that every run reads the same document.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Output tokens (EOS included) of the real DeepSeek-OCR captures in shared/fixtures: the 57 pages whose count
/// the reference reported (`tokenizer/tokenizer_validation.json`, `reported_output_text_tokens`), then the
/// three pages that looped to the 8,192-token cap, each at the token where our loop sentinel stops it (their
/// text re-encoded with the fixtures' tokenizer and streamed through `PageReader` with the default sentinel).
/// Baked in because the GPU machine has no fixtures; the test below recomputes it from them.
pub const CAPTURED_LENGTHS: [usize; 60] = [
    210, 19, 18, 18, 18, 19, 19, 729, 203, 306, 175, 223, 188, 205, 362, 315, 311, 271, 47, 19, 19,
    19, 19, 729, 203, 729, 18, 43, 519, 189, 155, 511, 342, 687, 460, 680, 65, 434, 563, 533, 576,
    557, 320, 252, 391, 447, 582, 356, 216, 111, 572, 461, 19, 362, 311, 271, 19, 417, 1250, 559,
];

/// The book's pages: 600 to 1,600 tokens, most near 1,000.
const BOOK_LOW: f64 = 600.0;
const BOOK_MODE: f64 = 1000.0;
const BOOK_HIGH: f64 = 1600.0;
/// One page in this many loops until the sentinel cuts it.
const BOOK_LOOP_EVERY: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mix {
    /// Pages around 1,000 tokens (600 to 1,600), one in 100 looping to the sentinel's cut.
    Book,
    /// The captured pages' lengths in turn (18 to 729 tokens, 3 of 60 looping to the sentinel's cut).
    Captured,
}

impl Mix {
    pub fn name(self) -> &'static str {
        match self {
            Mix::Book => "book",
            Mix::Captured => "captured",
        }
    }

    /// The generated length of each of `pages` pages.
    pub fn lengths(self, pages: usize, seed: u64) -> Vec<usize> {
        match self {
            Mix::Book => book_lengths(pages, seed),
            Mix::Captured => CAPTURED_LENGTHS
                .iter()
                .copied()
                .cycle()
                .take(pages)
                .collect(),
        }
    }
}

/// Triangular lengths between [`BOOK_LOW`] and [`BOOK_HIGH`] peaking at [`BOOK_MODE`]; in each hundred pages
/// one, at a drawn place, loops and runs to the cut of one of the captured loops.
fn book_lengths(pages: usize, seed: u64) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut lengths: Vec<usize> = (0..pages)
        .map(|_| triangular(rng.random::<f64>()).round() as usize)
        .collect();
    let loops = looped_lengths();
    for (n, hundred) in lengths.chunks_mut(BOOK_LOOP_EVERY).enumerate() {
        let at = rng.random_range(0..hundred.len());
        hundred[at] = loops[n % loops.len()];
    }
    lengths
}

/// The inverse of the triangular distribution's CDF at `u` in [0, 1).
fn triangular(u: f64) -> f64 {
    let split = (BOOK_MODE - BOOK_LOW) / (BOOK_HIGH - BOOK_LOW);
    if u < split {
        BOOK_LOW + (u * (BOOK_HIGH - BOOK_LOW) * (BOOK_MODE - BOOK_LOW)).sqrt()
    } else {
        BOOK_HIGH - ((1.0 - u) * (BOOK_HIGH - BOOK_LOW) * (BOOK_HIGH - BOOK_MODE)).sqrt()
    }
}

/// The sentinel's cuts of the captured loops (the last three captured lengths).
fn looped_lengths() -> &'static [usize] {
    &CAPTURED_LENGTHS[57..]
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use deepread_core::{PageReader, SentinelConfig, Verdict};
    use deepread_engine::prompt::{TextStreamer, Tokenizer};

    use super::*;

    fn fixtures() -> PathBuf {
        std::env::var_os("DEEPREAD_FIXTURES").map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures"),
            PathBuf::from,
        )
    }

    /// The reported counts, in the file's order.
    fn reported_counts(fixtures: &Path) -> Vec<usize> {
        let file = fixtures.join("tokenizer/tokenizer_validation.json");
        let text = std::fs::read_to_string(&file).expect("tokenizer_validation.json");
        let pages: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        pages
            .iter()
            .map(|p| p["reported_output_text_tokens"].as_u64().unwrap() as usize)
            .collect()
    }

    /// Tokens generated before the default sentinel stops the capture, streamed token by token.
    fn sentinel_cut(tokenizer: &Tokenizer, raw: &str) -> usize {
        let ids = tokenizer.encode(raw).unwrap();
        let mut streamer = TextStreamer::new(tokenizer);
        let mut reader = PageReader::new(SentinelConfig::default());
        for (n, &id) in ids.iter().enumerate() {
            let delta = streamer.push(id).unwrap();
            if let Verdict::Looped { .. } = reader.push(&delta, 1).verdict {
                return n + 1;
            }
        }
        panic!(
            "the sentinel never stopped a capture that loops ({} tokens)",
            ids.len()
        );
    }

    #[test]
    fn the_captured_mix_is_the_fixtures_counts_and_the_sentinels_cuts() {
        let fixtures = fixtures();
        let tokenizer = Tokenizer::from_file(&fixtures.join("tokenizer/tokenizer.json")).unwrap();
        let looped = [
            "exercises/Uebungsblatt-CDS-Mathe1_Ana10_Loesungen_p005/output.md",
            "exercises/Uebungsblatt_CDS_Mathe2_Ana9_Loesungen_p010/output.md",
            "theory/mathe_2_theorie-21/output.md",
        ];
        let mut expected = reported_counts(&fixtures);
        for file in looped {
            let path = fixtures
                .join("grounding/with_source/thukiy_R-G-")
                .join(file);
            let raw = std::fs::read_to_string(&path).unwrap();
            expected.push(sentinel_cut(&tokenizer, &raw));
        }
        assert_eq!(CAPTURED_LENGTHS.to_vec(), expected);
    }

    #[test]
    fn the_book_is_the_same_for_a_seed_and_loops_once_a_hundred() {
        let book = Mix::Book.lengths(735, 7);
        assert_eq!(book, Mix::Book.lengths(735, 7));
        assert_ne!(book, Mix::Book.lengths(735, 8));
        let loops = looped_lengths();
        let looping = book.iter().filter(|l| loops.contains(l)).count();
        assert_eq!(looping, 8, "one in each started hundred");
        let plain: Vec<usize> = book.into_iter().filter(|l| !loops.contains(l)).collect();
        assert!(plain.iter().all(|&l| (600..=1600).contains(&l)));
        let mean = plain.iter().sum::<usize>() as f64 / plain.len() as f64;
        // The triangle's mean is (600 + 1000 + 1600) / 3.
        assert!((mean - 1066.7).abs() < 25.0, "{mean}");
    }

    #[test]
    fn the_captured_mix_repeats_the_captures() {
        let mix = Mix::Captured.lengths(130, 0);
        assert_eq!(mix.len(), 130);
        assert_eq!(mix[..60], CAPTURED_LENGTHS);
        assert_eq!(mix[60..120], CAPTURED_LENGTHS);
    }
}
