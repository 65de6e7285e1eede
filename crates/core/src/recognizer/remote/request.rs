//! The chat-completions request for one page: the page as a lossless PNG inlined in the message, the
//! reading mode's prompt, and the decoding the in-process engine uses (greedy, its token cap, its
//! no-repeat n-gram ban), so that a server running the same weights writes the same tokens.

use base64::Engine as _;
use deepread_engine::NoRepeatNgram;
use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::{ImageEncoder, RgbImage};
use serde_json::{json, Value};

use crate::recognizer::ReadingMode;

/// The placeholder the in-process prompt starts with. vLLM and SGLang put it in front of the text
/// themselves for each image of the message (joined by a newline), so the text leaves it out.
const IMAGE_PLACEHOLDER: &str = "<image>\n";

/// How the server is asked to decode: what changes the output, so part of the fingerprint too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoding {
    pub max_tokens: usize,
    pub no_repeat_ngram: NoRepeatNgram,
}

/// The mode's official prompt as the text part of the message.
pub fn prompt_text(mode: ReadingMode) -> &'static str {
    let prompt = mode.preset().text();
    prompt.strip_prefix(IMAGE_PLACEHOLDER).unwrap_or(prompt)
}

/// The page as PNG: lossless, so the server's preprocessing starts from the very pixels the
/// in-process engine would. Fast compression: the bytes only cross a network once.
pub fn encode_png(image: &RgbImage) -> Result<Vec<u8>, image::ImageError> {
    // Room for a page that compresses to a quarter, so that the buffer seldom grows (and is copied).
    let mut png = Vec::with_capacity(image.as_raw().len() / 4 + 1024);
    PngEncoder::new_with_quality(&mut png, CompressionType::Fast, FilterType::Adaptive)
        .write_image(
            image.as_raw(),
            image.width(),
            image.height(),
            image::ExtendedColorType::Rgb8,
        )?;
    Ok(png)
}

/// The request body, streamed, with the usage asked for at its end.
pub fn chat_body(model: &str, mode: ReadingMode, png: &[u8], decoding: &Decoding) -> Vec<u8> {
    // The JSON is written with an empty image URL, which the page's base64 then fills in place: the
    // megabytes of the page are written once, not copied into a string, a JSON value, and scanned
    // for characters to escape (base64 has none).
    let mut body = json!({
        "model": model,
        "messages": [{
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": ""}},
                {"type": "text", "text": prompt_text(mode)},
            ],
        }],
        "stream": true,
        "stream_options": {"include_usage": true},
        "temperature": 0,
        "max_tokens": decoding.max_tokens,
        // The grounding tags are special tokens: without these the server drops them, or spaces them.
        "skip_special_tokens": false,
        "spaces_between_special_tokens": false,
    });
    if let Some(ngram) = ngram_args(&decoding.no_repeat_ngram) {
        body["vllm_xargs"] = ngram;
    }
    // Serialising a `Value` of strings and numbers cannot fail.
    let json = serde_json::to_vec(&body).unwrap_or_default();
    // A quote inside a string is escaped, so this is the image's empty URL and nothing else.
    let Some(url) = json
        .windows(EMPTY_URL.len())
        .position(|w| w == EMPTY_URL)
        .map(|at| at + EMPTY_URL.len() - 1)
    else {
        body["messages"][0]["content"][0]["image_url"]["url"] = png_url(png).into();
        return serde_json::to_vec(&body).unwrap_or_default();
    };
    let base64 = &base64::engine::general_purpose::STANDARD;
    let encoded = base64::encoded_len(png.len(), true).unwrap_or(0);
    let mut out = Vec::with_capacity(json.len() + PNG_URL_PREFIX.len() + encoded);
    out.extend_from_slice(&json[..url]);
    out.extend_from_slice(PNG_URL_PREFIX.as_bytes());
    let start = out.len();
    out.resize(start + encoded, 0);
    let written = base64.encode_slice(png, &mut out[start..]).unwrap_or(0);
    out.truncate(start + written);
    out.extend_from_slice(&json[url..]);
    out
}

fn png_url(png: &[u8]) -> String {
    let base64 = base64::engine::general_purpose::STANDARD.encode(png);
    format!("{PNG_URL_PREFIX}{base64}")
}

/// The image's URL while the JSON is written (`"url":""`), and what goes at its start.
const EMPTY_URL: &[u8] = br#""url":"""#;
const PNG_URL_PREFIX: &str = "data:image/png;base64,";

/// The arguments of vLLM's DeepSeek-OCR `NGramPerReqLogitsProcessor`, the ban the engine applies too.
/// Servers without it ignore the field.
fn ngram_args(rule: &NoRepeatNgram) -> Option<Value> {
    match rule {
        NoRepeatNgram::Windowed {
            n,
            window,
            whitelist,
        } => Some(json!({
            "ngram_size": n,
            "window_size": window,
            "whitelist_token_ids": whitelist,
        })),
        NoRepeatNgram::Off | NoRepeatNgram::FullHistory { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use deepread_engine::GenerateOptions;

    use super::*;

    fn decoding() -> Decoding {
        let options = GenerateOptions::default();
        Decoding {
            max_tokens: options.max_new_tokens,
            no_repeat_ngram: options.no_repeat_ngram,
        }
    }

    #[test]
    fn the_body_carries_the_page_the_prompt_and_the_engines_decoding() {
        let page = RgbImage::from_fn(7, 5, |x, y| image::Rgb([x as u8 * 30, y as u8 * 50, 7]));
        let png = encode_png(&page).unwrap();
        let body = chat_body(
            "deepseek-ai/DeepSeek-OCR-2",
            ReadingMode::Layout,
            &png,
            &decoding(),
        );
        let body: Value = serde_json::from_slice(&body).unwrap();

        let content = &body["messages"][0]["content"];
        assert_eq!(content[0]["type"], "image_url");
        let url = content[0]["image_url"]["url"].as_str().unwrap();
        let data = url.strip_prefix("data:image/png;base64,").unwrap();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        let back = image::load_from_memory(&decoded).unwrap().to_rgb8();
        assert_eq!(back, page, "the very pixels");
        assert_eq!(
            content[1]["text"],
            "<|grounding|>Convert the document to markdown."
        );

        assert_eq!(body["model"], "deepseek-ai/DeepSeek-OCR-2");
        assert_eq!(body["stream"], true);
        assert_eq!(body["temperature"], 0);
        assert_eq!(body["max_tokens"], 8192);
        assert_eq!(body["skip_special_tokens"], false);
        assert_eq!(
            body["vllm_xargs"],
            json!({"ngram_size": 20, "window_size": 90, "whitelist_token_ids": [128821, 128822]})
        );
    }

    #[test]
    fn the_body_is_what_serde_json_writes_with_the_url_in_place() {
        let page = RgbImage::from_fn(300, 200, |x, y| image::Rgb([x as u8, y as u8, 99]));
        let png = encode_png(&page).unwrap();
        for (model, mode) in [
            ("deepseek-ai/DeepSeek-OCR-2", ReadingMode::Layout),
            (r#"a "url":"" in the name"#, ReadingMode::Plain),
        ] {
            let body = chat_body(model, mode, &png, &decoding());
            let mut value: Value = serde_json::from_slice(&body).unwrap();
            let url = &mut value["messages"][0]["content"][0]["image_url"]["url"];
            assert_eq!(url.as_str(), Some(png_url(&png).as_str()));
            *url = png_url(&png).into();
            assert_eq!(body, serde_json::to_vec(&value).unwrap(), "byte for byte");
        }
    }

    #[test]
    fn each_mode_sends_its_prompt_without_the_image_placeholder() {
        assert_eq!(prompt_text(ReadingMode::Plain), "Free OCR.");
        assert_eq!(
            prompt_text(ReadingMode::Layout),
            "<|grounding|>Convert the document to markdown."
        );
    }
}
