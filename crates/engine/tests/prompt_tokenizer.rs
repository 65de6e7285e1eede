//! Prompt ids and streamed decoding with the derived DeepSeek-OCR tokenizer in the shared fixtures.

mod preprocess_support;

use deepread_engine::prompt::{
    build_prompt_ids, PromptError, PromptPreset, TextStreamer, Tokenizer,
};
use preprocess_support::fixtures_dir;

fn tokenizer() -> Tokenizer {
    let dir = fixtures_dir().join("tokenizer");
    assert!(
        dir.join("tokenizer.json").is_file(),
        "{}/tokenizer.json is missing",
        dir.display()
    );
    Tokenizer::from_model_dir(&dir).unwrap()
}

fn fixture_text(relative: &str) -> String {
    let path = fixtures_dir().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// fixtures/tokenizer README: the layout prompt's ids (BOS is prepended by the model code).
const LAYOUT_PROMPT_IDS: [u32; 10] = [128815, 201, 128820, 21842, 270, 4940, 304, 2121, 7919, 16];

#[test]
fn special_ids_come_from_the_tokenizer_and_match_the_spec() {
    // deepseek-ocr2.md §1.6.
    let special = tokenizer().special();
    assert_eq!((special.bos, special.eos, special.image), (0, 1, 128815));
    assert_eq!((special.td_open, special.td_close), (128821, 128822));
}

#[test]
fn layout_prompt_encodes_to_the_readme_ids() {
    let tok = tokenizer();
    assert_eq!(
        tok.encode(PromptPreset::Layout.text()).unwrap(),
        LAYOUT_PROMPT_IDS
    );
    assert_eq!(
        build_prompt_ids(&tok, PromptPreset::Layout.text(), 1).unwrap()[..],
        [&[0][..], &LAYOUT_PROMPT_IDS].concat()
    );
}

#[test]
fn prompt_is_bos_then_the_image_run_then_the_text() {
    let tok = tokenizer();
    let ids = build_prompt_ids(&tok, PromptPreset::Layout.text(), 1121).unwrap();
    assert_eq!(ids.len(), 1 + 1121 + 9);
    assert_eq!(ids[0], 0);
    assert!(ids[1..1122].iter().all(|&id| id == 128815));
    assert_eq!(ids[1122..], LAYOUT_PROMPT_IDS[1..]);
    assert_ne!(*ids.last().unwrap(), 1, "no EOS in the prompt");

    let plain = build_prompt_ids(&tok, PromptPreset::Plain.text(), 257).unwrap();
    assert_eq!(plain[..258], [&[0][..], &[128815; 257]].concat());
    assert_eq!(tok.decode(&plain[258..]).unwrap(), "\nFree OCR.");
}

#[test]
fn prompt_needs_exactly_one_image_placeholder() {
    let tok = tokenizer();
    assert!(matches!(
        build_prompt_ids(&tok, "Free OCR.", 10),
        Err(PromptError::ImagePlaceholders(0))
    ));
    assert!(matches!(
        build_prompt_ids(&tok, "<image><image>x", 10),
        Err(PromptError::ImagePlaceholders(2))
    ));
}

/// Feed ids one at a time; the deltas must add up to `decode(all)` exactly.
fn stream(tok: &Tokenizer, ids: &[u32]) -> (String, usize) {
    let mut streamer = TextStreamer::new(tok);
    let mut text = String::new();
    let mut held_back = 0;
    for &id in ids {
        let delta = streamer.push(id).unwrap();
        assert!(
            !delta.contains('\u{FFFD}'),
            "streamer emitted a broken character: {delta:?}"
        );
        held_back += usize::from(delta.is_empty());
        text.push_str(&delta);
    }
    text.push_str(&streamer.finish().unwrap());
    (text, held_back)
}

#[test]
fn streaming_a_real_grounding_output_reproduces_decode() {
    let tok = tokenizer();
    for file in [
        "grounding/with_source/docling_md_deepseek/deepseek_example.output.md",
        "grounding/with_source/halllo_taxi_receipt/output.md",
        "grounding/with_source/thukiy_R-G-/theory/mathe_2_theorie-21/output.md",
    ] {
        let text = fixture_text(file);
        let ids = tok.encode(&text).unwrap();
        assert!(
            ids.contains(&128816),
            "{file}: expected <|ref|> to be one token"
        );
        let (streamed, _) = stream(&tok, &ids);
        assert_eq!(streamed, tok.decode(&ids).unwrap(), "{file}");
        assert_eq!(streamed, text, "{file}: byte-level BPE round-trips");
    }
}

#[test]
fn streaming_cjk_and_emoji_never_splits_a_character() {
    let tok = tokenizer();
    // A real Chinese grounding output (cloudman6/DeepSeek-OCR-WebUI, MIT) plus emoji with modifiers and ZWJ
    // sequences, which byte-level BPE splits across tokens.
    let sample: serde_json::Value = serde_json::from_str(&fixture_text(
        "grounding/output_only/cloudman6_webui/sample2.json",
    ))
    .unwrap();
    let raw = sample["raw_text"].as_str().unwrap();
    let text = format!(
        "{raw}\n<|ref|>text<|/ref|><|det|>[[1, 2, 3, 4]]<|/det|>\n👍🏽 👨‍👩‍👧 🇩🇪 ∮ 한국어 ひらがな\n"
    );
    let mut ids = tok.encode(&text).unwrap();
    ids.push(tok.special().eos);
    let (streamed, held_back) = stream(&tok, &ids);
    assert_eq!(streamed, tok.decode(&ids).unwrap());
    assert!(
        streamed.ends_with("<｜end▁of▁sentence｜>"),
        "special tokens stay in the text"
    );
    assert!(
        held_back > 0,
        "no token split a character: the test no longer exercises the hold-back"
    );
}

#[test]
fn a_dangling_partial_character_is_flushed_not_dropped() {
    let tok = tokenizer();
    let ids = tok.encode("ok 👨‍👩‍👧 한국어").unwrap();
    // The first prefix that ends inside a character's bytes: what is held back must come out at finish.
    let cut = (1..ids.len())
        .map(|n| &ids[..n])
        .find(|prefix| tok.decode(prefix).unwrap().ends_with('\u{FFFD}'))
        .expect("no token boundary falls inside a character");
    let mut streamer = TextStreamer::new(&tok);
    let mut text: String = cut.iter().map(|&id| streamer.push(id).unwrap()).collect();
    assert!(!text.ends_with('\u{FFFD}'));
    text.push_str(&streamer.finish().unwrap());
    assert_eq!(text, tok.decode(cut).unwrap());
}
