//! Hand-written CUDA where stock candle ops cost more in launches, round trips and materialised scores than
//! the bytes they move. `decode.cu`: the decode step (RMSNorm fused with the residual add and the router,
//! RoPE fused with the KV-cache write, split-K attention over each sequence's cache, MoE experts that read
//! only the chosen experts, the greedy choice under the n-gram ban). `flash_attention.cu`: the page's long
//! attentions. `moe_prefill.cu`: the prompt's routed experts as grouped GEMMs on tensor cores. build.rs
//! compiles them to PTX (feature `cuda`).

mod flash;
mod grouped_experts;
mod launch;
mod step_inputs;

pub use flash::{flash_attention, RelPosBias, Visibility};
pub use launch::{AddNorm, Kernels, Mlp, Routed, Router};
pub use step_inputs::{InputAddresses, StepInputs, MAX_BANS};
