//! The DeepSeek-V2-shaped MoE language model (plain MHA, no MLA), spec §1.5.

pub mod attention;
pub mod decoder;
pub mod fused_decode;
pub mod kv_cache;
pub mod moe;

pub use decoder::TextModel;
pub use fused_decode::{FusedDecoder, Sums};
pub use kv_cache::{KvCache, SequenceCache};
