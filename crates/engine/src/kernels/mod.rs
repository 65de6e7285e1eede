//! Hand-written CUDA for the decode step, where stock candle ops cost more in launches and round trips than
//! the bytes they move: RMSNorm fused with the residual add, RoPE fused with the KV-cache write, split-K decode
//! attention over each sequence's cache, MoE routing and experts that read only the chosen experts, and the
//! greedy choice under the n-gram ban. `decode.cu` is compiled to PTX by build.rs (feature `cuda`).

mod launch;
mod step_inputs;

pub use launch::{AddNorm, Kernels, Mlp, Routed, Router};
pub use step_inputs::{InputAddresses, StepInputs, MAX_BANS};
