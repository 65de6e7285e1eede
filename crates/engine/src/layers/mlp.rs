//! The SwiGLU feed-forward used by the encoder, the dense LM layer and the shared experts.

use candle_core::{Module, Tensor};

use super::proj::{Proj, ProjectionPass};
use super::{linear, stacked_linear};
use crate::error::Result;
use crate::weights::Weights;

/// `down(silu(gate(x)) * up(x))`, no biases. Gate and up are stacked into one (2I, H) projection at load, so
/// both come from one matmul.
#[derive(Debug, Clone)]
pub struct SwiGlu {
    gate_up: Proj,
    down_proj: Proj,
    intermediate: usize,
}

impl SwiGlu {
    pub fn load(w: &Weights, prefix: &str, hidden: usize, intermediate: usize) -> Result<Self> {
        Ok(Self {
            gate_up: stacked_linear(
                w,
                &[
                    (&format!("{prefix}.gate_proj"), intermediate),
                    (&format!("{prefix}.up_proj"), intermediate),
                ],
                hidden,
            )?
            .into(),
            down_proj: linear(
                w,
                &format!("{prefix}.down_proj"),
                intermediate,
                hidden,
                false,
            )?
            .into(),
            intermediate,
        })
    }

    /// The stacked gate/up projection (2I, H): rows 0..I gate, I..2I up.
    pub fn gate_up(&self) -> &Proj {
        &self.gate_up
    }

    pub fn down_proj(&self) -> &Proj {
        &self.down_proj
    }

    /// Each projection replaced by what `pass` makes of it, named `{name}.gate_up` and `{name}.down`.
    pub fn map_projections(&mut self, name: &str, pass: ProjectionPass<'_>) -> Result<()> {
        self.gate_up = pass(&format!("{name}.gate_up"), &self.gate_up)?;
        self.down_proj = pass(&format!("{name}.down"), &self.down_proj)?;
        Ok(())
    }
}

impl Module for SwiGlu {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let gate_up = self.gate_up.forward(x)?;
        #[cfg(feature = "cuda")]
        if let Some(act) = crate::kernels::silu_mul(&gate_up)
            .map_err(|e| candle_core::Error::Msg(e.to_string()))?
        {
            return self.down_proj.forward(&act);
        }
        let last = gate_up.rank() - 1;
        let gate = candle_nn::ops::silu(&gate_up.narrow(last, 0, self.intermediate)?)?;
        let up = gate_up.narrow(last, self.intermediate, self.intermediate)?;
        self.down_proj.forward(&(gate * up)?)
    }
}
