//! How far int8 logits are from the dense model's at the same positions: what `examples/int8_agreement.rs`
//! prints on random full-size weights and `deepread models check-quant` on a user's own pages.

use candle_core::{DType, Tensor, D};

use crate::engine::PageInput;
use crate::error::{EngineError, Result};
use crate::model::Model;

/// The dense and int8 logits of the same positions, compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Agreement {
    pub positions: usize,
    /// ‖int8 − dense‖ / ‖dense‖ over every logit.
    pub rel_l2: f64,
    /// Positions whose greedy token is the same.
    pub top1: usize,
    /// Where the top-1 differs, the largest gap in the dense logits between the dense choice and the int8
    /// one: small gaps are near-ties that any rounding may flip.
    pub widest_flip: f32,
    /// ‖int8 − dense‖² and ‖dense‖², so that pages add up ([`Agreement::merge`]).
    squared_error: f64,
    squared_norm: f64,
}

impl Agreement {
    /// Compares `int8` against `dense`, both (positions, vocab).
    pub fn of(dense: &Tensor, int8: &Tensor) -> Result<Self> {
        if dense.dims() != int8.dims() {
            return Err(EngineError::Input(format!(
                "logits of shapes {:?} and {:?} do not compare",
                dense.dims(),
                int8.dims()
            )));
        }
        let (dense, int8) = (dense.to_dtype(DType::F32)?, int8.to_dtype(DType::F32)?);
        let err = (&int8 - &dense)?.sqr()?.sum_all()?.to_scalar::<f32>()? as f64;
        let norm = dense.sqr()?.sum_all()?.to_scalar::<f32>()? as f64;
        let (want, got) = (dense.argmax(D::Minus1)?, int8.argmax(D::Minus1)?);
        let top = |ids: &Tensor| -> Result<Vec<f32>> {
            Ok(dense.gather(&ids.unsqueeze(1)?, 1)?.squeeze(1)?.to_vec1()?)
        };
        let (best, chosen) = (top(&want)?, top(&got)?);
        let (want, got) = (want.to_vec1::<u32>()?, got.to_vec1::<u32>()?);
        let top1 = want.iter().zip(&got).filter(|(a, b)| a == b).count();
        let widest_flip = best
            .iter()
            .zip(&chosen)
            .map(|(b, c)| b - c)
            .fold(0f32, f32::max);
        Ok(Agreement {
            positions: want.len(),
            rel_l2: (err / norm).sqrt(),
            top1,
            widest_flip,
            squared_error: err,
            squared_norm: norm,
        })
    }

    /// The agreement over both sets of positions.
    pub fn merge(&self, other: &Agreement) -> Agreement {
        let (err, norm) = (
            self.squared_error + other.squared_error,
            self.squared_norm + other.squared_norm,
        );
        Agreement {
            positions: self.positions + other.positions,
            rel_l2: (err / norm).sqrt(),
            top1: self.top1 + other.top1,
            widest_flip: self.widest_flip.max(other.widest_flip),
            squared_error: err,
            squared_norm: norm,
        }
    }

    /// The share of positions whose greedy token is the same.
    pub fn top1_share(&self) -> f64 {
        self.top1 as f64 / self.positions.max(1) as f64
    }
}

/// The logits (n, vocab) in f32 that `model` gives where `page`'s prompt is followed by `forced` (n tokens): row
/// i is the prediction of `forced[i]`, made from the prompt and `forced[..i]`. `image` is the page's features.
pub fn teacher_forced_logits(
    model: &Model,
    page: &PageInput,
    image: Option<&Tensor>,
    forced: &[u32],
) -> Result<Tensor> {
    let prompt = page.prompt_ids.len();
    if prompt == 0 || forced.is_empty() {
        return Err(EngineError::Input("nothing to teacher-force".into()));
    }
    let mut ids = page.prompt_ids.clone();
    ids.extend(&forced[..forced.len() - 1]);
    let (hidden, _) = model.prefill(&model.input_embeddings(&ids, image)?, ids.len())?;
    model
        .text()
        .logits(&hidden.narrow(0, prompt - 1, forced.len())?)
}
