//! Hand-written CUDA where stock candle ops cost more in launches, round trips and materialised scores than
//! the bytes they move. `decode.cu`: the decode step (RMSNorm fused with the residual add and the router,
//! RoPE fused with the KV-cache write, for a few rows inside the q/k/v projection's tiles in `qkv_rope.cuh`,
//! split-K attention over each sequence's cache in `attention.cuh`, MoE experts that read only the chosen
//! experts in `moe_decode.cuh`, whose router also groups a few rows' slots by expert as `moe_plan.cuh` does, the
//! greedy choice under the n-gram ban), its weight-reading kernels also built for int8 rows
//! (`crate::quant::Int8Matrix`, read as `weights.cuh` says). `flash_attention.cu`: the page's long attentions.
//! `moe_prefill.cu`: the routed experts as grouped GEMMs on tensor cores, a prompt's in 128-slot tiles and a
//! decode step's in 16-slot ones, over bf16 or int8 rows. `vision.cu`: the vision encoders' linear-layer
//! epilogues, SAM's windows, relative-position terms and LayerNorms, the encoder's and the LM prompt's rotary
//! embedding. build.rs compiles them to PTX (feature `cuda`).

mod attention;
mod buffers;
mod dependent_launch;
mod expert_tiles;
mod experts;
mod flash;
mod grouped_experts;
mod hidden;
mod launch;
mod linear_tiles;
mod mlp;
mod rows;
mod step_inputs;
mod vision;

pub use experts::{AddNorm, Routed, Router};
pub use flash::{flash_attention, RelPosBias, Visibility};
pub use grouped_experts::ExpertPlan;
pub use hidden::{Hidden, MoeOut};
pub use launch::{Kernels, Weight};
pub use linear_tiles::StepLayer;
pub use mlp::Mlp;
pub use rows::{dequantize_int8, rms_norm, silu_mul};
pub use step_inputs::{InputAddresses, StepInputs, MAX_BANS};
pub use vision::{
    layer_norm, linear_epilogue, rel_pos_terms, rope_heads, window_split, Epilogue, WindowGrid,
};
