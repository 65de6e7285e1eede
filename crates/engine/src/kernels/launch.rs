//! The decode step's kernels as tensor functions, and the compiled module they share (the MoE layer's are in
//! experts.rs): each takes contiguous CUDA tensors, allocates its output and launches on the device's stream.

use candle_core::cuda_backend::cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig,
};
use candle_core::cuda_backend::CudaDevice;
use candle_core::{DType, Device, Shape, Tensor};

use super::attention::DecodeAttention;
use super::buffers::{address, empty, optional_address};
use super::dependent_launch::{dependent_launches, Launch};
use super::expert_tiles::ExpertTiles;
use super::grouped_experts::GroupedExperts;
use super::linear_tiles::LinearTiles;
use super::step_inputs::{InputAddresses, MAX_BANS};
use crate::error::{EngineError, Result};
use crate::lm::Sums;
use crate::quant::Int8Matrix;

pub(super) const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/decode.ptx"));

/// Largest head dim, top-k and expert count the kernels hold on chip (attention.cuh's ATTN_MAX_HEAD_DIM,
/// moe_decode.cuh's ROUTE_MAX_K, the router's 1024 probabilities).
const MAX_HEAD_DIM: usize = 256;
const MAX_TOP_K: usize = 16;
const MAX_EXPERTS: usize = 1024;
/// Tokens one MoE launch may route: each expert takes each token at most once (moe_decode.cuh's MOE_PREFILL_SLOTS).
pub(super) const MAX_MOE_TOKENS: usize = 8192;
/// Slots up to which a MoE block serves one slot's expert rather than one expert (MOE_DECODE_SLOTS).
pub(super) const MAX_SLOTS_BY_SLOT: usize = 256;
/// Warps a block in the MoE and router kernels: one output row (one expert) each (ROUTE_WARPS).
pub(super) const MOE_WARPS: u32 = 8;
/// Rows up to which [`Sums::Fastest`] runs a linear layer or dense SwiGLU as a row-per-warp kernel rather than
/// a GEMM: beyond them cuBLAS reads the weights as fast and the activations faster (measured on the H100).
/// Also the rows up to which `linear_rows` normalises them itself: past them each block would redo more of
/// the norm than its own launch costs.
pub(super) const ROW_KERNEL_MAX_ROWS: usize = 2;
/// Rows of x one block of `linear_rows` takes (decode.cu's LINEAR_MAX_ROWS).
const LINEAR_MAX_ROWS: usize = 16;
/// The most blocks a launch has along y.
pub(super) const MAX_GRID_Y: u32 = 65_535;
/// Blocks sharing one row's greedy pick, at most, and the most rows one pick takes.
const PICK_BLOCKS: u32 = 128;
/// Blocks of a greedy pick in all, at least a block a row: about what an H100 holds at once (132 SMs × 8).
/// At 64 rows, 128 blocks a row made eight waves of blocks that each read 4 logits a thread: 45.5 µs for 16.5
/// MB (`ncu`, 2026-12-07). The pick is the same however a row is shared out (ties go to the lower index).
const PICK_BLOCKS_IN_ALL: u32 = 1024;
const MAX_PICK_ROWS: usize = 256;

/// A weight matrix (N, K) as the kernels read it.
#[derive(Clone, Copy)]
pub enum Weight<'a> {
    /// In the activations' dtype.
    Dense(&'a Tensor),
    /// int8 rows (K a multiple of 32), read by the `_int8_` row kernels only.
    Int8(&'a Int8Matrix),
}

impl Weight<'_> {
    /// (N, K).
    pub fn dims(&self) -> Result<(usize, usize)> {
        Ok(match self {
            Weight::Dense(w) => w.dims2()?,
            Weight::Int8(q) => match q.dims() {
                &[n, k] => (n, k),
                dims => {
                    return Err(EngineError::Input(format!(
                        "an int8 weight of dims {dims:?} where a matrix was expected"
                    )))
                }
            },
        })
    }

    /// The device address the kernels take: the tensor's first element, or the first int8 row.
    pub fn address(&self) -> Result<u64> {
        match self {
            Weight::Dense(w) => address(w),
            Weight::Int8(q) => address(q.rows()),
        }
    }
}

/// The kernels that read weights, built for int8 rows (decode.cu's `_int8_` names).
pub struct Int8Kernels {
    pub(super) moe_gate_up_by_slot: CudaFunction,
    pub(super) moe_down_by_slot: CudaFunction,
    pub(super) moe_gate_up_by_expert: CudaFunction,
    pub(super) moe_down_by_expert: CudaFunction,
    pub(super) linear_rows: CudaFunction,
}

/// The compiled kernels for one device and activation dtype (f32 or bf16).
pub struct Kernels {
    pub(super) dev: CudaDevice,
    pub(super) stream: std::sync::Arc<CudaStream>,
    pub(super) dtype: DType,
    /// Whether each kernel is launched as a dependent of the one before it (dependent_launch.rs).
    pub(super) dependent: bool,
    pub(super) embed_rows: CudaFunction,
    pub(super) rms_norm: CudaFunction,
    pub(super) rope_kv_write: CudaFunction,
    pub(super) attention: DecodeAttention,
    pub(super) route_experts: CudaFunction,
    /// Per routed row, the router blocks done so far (reset by the last): MAX_MOE_TOKENS zeros.
    pub(super) route_done: CudaSlice<u32>,
    /// The rows the router has finished (reset by the last, which plans the experts' slots): one zero.
    pub(super) route_rows_done: CudaSlice<u32>,
    pub(super) moe_gate_up_by_slot: CudaFunction,
    pub(super) moe_down_by_slot: CudaFunction,
    pub(super) moe_gate_up_by_expert: CudaFunction,
    pub(super) moe_down_by_expert: CudaFunction,
    pub(super) moe_combine: CudaFunction,
    pub(super) linear_rows: CudaFunction,
    pub(super) silu_mul: CudaFunction,
    pub(super) greedy_pick: CudaFunction,
    /// Per row, the greedy-pick blocks done so far (reset by the last).
    pub(super) pick_done: CudaSlice<u32>,
    /// The prompt's experts on tensor cores.
    pub(super) grouped: GroupedExperts,
    /// The batch-invariant linear layers on tensor cores (bf16 only).
    pub(super) tiles: Option<LinearTiles>,
    /// A decode step's experts on the same tiles (bf16 only).
    pub(super) expert_tiles: Option<ExpertTiles>,
    pub(super) int8: Int8Kernels,
}

impl Kernels {
    /// The kernels for `device` in `dtype`; None off CUDA or for a dtype they are not built for.
    pub fn new(device: &Device, dtype: DType) -> Result<Option<Self>> {
        let (Device::Cuda(dev), Some(suffix)) = (device, dtype_suffix(dtype)) else {
            return Ok(None);
        };
        let load = |name: &str| -> Result<CudaFunction> {
            Ok(dev
                .get_or_load_custom_func(&format!("{name}_{suffix}"), "deepread_decode", PTX)?
                .into_cuda_function())
        };
        let dependent = dependent_launches(dev);
        Ok(Some(Self {
            stream: dev.cuda_stream(),
            dtype,
            dependent,
            embed_rows: load("embed_rows")?,
            rms_norm: load("rms_norm")?,
            rope_kv_write: load("rope_kv_write")?,
            attention: DecodeAttention::new(dev, load("attention_decode")?)?,
            route_experts: load("route_experts")?,
            route_done: dev.alloc_zeros::<u32>(MAX_MOE_TOKENS)?,
            route_rows_done: dev.alloc_zeros::<u32>(1)?,
            moe_gate_up_by_slot: load("moe_gate_up_by_slot")?,
            moe_down_by_slot: load("moe_down_by_slot")?,
            moe_gate_up_by_expert: load("moe_gate_up_by_expert")?,
            moe_down_by_expert: load("moe_down_by_expert")?,
            moe_combine: load("moe_combine")?,
            linear_rows: load("linear_rows")?,
            silu_mul: load("silu_mul")?,
            greedy_pick: load("greedy_pick")?,
            pick_done: dev.alloc_zeros::<u32>(MAX_PICK_ROWS)?,
            grouped: GroupedExperts::new(dev, dependent)?,
            tiles: LinearTiles::new(dev, dtype)?,
            expert_tiles: ExpertTiles::new(dev, dtype)?,
            int8: Int8Kernels {
                moe_gate_up_by_slot: load("moe_gate_up_by_slot_int8")?,
                moe_down_by_slot: load("moe_down_by_slot_int8")?,
                moe_gate_up_by_expert: load("moe_gate_up_by_expert_int8")?,
                moe_down_by_expert: load("moe_down_by_expert_int8")?,
                linear_rows: load("linear_rows_int8")?,
            },
            dev: dev.clone(),
        }))
    }

    pub fn device(&self) -> &CudaDevice {
        &self.dev
    }

    /// Whether the kernels can run a model of these dimensions (vector loads of 8, register-held rows).
    /// Attention takes power-of-two head dims from 8 to 256 (a lane holds 8 dims of a position).
    pub fn supports(
        head_dim: usize,
        hidden: usize,
        intermediate: usize,
        moe_intermediate: usize,
        experts: usize,
        top_k: usize,
    ) -> bool {
        head_dim.is_power_of_two()
            && (8..=MAX_HEAD_DIM).contains(&head_dim)
            && hidden.is_multiple_of(8)
            && intermediate.is_multiple_of(8)
            && moe_intermediate.is_multiple_of(8)
            && experts <= MAX_EXPERTS
            && top_k <= MAX_TOP_K
    }

    /// The embeddings (B, H) of the step's tokens from `table` (V, H).
    pub fn embed_rows(&self, table: &Tensor, inputs: &InputAddresses) -> Result<Tensor> {
        let h = table.dim(1)?;
        let b = inputs.batch;
        let out = self.empty((b, h), self.dtype)?;
        let (t_p, out_p, h_i) = (address(table)?, address(&out)?, h as i32);
        let mut launch = self.prepare(&self.embed_rows);
        launch.arg(&t_p).arg(&inputs.tokens).arg(&out_p).arg(&h_i);
        self.run(launch, grid(b as u32, 1, 1), 256, 0)?;
        Ok(out)
    }

    /// RMSNorm of each row of `x` (B, H).
    pub fn rms_norm(&self, x: &Tensor, weight: &Tensor, eps: f64) -> Result<Tensor> {
        Ok(self.norm(x, None, weight, eps)?.1)
    }

    /// The residual add `x + delta` and its RMSNorm: (sum, normed).
    pub fn add_rms_norm(
        &self,
        x: &Tensor,
        delta: &Tensor,
        weight: &Tensor,
        eps: f64,
    ) -> Result<(Tensor, Tensor)> {
        let (sum, normed) = self.norm(x, Some(delta), weight, eps)?;
        let sum = sum.ok_or_else(|| EngineError::Cuda("the residual sum was not kept".into()))?;
        Ok((sum, normed))
    }

    fn norm(
        &self,
        x: &Tensor,
        delta: Option<&Tensor>,
        weight: &Tensor,
        eps: f64,
    ) -> Result<(Option<Tensor>, Tensor)> {
        let (b, h) = x.dims2()?;
        let out = self.empty((b, h), self.dtype)?;
        let sum = delta.map(|_| self.empty((b, h), self.dtype)).transpose()?;
        let (x_p, w_p, out_p) = (address(x)?, address(weight)?, address(&out)?);
        let delta_p = optional_address(delta)?;
        let sum_p = optional_address(sum.as_ref())?;
        let (h_i, eps_f) = (h as i32, eps as f32);
        let mut launch = self.prepare(&self.rms_norm);
        launch
            .arg(&x_p)
            .arg(&delta_p)
            .arg(&w_p)
            .arg(&sum_p)
            .arg(&out_p)
            .arg(&h_i)
            .arg(&eps_f);
        let row_cache = (h * std::mem::size_of::<f32>()) as u32;
        self.run(launch, grid(b as u32, 1, 1), 256, row_cache)?;
        Ok((sum, out))
    }

    /// Rotates the q and k heads of `qkv` (B, (nh + 2·nkv)·hd) with the step's cos/sin, writes k and v into
    /// layer `layer`'s caches, and returns q (B, nh·hd).
    pub fn rope_kv_write(
        &self,
        qkv: &Tensor,
        inputs: &InputAddresses,
        layer: usize,
        heads: (usize, usize, usize),
    ) -> Result<Tensor> {
        let (nh, nkv, hd) = heads;
        let b = inputs.batch;
        let q = self.empty((b, nh * hd), self.dtype)?;
        let (k_p, v_p) = inputs.layer_caches(layer);
        let (pos_p, cap_p) = (inputs.positions, inputs.capacities);
        let (qkv_p, cos_p, sin_p, q_p) = (address(qkv)?, inputs.cos, inputs.sin, address(&q)?);
        let (nh_i, nkv_i, hd_i) = (nh as i32, nkv as i32, hd as i32);
        let mut launch = self.prepare(&self.rope_kv_write);
        launch
            .arg(&qkv_p)
            .arg(&cos_p)
            .arg(&sin_p)
            .arg(&k_p)
            .arg(&v_p)
            .arg(&pos_p)
            .arg(&cap_p)
            .arg(&q_p)
            .arg(&nh_i)
            .arg(&nkv_i)
            .arg(&hd_i);
        let threads = (hd / 2).next_multiple_of(32).min(1024) as u32;
        self.run(launch, grid(b as u32, (nh + 2 * nkv) as u32, 1), threads, 0)?;
        Ok(q)
    }

    /// `layer` (bias-free) on `x` (B, K) for a decode step: `linear_rows`, or cuBLAS for [`Sums::Fastest`]
    /// where [`Self::prefers_cublas`], or for [`Sums::BatchInvariant`] in bf16 the tensor-core tiles at every
    /// B.
    pub fn linear(&self, x: &Tensor, layer: Weight<'_>, sums: Sums) -> Result<Tensor> {
        if sums == Sums::BatchInvariant {
            if let Some(out) = self.linear_tiles(x, None, layer)? {
                return Ok(out);
            }
        }
        if self.prefers_cublas(layer, x.dim(0)?, sums) {
            return Ok(x.matmul(&self.dense_weight(layer)?.t()?)?);
        }
        self.linear_rows(x, None, layer)
    }

    /// Whether [`Sums::Fastest`] multiplies `rows` rows by `layer` with cuBLAS rather than the row kernels:
    /// past a few rows for weights in the activations' dtype; for int8, past the rows one block of the row
    /// kernel takes, where it would read each weight again per block and dequantizing once costs less.
    pub(super) fn prefers_cublas(&self, layer: Weight<'_>, rows: usize, sums: Sums) -> bool {
        let most = match layer {
            Weight::Dense(_) => ROW_KERNEL_MAX_ROWS,
            Weight::Int8(_) => LINEAR_MAX_ROWS,
        };
        sums == Sums::Fastest && rows > most
    }

    /// `layer`'s weights in the activations' dtype: as they are, or int8 dequantized for one product.
    pub(super) fn dense_weight(&self, layer: Weight<'_>) -> Result<Tensor> {
        match layer {
            Weight::Dense(w) => Ok(w.clone()),
            Weight::Int8(q) => q.dequantize(self.dtype),
        }
    }

    /// `layer` on RMSNorm(`x`) with `norm_weight`, `eps`: one kernel for the few rows of a decode step (the row
    /// kernel, or the tensor-core tiles for [`Sums::BatchInvariant`] where they take the layer), the norm's own
    /// launch first for more (the same values either way).
    pub fn norm_linear(
        &self,
        x: &Tensor,
        norm_weight: &Tensor,
        eps: f64,
        layer: Weight<'_>,
        sums: Sums,
    ) -> Result<Tensor> {
        let few = x.dim(0)? <= ROW_KERNEL_MAX_ROWS;
        if sums == Sums::BatchInvariant && few {
            if let Some(out) = self.linear_tiles(x, Some((norm_weight, eps)), layer)? {
                return Ok(out);
            }
        }
        if !few {
            let normed = self.rms_norm(x, norm_weight, eps)?;
            return self.linear(&normed, layer, sums);
        }
        self.linear_rows(x, Some((norm_weight, eps)), layer)
    }

    fn linear_rows(
        &self,
        x: &Tensor,
        norm: Option<(&Tensor, f64)>,
        layer: Weight<'_>,
    ) -> Result<Tensor> {
        let (b, k) = x.dims2()?;
        let (n, weight_k) = layer.dims()?;
        let blocks = (n as u32).div_ceil(MOE_WARPS);
        let (kernel, block) = match layer {
            Weight::Dense(_) => (&self.linear_rows, 8),
            Weight::Int8(_) => (&self.int8.linear_rows, 32),
        };
        if k % block != 0 || weight_k != k || blocks > MAX_GRID_Y {
            return Err(EngineError::Input(format!(
                "a decode step's linear layer of {n}×{weight_k} on rows of {k} does not fit the row kernel"
            )));
        }
        let chunks = b.div_ceil(LINEAR_MAX_ROWS) as u32;
        let normed = if norm.is_some() {
            (b.min(LINEAR_MAX_ROWS) * k * std::mem::size_of::<f32>()) as u32
        } else {
            0
        };
        let blocks = grid(chunks, blocks, 1);
        self.launch_linear(kernel, x, norm, layer, blocks, MOE_WARPS * 32, normed)
    }

    /// One launch of a linear kernel taking (x, norm_w, eps, w, out, rows, n, k), `linear_rows` or
    /// `linear_tiles`: out (B, N) in the activations' dtype from `x` (B, K), RMSNorm-ed first with `norm`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn launch_linear(
        &self,
        kernel: &CudaFunction,
        x: &Tensor,
        norm: Option<(&Tensor, f64)>,
        layer: Weight<'_>,
        blocks: (u32, u32, u32),
        threads: u32,
        shared_bytes: u32,
    ) -> Result<Tensor> {
        let (b, k) = x.dims2()?;
        let n = layer.dims()?.0;
        let out = self.empty((b, n), self.dtype)?;
        let (x_p, w_p, out_p) = (address(x)?, layer.address()?, address(&out)?);
        let norm_p = optional_address(norm.map(|(w, _)| w))?;
        let eps = norm.map_or(0.0, |(_, eps)| eps as f32);
        let (b_i, n_i, k_i) = (b as i32, n as i32, k as i32);
        let mut launch = self.prepare(kernel);
        launch
            .arg(&x_p)
            .arg(&norm_p)
            .arg(&eps)
            .arg(&w_p)
            .arg(&out_p)
            .arg(&b_i)
            .arg(&n_i)
            .arg(&k_i);
        self.run(launch, blocks, threads, shared_bytes)?;
        Ok(out)
    }

    /// The greedy token of each row of `logits` (B, V) skipping the row's banned ids, written to
    /// the step's picks (u32::MAX where nothing is left).
    pub fn greedy_pick(&self, logits: &Tensor, inputs: &InputAddresses) -> Result<()> {
        let (b, vocab) = logits.dims2()?;
        if b > MAX_PICK_ROWS {
            return Err(EngineError::Input(format!(
                "{b} sequences in one decode step; the greedy pick takes at most {MAX_PICK_ROWS}"
            )));
        }
        let blocks = pick_blocks(b);
        let values = self.empty((b, blocks as usize), DType::F32)?;
        let indices = self.empty((b, blocks as usize), DType::U32)?;
        let (l_p, val_p, idx_p) = (address(logits)?, address(&values)?, address(&indices)?);
        let done_p = self.pick_done.device_ptr(&self.stream).0;
        let (max_i, v_i) = (MAX_BANS as i32, vocab as i32);
        let mut launch = self.prepare(&self.greedy_pick);
        launch
            .arg(&l_p)
            .arg(&inputs.bans)
            .arg(&inputs.ban_counts)
            .arg(&max_i)
            .arg(&val_p)
            .arg(&idx_p)
            .arg(&done_p)
            .arg(&inputs.picks)
            .arg(&v_i);
        self.run(launch, grid(b as u32, blocks, 1), 256, 0)
    }

    /// A launch of `func` on the kernels' stream, a dependent of the kernel before it where the GPU allows.
    pub(super) fn prepare<'a>(&'a self, func: &'a CudaFunction) -> Launch<'a> {
        Launch::new(&self.stream, func, self.dependent)
    }

    pub(super) fn run(
        &self,
        launch: Launch<'_>,
        grid_dim: (u32, u32, u32),
        threads: u32,
        shared_mem_bytes: u32,
    ) -> Result<()> {
        let config = LaunchConfig {
            grid_dim,
            block_dim: (threads, 1, 1),
            shared_mem_bytes,
        };
        // SAFETY: every argument is a device address of a live, contiguous buffer of the size the kernel
        // indexes (checked by the callers' shapes) or a plain scalar, in decode.cu's parameter order.
        unsafe { launch.launch(config) }
    }

    pub(super) fn empty(&self, shape: impl Into<Shape>, dtype: DType) -> Result<Tensor> {
        empty(&self.dev, shape, dtype)
    }
}

pub(super) fn dtype_suffix(dtype: DType) -> Option<&'static str> {
    match dtype {
        DType::BF16 => Some("bf16"),
        DType::F32 => Some("f32"),
        _ => None,
    }
}

pub(super) fn grid(x: u32, y: u32, z: u32) -> (u32, u32, u32) {
    (x, y, z)
}

/// Blocks sharing each of `rows` rows' greedy pick: PICK_BLOCKS for a few rows, fewer for many, so that the
/// launch is about one wave.
fn pick_blocks(rows: usize) -> u32 {
    (PICK_BLOCKS_IN_ALL / rows.max(1) as u32).clamp(1, PICK_BLOCKS)
}
