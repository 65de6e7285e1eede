//! The decode step on the GPU kernels of `crate::kernels`: one token for each of B sequences with no host
//! round trip inside the step (routing, the cache write and the greedy choice stay on the GPU): one upload
//! of the step's inputs before it, one read-back of the chosen tokens after it. The first step at each
//! batch size runs op by op and is then captured as a CUDA graph, which later steps of that size replay.
//! With [`Sums::BatchInvariant`] every output of the step is summed in the same order whatever the batch size
//! (no cuBLAS; in bf16 the linear layers on tensor-core tiles used at every batch size, whose sums do not
//! depend on the rows beside them), so a page's greedy tokens do not depend on the pages beside it.
//! int8 weights (`crate::quant`) are read by the same kernels, which dequantize their blocks in registers.
//! Off CUDA there is no fused step; the straightforward path runs instead.

#[cfg(feature = "cuda")]
pub use gpu::FusedDecoder;

#[cfg(not(feature = "cuda"))]
pub use cpu::FusedDecoder;

/// How the fused step's kernels sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sums {
    /// The fastest kernels for the batch size: row kernels for a few rows, cuBLAS and tensor-core tiles for
    /// more. A row's last bits, and so a near-tie, can change with the rows beside it.
    Fastest,
    /// Every output summed in the same order whatever the batch size (the row kernels, and in bf16 the linear
    /// layers' tensor-core tiles at every batch size and the experts' tiles, which sum alike for a few rows and
    /// for many), so a row's result does not depend on the rows beside it. Slower past a few rows.
    BatchInvariant,
}

#[cfg(feature = "cuda")]
mod gpu {
    use std::collections::hash_map::Entry;
    use std::collections::HashMap;
    use std::sync::Mutex;

    use candle_core::cuda_backend::cudarc::driver::{sys, CudaGraph};
    use candle_core::{DType, Device, Tensor};

    use super::Sums;
    use crate::error::{EngineError, Result};
    use crate::kernels::{
        AddNorm, Hidden, InputAddresses, Kernels, Mlp, MoeOut, Router, StepInputs, StepLayer,
        Weight,
    };
    use crate::layers::mlp::SwiGlu;
    use crate::layers::proj::Proj;
    use crate::lm::decoder::{DecoderLayer, FeedForward, TextModel};
    use crate::lm::moe::{Experts, Moe};
    use crate::lm::SequenceCache;

    /// The kernels for the model's device and dtype, and per batch size the step's input buffer and graph.
    pub struct FusedDecoder {
        kernels: Kernels,
        batches: Mutex<HashMap<usize, BatchStep>>,
        graphs: bool,
        sums: Sums,
    }

    struct BatchStep {
        inputs: StepInputs,
        graph: Graph,
    }

    enum Graph {
        NotYet,
        Captured(SendGraph),
        /// Capture failed once at this size (logged); the step runs op by op.
        Unavailable,
    }

    /// A captured step. The driver launches a graph from any thread; it is only used under the mutex.
    struct SendGraph(CudaGraph);
    // SAFETY: a CUgraphExec handle is not tied to the thread that instantiated it, and every use of this one
    // happens with the decoder's mutex held.
    unsafe impl Send for SendGraph {}

    impl std::fmt::Debug for FusedDecoder {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("FusedDecoder")
                .field("graphs", &self.graphs)
                .field("sums", &self.sums)
                .finish()
        }
    }

    impl FusedDecoder {
        /// None when the model is not on a CUDA device in f32/bf16, or has dimensions the kernels do not take.
        /// CUDA graphs are used unless `DEEPREAD_CUDA_GRAPHS=0`.
        pub fn new(
            model: &TextModel,
            device: &Device,
            dtype: DType,
            sums: Sums,
        ) -> Result<Option<Self>> {
            let cfg = model.config();
            if !Kernels::supports(
                cfg.head_dim(),
                cfg.hidden_size,
                cfg.intermediate_size,
                cfg.moe_intermediate_size,
                cfg.n_routed_experts,
                cfg.num_experts_per_tok,
            ) {
                return Ok(None);
            }
            let graphs = std::env::var("DEEPREAD_CUDA_GRAPHS").map_or(true, |v| v != "0");
            Ok(Kernels::new(device, dtype)?.map(|kernels| Self {
                kernels,
                batches: Mutex::new(HashMap::new()),
                graphs,
                sums,
            }))
        }

        /// How the step sums.
        pub fn sums(&self) -> Sums {
            self.sums
        }

        /// Feeds `tokens[b]` to sequence `caches[b]` and returns each row's greedy next token under its
        /// `bans[b]` (None when every token is banned); the caches grow by one. Returns Ok(None), having
        /// done nothing, when a ban list is too long for the fused step.
        pub fn step(
            &self,
            model: &TextModel,
            tokens: &[u32],
            caches: &mut [&mut SequenceCache],
            bans: &[Vec<u32>],
        ) -> Result<Option<Vec<Option<u32>>>> {
            if !StepInputs::fits(bans) {
                return Ok(None);
            }
            let dev = self.kernels.device();
            for cache in caches.iter_mut() {
                cache.reserve_one()?;
            }
            let positions: Vec<Vec<usize>> = caches.iter().map(|c| vec![c.len()]).collect();
            let angles = model.rotary.angles(&positions);
            let mut batches = self
                .batches
                .lock()
                .map_err(|_| EngineError::Cuda("a decode step panicked".into()))?;
            let b = tokens.len();
            let batch = match batches.entry(b) {
                Entry::Occupied(batch) => batch.into_mut(),
                Entry::Vacant(slot) => slot.insert(self.batch_step(model, b)?),
            };
            batch
                .inputs
                .fill(dev, tokens, caches, (&angles.0, &angles.1), bans)?;
            let inputs = batch.inputs.addresses(dev);
            match &batch.graph {
                Graph::Captured(graph) => graph
                    .0
                    .launch()
                    .map_err(|e| EngineError::Cuda(e.to_string()))?,
                Graph::NotYet if self.graphs => {
                    // Candle's small uploads (shapes, strides) are cached from here on, so that the capture
                    // finds them on the device.
                    let _cached = dev.enable_cuda_graph_htod_cache();
                    self.run_step(model, &inputs)?;
                    batch.graph = self.capture(model, &inputs);
                }
                _ => self.run_step(model, &inputs)?,
            }
            let picks = batch.inputs.read_picks(dev)?;
            for cache in caches.iter_mut() {
                cache.advance();
            }
            Ok(Some(picks))
        }

        fn batch_step(&self, model: &TextModel, batch: usize) -> Result<BatchStep> {
            let cfg = model.config();
            let bf16 = model.embedding_table().dtype() == DType::BF16;
            Ok(BatchStep {
                inputs: StepInputs::new(
                    self.kernels.device(),
                    batch,
                    cfg.num_layers,
                    cfg.head_dim(),
                    bf16,
                )?,
                graph: Graph::NotYet,
            })
        }

        /// Records the step as a graph; nothing runs while it is recorded.
        fn capture(&self, model: &TextModel, inputs: &InputAddresses) -> Graph {
            let stream = self.kernels.device().cuda_stream();
            let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
            if let Err(e) = stream.begin_capture(mode) {
                tracing::warn!(error = %e, "CUDA graph capture unavailable; decoding op by op");
                return Graph::Unavailable;
            }
            let recorded = self.run_step(model, inputs);
            let flags =
                sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH;
            match (recorded, stream.end_capture(flags)) {
                (Ok(()), Ok(Some(graph))) => {
                    tracing::debug!(batch = inputs.batch, "decode step captured as a CUDA graph");
                    Graph::Captured(SendGraph(graph))
                }
                (Err(e), _) => {
                    tracing::warn!(error = %e, "decode step could not be captured; decoding op by op");
                    Graph::Unavailable
                }
                (_, Err(e)) => {
                    tracing::warn!(error = %e, "decode step could not be captured; decoding op by op");
                    Graph::Unavailable
                }
                (Ok(()), Ok(None)) => Graph::Unavailable,
            }
        }

        /// The step itself, device work only: reads `inputs`, writes the caches and the picks.
        fn run_step(&self, model: &TextModel, inputs: &InputAddresses) -> Result<()> {
            let k = &self.kernels;
            let mut x = Hidden::Rows(k.embed_rows(model.embedding_table(), inputs)?);
            for (index, layer) in model.layers.iter().enumerate() {
                x = self.layer_step(layer, index, x, inputs)?;
            }
            let x = k.hidden_rows(x)?;
            // The norm in a launch of its own: normalising the rows again in every block of the 331 MB lm_head
            // kept the row kernel well below cuBLAS's ~2.8 TB/s; without it, it keeps pace at one row.
            let normed = k.rms_norm(&x, model.norm.weight(), model.norm.eps())?;
            let logits = k.linear(&normed, weight(&model.lm_head)?, self.sums)?;
            k.greedy_pick(&logits, inputs)
        }

        /// One decoder layer on `x` (B, H). A MoE layer's output is left to the next layer's projection to add.
        fn layer_step(
            &self,
            layer: &DecoderLayer,
            index: usize,
            x: Hidden,
            inputs: &InputAddresses,
        ) -> Result<Hidden> {
            let k = &self.kernels;
            let heads = layer.attn.heads();
            let (norm, eps) = (layer.input_norm.weight(), layer.input_norm.eps());
            let qkv = weight(layer.attn.qkv_proj())?;
            let at = StepLayer {
                inputs,
                layer: index,
                heads,
            };
            let (q, x) = k.qkv_rope(x, (norm, eps), qkv, at, self.sums)?;
            let x = &x;
            let attn = k.attention(&q, inputs, index, heads)?;
            let attn = k.linear(&attn, weight(layer.attn.o_proj())?, self.sums)?;
            let (weight, eps) = (layer.post_norm.weight(), layer.post_norm.eps());
            match &layer.ffn {
                FeedForward::Dense(mlp) => {
                    let (x, normed) = k.add_rms_norm(x, &attn, weight, eps)?;
                    Ok(Hidden::Rows((x + self.mlp(mlp, &normed)?)?))
                }
                FeedForward::Sparse(moe) => {
                    let norm = AddNorm {
                        delta: &attn,
                        weight,
                        eps,
                    };
                    let routed = k.route_experts(x, Some(norm), &router(moe))?;
                    let (Some(sum), Some(normed)) = (&routed.sum, &routed.normed) else {
                        return Err(EngineError::Cuda("the router did not keep the norm".into()));
                    };
                    let (experts, shared) = expert_mlps(moe)?;
                    let (y, shared) = k.moe_experts(normed, experts, shared, &routed, self.sums)?;
                    Ok(Hidden::Moe(MoeOut {
                        y,
                        shared,
                        residual: sum.clone(),
                        top_k: moe.top_k,
                    }))
                }
            }
        }

        /// The routed and shared experts on `x` (n, H), reading only the experts the tokens chose; the result
        /// is added to `residual` when given. Serves prefill (n = prompt length).
        pub fn moe(&self, moe: &Moe, x: &Tensor, residual: Option<&Tensor>) -> Result<Tensor> {
            let k = &self.kernels;
            let routed = k.route_experts(x, None, &router(moe))?;
            let (experts, shared) = expert_mlps(moe)?;
            let (y, shared) = k.moe_experts(x, experts, shared, &routed, Sums::Fastest)?;
            k.moe_combine(&y, shared.as_ref(), residual, moe.top_k)
        }

        /// A dense SwiGLU MLP on `x` (n, H).
        fn mlp(&self, mlp: &SwiGlu, x: &Tensor) -> Result<Tensor> {
            let k = &self.kernels;
            let act = k.swiglu(x, weight(mlp.gate_up())?, self.sums)?;
            k.linear(&act, weight(mlp.down_proj())?, self.sums)
        }
    }

    /// The layer's routed experts, stacked, and its shared experts if it has them.
    fn expert_mlps(moe: &Moe) -> Result<(Mlp<'_>, Option<Mlp<'_>>)> {
        let routed = match &moe.experts {
            Experts::Dense { gate_up, down } => Mlp::Dense { gate_up, down },
            Experts::Int8(experts) => Mlp::Int8 {
                gate_up: &experts.gate_up,
                down: &experts.down,
            },
        };
        let shared = moe.shared.as_ref().map(swiglu_mlp).transpose()?;
        Ok((routed, shared))
    }

    /// A dense SwiGLU MLP's two projections, both in the model's dtype or both int8.
    fn swiglu_mlp(mlp: &SwiGlu) -> Result<Mlp<'_>> {
        match (weight(mlp.gate_up())?, weight(mlp.down_proj())?) {
            (Weight::Dense(gate_up), Weight::Dense(down)) => Ok(Mlp::Dense { gate_up, down }),
            (Weight::Int8(gate_up), Weight::Int8(down)) => Ok(Mlp::Int8 { gate_up, down }),
            _ => Err(EngineError::Input(
                "an MLP's projections must both be int8, or neither".into(),
            )),
        }
    }

    /// A projection's weights as the kernels read them (bias-free, as every LM projection is).
    fn weight(proj: &Proj) -> Result<Weight<'_>> {
        match proj {
            Proj::Dense(linear) if linear.bias().is_none() => Ok(Weight::Dense(linear.weight())),
            Proj::Dense(_) => Err(EngineError::Input(
                "a decode step's projection has a bias".into(),
            )),
            Proj::Int8(q) => Ok(Weight::Int8(q)),
        }
    }

    fn router(moe: &Moe) -> Router<'_> {
        Router {
            gate: &moe.gate,
            top_k: moe.top_k,
            scaling: moe.scaling,
            norm_topk: moe.norm_topk,
        }
    }
}

#[cfg(not(feature = "cuda"))]
mod cpu {
    use candle_core::{DType, Device};

    use super::Sums;
    use candle_core::Tensor;

    use crate::error::Result;
    use crate::lm::decoder::TextModel;
    use crate::lm::moe::Moe;
    use crate::lm::SequenceCache;

    /// Never built without CUDA: [`FusedDecoder::new`] always answers None.
    #[derive(Debug)]
    pub struct FusedDecoder {
        never: std::convert::Infallible,
    }

    impl FusedDecoder {
        pub fn new(
            _model: &TextModel,
            _device: &Device,
            _dtype: DType,
            _sums: Sums,
        ) -> Result<Option<Self>> {
            Ok(None)
        }

        pub fn sums(&self) -> Sums {
            match self.never {}
        }

        pub fn step(
            &self,
            _model: &TextModel,
            _tokens: &[u32],
            _caches: &mut [&mut SequenceCache],
            _bans: &[Vec<u32>],
        ) -> Result<Option<Vec<Option<u32>>>> {
            match self.never {}
        }

        pub fn moe(&self, _moe: &Moe, _x: &Tensor, _residual: Option<&Tensor>) -> Result<Tensor> {
            match self.never {}
        }
    }
}
