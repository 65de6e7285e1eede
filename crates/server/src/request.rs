//! A chat-completions body as vLLM takes it for DeepSeek-OCR-2: one user message holding one page image (a
//! `data:` URL, PNG or JPEG) and one of the model's two prompts. Fields that do not change what our engine
//! does are ignored: it always decodes greedily with the official no-repeat n-gram ban (so `temperature`
//! and `vllm_xargs` have nothing to set), and always writes the special tokens (`skip_special_tokens`).

use base64::Engine as _;
use deepread_core::recognizer::ReadingMode;
use deepread_pdf::{Document, RenderSize};
use image::RgbImage;
use serde::Deserialize;

use crate::error::ApiError;

/// The placeholder vLLM and SGLang put before the text for the message's image; a client may write it too.
const IMAGE_PLACEHOLDER: &str = "<image>";
/// How much of an unsupported prompt an error message repeats.
const ECHOED_PROMPT_CHARS: usize = 80;

/// What a request asks for, checked.
#[derive(Debug)]
pub struct ChatRequest {
    pub mode: ReadingMode,
    /// The image file's bytes (PNG or JPEG), not yet decoded.
    pub image: Vec<u8>,
    pub stream: bool,
    pub include_usage: bool,
    /// At most the engine's cap.
    pub max_tokens: usize,
}

#[derive(Deserialize)]
struct ChatBody {
    model: Option<String>,
    messages: Vec<Message>,
    #[serde(default)]
    stream: bool,
    stream_options: Option<StreamOptions>,
    max_tokens: Option<u64>,
    /// OpenAI's newer name for `max_tokens`.
    max_completion_tokens: Option<u64>,
    n: Option<u64>,
}

#[derive(Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

#[derive(Deserialize)]
struct Message {
    role: String,
    content: Content,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Content {
    Parts(Vec<Part>),
    /// A plain string (no image) or anything else: refused.
    Other(serde::de::IgnoredAny),
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part {
    Text {
        text: String,
    },
    ImageUrl {
        image_url: ImageUrl,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct ImageUrl {
    url: String,
}

/// Reads and checks a body. `max_tokens` above `cap` (the engine's own limit) is lowered to it.
pub fn parse_chat(body: &[u8], served_model: &str, cap: usize) -> Result<ChatRequest, ApiError> {
    let body: ChatBody = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(
            "invalid_body",
            format!("the body is not a chat-completions request: {e}"),
        )
    })?;
    if let Some(model) = body.model.as_deref().filter(|&m| m != served_model) {
        return Err(ApiError::unknown_model(model, served_model));
    }
    if body.n.is_some_and(|n| n != 1) {
        return Err(ApiError::bad_request(
            "invalid_n",
            "only one choice is written per request (n = 1)",
        ));
    }
    let (image_url, prompt) = page_and_prompt(body.messages)?;
    Ok(ChatRequest {
        mode: reading_mode(&prompt)?,
        image: data_url_bytes(&image_url)?,
        stream: body.stream,
        include_usage: body.stream_options.is_some_and(|o| o.include_usage),
        max_tokens: max_tokens(body.max_completion_tokens.or(body.max_tokens), cap)?,
    })
}

/// The one image URL and the prompt text of the one user message.
fn page_and_prompt(messages: Vec<Message>) -> Result<(String, String), ApiError> {
    let one_user_message = || {
        ApiError::bad_request(
            "invalid_messages",
            "send one user message holding one page image (image_url) and the prompt (text)",
        )
    };
    let [message] = <[Message; 1]>::try_from(messages).map_err(|_| one_user_message())?;
    let Content::Parts(parts) = message.content else {
        return Err(one_user_message());
    };
    if message.role != "user" {
        return Err(one_user_message());
    }
    let mut images = Vec::new();
    let mut texts = Vec::new();
    for part in parts {
        match part {
            Part::ImageUrl { image_url } => images.push(image_url.url),
            Part::Text { text } => texts.push(text),
            Part::Other => {}
        }
    }
    let [image] = <[String; 1]>::try_from(images).map_err(|images| {
        ApiError::bad_request(
            "invalid_image",
            format!(
                "send exactly one page image per request, not {}",
                images.len()
            ),
        )
    })?;
    Ok((image, texts.concat()))
}

/// The reading mode a prompt names: the model's two official prompts, with or without the `<image>`
/// placeholder in front.
pub fn reading_mode(prompt: &str) -> Result<ReadingMode, ApiError> {
    let text = prompt.trim();
    let text = text.strip_prefix(IMAGE_PLACEHOLDER).unwrap_or(text).trim();
    [ReadingMode::Layout, ReadingMode::Plain]
        .into_iter()
        .find(|&mode| prompt_text(mode) == text)
        .ok_or_else(|| {
            let echoed: String = text.chars().take(ECHOED_PROMPT_CHARS).collect();
            ApiError::bad_request(
                "unsupported_prompt",
                format!(
                    "the prompt must be {:?} (Markdown with layout boxes) or {:?} (plain text), not {echoed:?}",
                    prompt_text(ReadingMode::Layout),
                    prompt_text(ReadingMode::Plain),
                ),
            )
        })
}

/// The mode's official prompt without its image placeholder.
fn prompt_text(mode: ReadingMode) -> &'static str {
    let prompt = mode.preset().text();
    prompt
        .strip_prefix(IMAGE_PLACEHOLDER)
        .map_or(prompt, str::trim_start)
}

fn max_tokens(asked: Option<u64>, cap: usize) -> Result<usize, ApiError> {
    match asked {
        None => Ok(cap),
        Some(0) => Err(ApiError::bad_request(
            "invalid_max_tokens",
            "max_tokens must be at least 1",
        )),
        Some(asked) => Ok(usize::try_from(asked).map_or(cap, |asked| asked.min(cap))),
    }
}

/// The bytes of a `data:image/png;base64,…` or `data:image/jpeg;base64,…` URL. The server fetches no URL.
fn data_url_bytes(url: &str) -> Result<Vec<u8>, ApiError> {
    let invalid = |message: &str| ApiError::bad_request("invalid_image", message.to_owned());
    let Some(rest) = url.strip_prefix("data:") else {
        return Err(invalid(
            "the page image must be a data: URL (data:image/png;base64,...); this server fetches no URL",
        ));
    };
    let (header, data) = rest
        .split_once(',')
        .ok_or_else(|| invalid("a data: URL without a comma before its data"))?;
    let media_type = header
        .strip_suffix(";base64")
        .ok_or_else(|| invalid("the data: URL must be base64 (data:image/png;base64,...)"))?;
    if !matches!(
        media_type.to_ascii_lowercase().as_str(),
        "image/png" | "image/jpeg" | "image/jpg"
    ) {
        return Err(invalid("the page image must be PNG or JPEG"));
    }
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| invalid(&format!("the data: URL is not valid base64: {e}")))
}

/// The page's pixels, decoded as DeepRead decodes an image file (upright by its EXIF orientation,
/// transparency on white, its size checked before decoding) and kept at its own size.
pub fn decode_page(bytes: Vec<u8>) -> Result<RgbImage, ApiError> {
    let invalid = |message: String| ApiError::bad_request("invalid_image", message);
    let is_png = bytes.starts_with(b"\x89PNG\r\n\x1a\n");
    let is_jpeg = bytes.starts_with(&[0xFF, 0xD8, 0xFF]);
    if !is_png && !is_jpeg {
        return Err(invalid("the page image is neither PNG nor JPEG".into()));
    }
    let document = Document::from_bytes(bytes, None)
        .map_err(|e| invalid(format!("the page image cannot be read: {e}")))?;
    // Only images get here, so the PDF resolution is never used.
    document
        .render_page(0, RenderSize::Native { pdf_dpi: 72.0 })
        .map_err(|e| invalid(format!("the page image cannot be read: {e}")))
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    const MODEL: &str = "deepseek-ai/DeepSeek-OCR-2";

    fn body(content: Value, extra: Value) -> Vec<u8> {
        let mut body = json!({
            "model": MODEL,
            "messages": [{"role": "user", "content": content}],
        });
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        serde_json::to_vec(&body).unwrap()
    }

    fn page(text: &str) -> Value {
        json!([
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "text", "text": text},
        ])
    }

    #[test]
    fn a_vllm_request_is_read_with_its_mode_stream_and_cap() {
        let extra = json!({
            "stream": true, "stream_options": {"include_usage": true}, "temperature": 0,
            "max_tokens": 100, "skip_special_tokens": false,
            "vllm_xargs": {"ngram_size": 20, "window_size": 90, "whitelist_token_ids": [128821, 128822]},
        });
        let request = parse_chat(
            &body(
                page("<|grounding|>Convert the document to markdown."),
                extra,
            ),
            MODEL,
            8192,
        )
        .unwrap();
        assert_eq!(request.mode, ReadingMode::Layout);
        assert_eq!(request.image, b"\x89PNG\r\n\x1a\n");
        assert!(request.stream && request.include_usage);
        assert_eq!(request.max_tokens, 100);

        let plain = parse_chat(&body(page("Free OCR."), json!({})), MODEL, 8192).unwrap();
        assert_eq!(plain.mode, ReadingMode::Plain);
        assert!(!plain.stream && !plain.include_usage);
        assert_eq!(plain.max_tokens, 8192, "no max_tokens: the engine's cap");
    }

    #[test]
    fn the_prompt_may_carry_the_image_placeholder_and_spaces() {
        for prompt in ["<image>\nFree OCR.", "Free OCR. ", "<image>Free OCR."] {
            assert_eq!(
                reading_mode(prompt).unwrap(),
                ReadingMode::Plain,
                "{prompt:?}"
            );
        }
        assert_eq!(
            reading_mode("<image>\n<|grounding|>Convert the document to markdown. ").unwrap(),
            ReadingMode::Layout
        );
    }

    #[test]
    fn any_other_prompt_is_refused_naming_the_two() {
        let error = reading_mode("Describe this image.").unwrap_err();
        assert_eq!(error.status, 400);
        assert_eq!(error.code, "unsupported_prompt");
        assert!(error
            .message
            .contains("<|grounding|>Convert the document to markdown."));
        assert!(error.message.contains("Free OCR."));
        assert!(error.message.contains("Describe this image."));
    }

    #[test]
    fn max_tokens_above_the_cap_is_lowered_and_zero_refused() {
        assert_eq!(max_tokens(Some(100_000), 8192).unwrap(), 8192);
        assert_eq!(max_tokens(Some(5), 8192).unwrap(), 5);
        assert_eq!(max_tokens(Some(0), 8192).unwrap_err().status, 400);
        let newer = body(
            page("Free OCR."),
            json!({"max_completion_tokens": 7, "max_tokens": 9}),
        );
        assert_eq!(parse_chat(&newer, MODEL, 8192).unwrap().max_tokens, 7);
    }

    #[test]
    fn requests_that_are_not_one_page_are_refused() {
        let check = |body: Vec<u8>, status: u16, code: &str| {
            let error = parse_chat(&body, MODEL, 8192).unwrap_err();
            assert_eq!(
                (error.status.as_u16(), error.code),
                (status, code),
                "{}",
                error.message
            );
        };
        check(b"{not json".to_vec(), 400, "invalid_body");
        check(body(json!("Free OCR."), json!({})), 400, "invalid_messages");
        check(
            body(json!([{"type": "text", "text": "Free OCR."}]), json!({})),
            400,
            "invalid_image",
        );
        let remote = json!([
            {"type": "image_url", "image_url": {"url": "https://example.com/page.png"}},
            {"type": "text", "text": "Free OCR."},
        ]);
        check(body(remote, json!({})), 400, "invalid_image");
        let gif = json!([
            {"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lGOD=="}},
            {"type": "text", "text": "Free OCR."},
        ]);
        check(body(gif, json!({})), 400, "invalid_image");
        check(
            body(page("Free OCR."), json!({"model": "gpt-4o"})),
            404,
            "model_not_found",
        );
        check(body(page("Free OCR."), json!({"n": 2})), 400, "invalid_n");
    }

    #[test]
    fn only_png_and_jpeg_bytes_are_decoded() {
        let error = decode_page(b"%PDF-1.7 not an image".to_vec()).unwrap_err();
        assert_eq!(error.code, "invalid_image");
        let error = decode_page(b"\x89PNG\r\n\x1a\ncut short".to_vec()).unwrap_err();
        assert!(
            error.message.contains("cannot be read"),
            "{}",
            error.message
        );
    }
}
