//! int8 weights, opt-in: the language model's projections, experts and lm_head quantized to candle's Q8_0
//! (blocks of 32 weights with an f16 scale) at load, from the checkpoint in the model's dtype, and kept in a
//! GGUF file so that later loads read them instead of quantizing again. In memory they are held in rows of
//! our own layout ([`Int8Matrix`]). The vision tower, the embeddings and the norms stay as loaded. int8 is
//! weight-only: the decode step's fused kernels dequantize the rows in registers, the routed experts' grouped
//! GEMMs (the prompt pass, and steps of many pages) turn int8 tiles into bf16 in shared memory, the prompt
//! pass dequantizes each dense projection for its product, and the activations stay in the model's dtype
//! throughout.

mod agreement;
mod cache;
mod experts;
mod matrix;

pub use agreement::{teacher_forced_logits, Agreement};
pub use cache::{checkpoint_source, Int8Weights};
pub use experts::Int8Experts;
pub use matrix::{row_bytes, Int8Matrix};

use candle_core::quantized::GgmlDType;

/// The file in a model directory that holds its int8 weights once made.
pub const INT8_CACHE: &str = "deepread-int8.gguf";

/// The quantized type every int8 matrix uses.
pub(crate) const INT8: GgmlDType = GgmlDType::Q8_0;

/// How the language model's weights are held in memory (in settings files: "bf16", "int8").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum WeightFormat {
    /// As the model's dtype (bf16 on a GPU): the fused decode kernels run.
    #[default]
    #[serde(rename = "bf16")]
    Dense,
    /// int8 with a scale per block of 32: about half the memory.
    #[serde(rename = "int8")]
    Int8,
}

impl std::str::FromStr for WeightFormat {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "bf16" | "dense" => Ok(WeightFormat::Dense),
            "int8" => Ok(WeightFormat::Int8),
            other => Err(format!("unknown weight format `{other}` (bf16 or int8)")),
        }
    }
}
