//! The SwiGLU feed-forward used by the encoder, the dense LM layer and the shared experts.

use candle_core::{Module, Tensor};
use candle_nn::Linear;

use super::linear;
use crate::error::Result;
use crate::weights::Weights;

/// `down(silu(gate(x)) * up(x))`, no biases.
#[derive(Debug, Clone)]
pub struct SwiGlu {
    gate_proj: Linear,
    up_proj: Linear,
    down_proj: Linear,
}

impl SwiGlu {
    pub fn load(w: &Weights, prefix: &str, hidden: usize, intermediate: usize) -> Result<Self> {
        Ok(Self {
            gate_proj: linear(
                w,
                &format!("{prefix}.gate_proj"),
                hidden,
                intermediate,
                false,
            )?,
            up_proj: linear(w, &format!("{prefix}.up_proj"), hidden, intermediate, false)?,
            down_proj: linear(
                w,
                &format!("{prefix}.down_proj"),
                intermediate,
                hidden,
                false,
            )?,
        })
    }
}

impl Module for SwiGlu {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let gate = candle_nn::ops::silu(&self.gate_proj.forward(x)?)?;
        self.down_proj.forward(&(gate * self.up_proj.forward(x)?)?)
    }
}
