//! The language a document is written in, told from its reading's text, as the BCP 47 tag an EPUB and an
//! HTML page declare (what reading systems choose fonts, hyphenation and voices by).

use whatlang::Lang;

use super::math::{protect_math, Piece};
use super::DocumentExport;

/// What an export declares when the text does not tell: "undetermined".
pub const UNDETERMINED: &str = "und";

/// Enough text to tell a language by; more only costs time on a long book.
const SAMPLE_CHARS: usize = 20_000;

/// The BCP 47 tag of the language most of the export's text is in, when that can be told reliably;
/// [`UNDETERMINED`] otherwise (little text, or several languages at once).
pub fn document_language(export: &DocumentExport<'_>) -> &'static str {
    let sample: String = export
        .pages
        .iter()
        .flat_map(|page| page.blocks.iter())
        .filter(|block| block.label != "image" && block.label != "equation")
        .flat_map(|block| {
            words_of(&block.markdown)
                .chars()
                .chain(['\n'])
                .collect::<Vec<_>>()
        })
        .take(SAMPLE_CHARS)
        .collect();
    match whatlang::detect(&sample) {
        Some(info) if info.is_reliable() => bcp47(info.lang()),
        _ => UNDETERMINED,
    }
}

/// A block's words: its formulas are no language's, and would make one harder to tell.
fn words_of(markdown: &str) -> String {
    let protected = protect_math(markdown);
    protected
        .pieces(&protected.text)
        .into_iter()
        .filter_map(|piece| match piece {
            Piece::Text(text) => Some(text),
            Piece::Math(_) => None,
        })
        .collect()
}

/// The shortest tag of the language, as BCP 47 asks: ISO 639-1 where the language has such a code.
#[rustfmt::skip]
fn bcp47(lang: Lang) -> &'static str {
    match lang {
        Lang::Epo => "eo", Lang::Eng => "en", Lang::Rus => "ru", Lang::Cmn => "zh", Lang::Spa => "es",
        Lang::Por => "pt", Lang::Ita => "it", Lang::Ben => "bn", Lang::Fra => "fr", Lang::Deu => "de",
        Lang::Ukr => "uk", Lang::Kat => "ka", Lang::Ara => "ar", Lang::Hin => "hi", Lang::Jpn => "ja",
        Lang::Heb => "he", Lang::Yid => "yi", Lang::Pol => "pl", Lang::Amh => "am", Lang::Jav => "jv",
        Lang::Kor => "ko", Lang::Nob => "nb", Lang::Dan => "da", Lang::Swe => "sv", Lang::Fin => "fi",
        Lang::Tur => "tr", Lang::Nld => "nl", Lang::Hun => "hu", Lang::Ces => "cs", Lang::Ell => "el",
        Lang::Bul => "bg", Lang::Bel => "be", Lang::Mar => "mr", Lang::Kan => "kn", Lang::Ron => "ro",
        Lang::Slv => "sl", Lang::Hrv => "hr", Lang::Srp => "sr", Lang::Mkd => "mk", Lang::Lit => "lt",
        Lang::Lav => "lv", Lang::Est => "et", Lang::Tam => "ta", Lang::Vie => "vi", Lang::Urd => "ur",
        Lang::Tha => "th", Lang::Guj => "gu", Lang::Uzb => "uz", Lang::Pan => "pa", Lang::Aze => "az",
        Lang::Ind => "id", Lang::Tel => "te", Lang::Pes => "fa", Lang::Mal => "ml", Lang::Ori => "or",
        Lang::Mya => "my", Lang::Nep => "ne", Lang::Sin => "si", Lang::Khm => "km", Lang::Tuk => "tk",
        Lang::Aka => "ak", Lang::Zul => "zu", Lang::Sna => "sn", Lang::Afr => "af", Lang::Lat => "la",
        Lang::Slk => "sk", Lang::Cat => "ca", Lang::Tgl => "tl", Lang::Hye => "hy", Lang::Cym => "cy",
    }
}
