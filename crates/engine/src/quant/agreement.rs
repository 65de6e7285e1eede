//! How far int8 logits are from the dense model's at the same positions: what `examples/int8_agreement.rs`
//! prints on random full-size weights and `deepread models check-quant` on a user's own pages.

use candle_core::{DType, Tensor, D};

use crate::error::{EngineError, Result};

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
        })
    }

    /// The share of positions whose greedy token is the same.
    pub fn top1_share(&self) -> f64 {
        self.top1 as f64 / self.positions.max(1) as f64
    }
}
