//! A tokenizer from a GGUF file's `tokenizer.ggml.*` metadata, for llama.cpp's text file of DeepSeek-OCR-2,
//! which comes without a tokenizer.json: byte-level BPE over its tokens and merges, its control and
//! user-defined tokens added whole, and the pre-tokenizer `tokenizer.ggml.pre` names. It encodes and decodes as
//! the checkpoint's tokenizer.json does (tests/llama_cpp_gguf.rs compares them).

use std::collections::HashMap;
use std::str::FromStr;

use candle_core::quantized::gguf_file::Value;
use serde_json::{json, Map};

/// llama.cpp's token types (`tokenizer.ggml.token_type`): a normal BPE token, one matched whole before the BPE
/// runs (special or not), and a padding entry no text ever has.
const NORMAL: i32 = 1;
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;

/// The pre-tokenizer of DeepSeek-V3's tokenizer (which DeepSeek-OCR-2 ships), as its tokenizer.json declares it:
/// digits in runs of up to three, CJK runs, then words, punctuation and spaces, then byte-level with no regex
/// of its own. llama.cpp calls it `deepseek-v3`.
fn deepseek_v3_pre_tokenizer() -> serde_json::Value {
    let split = |regex: &str| json!({"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": false});
    json!({"type": "Sequence", "pretokenizers": [
        split(r"\p{N}{1,3}"),
        split("[\u{4e00}-\u{9fa5}\u{3040}-\u{309f}\u{30a0}-\u{30ff}]+"),
        split(concat!(
            r"[!\x22#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+",
            r"|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+",
            r"| ?[\p{P}\p{S}]+[\r\n]*",
            r"|\s*[\r\n]+",
            r"|\s+(?!\S)",
            r"|\s+"
        )),
        {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}
    ]})
}

/// The tokenizer the metadata describes; an error names what it lacks or what DeepRead does not know.
pub(super) fn tokenizer(
    metadata: &HashMap<String, Value>,
) -> Result<tokenizers::Tokenizer, String> {
    let text = |key: &str| -> Result<&str, String> {
        metadata
            .get(key)
            .and_then(|v| v.to_string().ok())
            .map(String::as_str)
            .ok_or_else(|| format!("no `{key}` in the GGUF metadata"))
    };
    let model = text("tokenizer.ggml.model")?;
    let pre = text("tokenizer.ggml.pre")?;
    if model != "gpt2" || pre != "deepseek-v3" {
        return Err(format!(
            "a `{model}` tokenizer with the `{pre}` pre-tokenizer: DeepRead knows DeepSeek's (`gpt2`, \
             `deepseek-v3`)"
        ));
    }
    let tokens = strings(metadata, "tokenizer.ggml.tokens")?;
    let merges = strings(metadata, "tokenizer.ggml.merges")?;
    let types = array(metadata, "tokenizer.ggml.token_type")?
        .iter()
        .map(|v| v.to_i32().map_err(|e| e.to_string()))
        .collect::<Result<Vec<i32>, String>>()?;
    if types.len() != tokens.len() {
        return Err(format!(
            "{} token types for {} tokens",
            types.len(),
            tokens.len()
        ));
    }
    // Every token goes into the BPE vocabulary, which fixes its id (tokenizers numbers an added token the
    // vocabulary lacks after the vocabulary, whatever id it is given); the added ones are also matched whole,
    // and win where a normal token has the same text.
    let mut vocab = Map::new();
    let mut added = Vec::new();
    for (id, (token, kind)) in tokens.iter().zip(&types).enumerate() {
        if *kind == NORMAL {
            vocab.insert(token.to_string(), json!(id));
        }
    }
    for (id, (token, kind)) in tokens.iter().zip(&types).enumerate() {
        if matches!(*kind, CONTROL | USER_DEFINED) {
            vocab.insert(token.to_string(), json!(id));
            added.push(json!({
                "id": id, "content": token, "single_word": false, "lstrip": false, "rstrip": false,
                "normalized": false, "special": *kind == CONTROL,
            }));
        }
    }
    let byte_level = json!({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true});
    let spec = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": []},
        "pre_tokenizer": deepseek_v3_pre_tokenizer(),
        "post_processor": byte_level,
        "decoder": byte_level,
        "model": {
            "type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
            "vocab": vocab, "merges": merges,
        },
    });
    tokenizers::Tokenizer::from_str(&spec.to_string()).map_err(|e| e.to_string())
}

fn array<'a>(metadata: &'a HashMap<String, Value>, key: &str) -> Result<&'a Vec<Value>, String> {
    metadata
        .get(key)
        .ok_or_else(|| format!("no `{key}` in the GGUF metadata"))?
        .to_vec()
        .map_err(|e| format!("`{key}`: {e}"))
}

fn strings<'a>(metadata: &'a HashMap<String, Value>, key: &str) -> Result<Vec<&'a str>, String> {
    array(metadata, key)?
        .iter()
        .map(|v| {
            v.to_string()
                .map(String::as_str)
                .map_err(|e| format!("`{key}`: {e}"))
        })
        .collect()
}
