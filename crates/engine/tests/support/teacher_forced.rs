//! A tiny model's logits over a fixed sequence: what two loads of the same weights must agree on.

use candle_core::Tensor;
use deepread_engine::model::Model;

use super::tiny_oracle::{ids, meta, page_input};

/// Logits (L, vocab) at every position of page 0's prompt followed by the oracle's greedy tokens.
pub fn teacher_forced(model: &Model) -> Tensor {
    let page = page_input(0);
    let mut tokens = page.prompt_ids.clone();
    tokens.extend(ids(&meta()["pages"][0]["plain"]));
    let feats = model.image_features(page.image.as_ref().unwrap()).unwrap();
    let embeds = model.input_embeddings(&tokens, Some(&feats)).unwrap();
    model.prompt_logits(&embeds).unwrap()
}
