//! The DeepSeek-OCR-2 prompt (spec deepseek-ocr2.md §4) and the tokenizer it is encoded with.
//!
//! Prompt ids are `[BOS] + encode(text before <image>) + [<image>] × n + encode(text after)`, with no
//! chat markup and no EOS, exactly as the official `tokenize_with_images` builds them.

mod gguf_vocab;
mod streamer;

pub use streamer::TextStreamer;

use std::path::{Path, PathBuf};

/// The token strings of the official tokenizer (`tokenizer_config.json`, spec §1.6).
const BOS_TOKEN: &str = "<｜begin▁of▁sentence｜>";
const EOS_TOKEN: &str = "<｜end▁of▁sentence｜>";
const IMAGE_TOKEN: &str = "<image>";
const TD_OPEN_TOKEN: &str = "<td>";
const TD_CLOSE_TOKEN: &str = "</td>";

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("cannot load tokenizer {path}: {message}")]
    Load { path: PathBuf, message: String },
    #[error("cannot read {path}: {message}")]
    Config { path: PathBuf, message: String },
    #[error("the tokenizer has no token {0:?}")]
    MissingToken(String),
    #[error("tokenizer failed: {0}")]
    Tokenizer(String),
    #[error("the prompt must contain exactly one <image>, found {0}")]
    ImagePlaceholders(usize),
}

/// Ids the engine needs by meaning, looked up in the loaded tokenizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialIds {
    pub bos: u32,
    pub eos: u32,
    /// `<image>`: the placeholder the vision embeddings replace.
    pub image: u32,
    /// `<td>` and `</td>`: exempt from the n-gram repetition ban in the official generation.
    pub td_open: u32,
    pub td_close: u32,
}

/// The two official prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptPreset {
    /// Layout plus Markdown, with `<|ref|>…<|det|>` grounding tags.
    Layout,
    /// Plain text.
    Plain,
}

impl PromptPreset {
    pub fn text(self) -> &'static str {
        match self {
            PromptPreset::Layout => "<image>\n<|grounding|>Convert the document to markdown.",
            PromptPreset::Plain => "<image>\nFree OCR.",
        }
    }
}

/// A byte-level BPE tokenizer (`tokenizer.json`) with the DeepSeek-OCR special ids resolved.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    special: SpecialIds,
}

impl Tokenizer {
    /// Load `tokenizer.json` from a model directory; BOS/EOS strings come from its `tokenizer_config.json`
    /// when present, else the official ones. A folder of llama.cpp's GGUF pair without a tokenizer.json has
    /// its tokenizer built from the text file's metadata.
    pub fn from_model_dir(dir: &Path) -> Result<Self, PromptError> {
        let config_path = dir.join("tokenizer_config.json");
        let names = if config_path.is_file() {
            read_bos_eos(&config_path)?
        } else {
            official_bos_eos()
        };
        let path = dir.join("tokenizer.json");
        if !path.is_file() {
            if let Some(inner) = Self::from_gguf(dir)? {
                return Self::with_ids(inner, names, dir);
            }
        }
        Self::load(&path, names)
    }

    /// The tokenizer of the GGUF text file in `dir`, if there is one.
    fn from_gguf(dir: &Path) -> Result<Option<tokenizers::Tokenizer>, PromptError> {
        let failed = |message: String| PromptError::Load {
            path: dir.to_owned(),
            message,
        };
        let metadata = crate::weights::llama_cpp::tokenizer_metadata(dir)
            .map_err(|e| failed(e.to_string()))?;
        metadata
            .map(|m| gguf_vocab::tokenizer(&m).map_err(failed))
            .transpose()
    }

    /// Load a `tokenizer.json` file, using the official BOS/EOS token strings.
    pub fn from_file(path: &Path) -> Result<Self, PromptError> {
        Self::load(path, official_bos_eos())
    }

    fn load(path: &Path, names: (String, String)) -> Result<Self, PromptError> {
        let inner = tokenizers::Tokenizer::from_file(path).map_err(|e| PromptError::Load {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        Self::with_ids(inner, names, path)
    }

    /// The tokenizer with the special ids resolved; `origin` names where it came from, for the log.
    fn with_ids(
        inner: tokenizers::Tokenizer,
        (bos, eos): (String, String),
        origin: &Path,
    ) -> Result<Self, PromptError> {
        let id = |token: &str| {
            inner
                .token_to_id(token)
                .ok_or_else(|| PromptError::MissingToken(token.to_owned()))
        };
        let special = SpecialIds {
            bos: id(&bos)?,
            eos: id(&eos)?,
            image: id(IMAGE_TOKEN)?,
            td_open: id(TD_OPEN_TOKEN)?,
            td_close: id(TD_CLOSE_TOKEN)?,
        };
        tracing::debug!(path = %origin.display(), ?special, "loaded tokenizer");
        Ok(Self { inner, special })
    }

    pub fn special(&self) -> SpecialIds {
        self.special
    }

    /// `encode(text, add_special_tokens=False)`; added tokens such as `<|grounding|>` match atomically.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, PromptError> {
        let encoding = self
            .inner
            .encode(text, false)
            .map_err(|e| PromptError::Tokenizer(e.to_string()))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// `decode(ids, skip_special_tokens=False)`: grounding tags and EOS stay in the text.
    pub fn decode(&self, ids: &[u32]) -> Result<String, PromptError> {
        self.inner
            .decode(ids, false)
            .map_err(|e| PromptError::Tokenizer(e.to_string()))
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// The largest id the tokenizer can produce, added tokens included: a model it feeds needs a vocabulary
    /// larger than this.
    pub fn max_id(&self) -> Option<u32> {
        self.inner.get_vocab(true).into_values().max()
    }
}

fn official_bos_eos() -> (String, String) {
    (BOS_TOKEN.to_owned(), EOS_TOKEN.to_owned())
}

/// `bos_token` / `eos_token` of a `tokenizer_config.json`: a string or an `{"content": …}` object.
fn read_bos_eos(path: &Path) -> Result<(String, String), PromptError> {
    let fail = |message: String| PromptError::Config {
        path: path.to_owned(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| fail(e.to_string()))?;
    let token = |key: &str, fallback: &str| -> String {
        let value = &json[key];
        value
            .as_str()
            .or_else(|| value["content"].as_str())
            .unwrap_or(fallback)
            .to_owned()
    };
    Ok((token("bos_token", BOS_TOKEN), token("eos_token", EOS_TOKEN)))
}

/// Prompt ids for one image with `image_tokens` placeholders (spec §4).
///
/// The text is stripped first, as the reference's conversation template does; it must contain exactly
/// one `<image>`.
pub fn build_prompt_ids(
    tokenizer: &Tokenizer,
    prompt_text: &str,
    image_tokens: usize,
) -> Result<Vec<u32>, PromptError> {
    let parts: Vec<&str> = prompt_text.trim().split(IMAGE_TOKEN).collect();
    let [before, after] = parts[..] else {
        return Err(PromptError::ImagePlaceholders(parts.len() - 1));
    };
    let special = tokenizer.special();
    let mut ids = vec![special.bos];
    ids.extend(tokenizer.encode(before)?);
    ids.extend(std::iter::repeat_n(special.image, image_tokens));
    ids.extend(tokenizer.encode(after)?);
    Ok(ids)
}
