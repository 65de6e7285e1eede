//! The decode kernels as tensor functions: each takes contiguous CUDA tensors, allocates its output and
//! launches on the device's stream.

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::{
    CudaFunction, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};
use candle_core::cuda_backend::{CudaDevice, CudaStorage};
use candle_core::op::BackpropOp;
use candle_core::{DType, Device, Shape, Storage, Tensor};
use half::bf16;

use super::step_inputs::{InputAddresses, MAX_BANS};
use crate::error::{EngineError, Result};

const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/decode.ptx"));

/// Splits of the sequence in decode attention: enough blocks to fill the GPU at one sequence, few enough
/// that the merge stays cheap.
const ATTENTION_SPLITS: u32 = 64;
/// Largest head dim and top-k the kernels hold in registers (decode.cu's ATTN_MAX_HEAD_DIM, ROUTE_MAX_K).
const MAX_HEAD_DIM: usize = 256;
const MAX_TOP_K: usize = 16;
/// Tokens one MoE launch may route: each expert takes each token at most once (decode.cu's MOE_MAX_SLOTS).
const MAX_MOE_TOKENS: usize = 8192;
/// Warps a block in the MoE kernels: one output row each.
const MOE_WARPS: u32 = 8;

/// The compiled kernels for one device and activation dtype (f32 or bf16).
pub struct Kernels {
    dev: CudaDevice,
    stream: std::sync::Arc<CudaStream>,
    dtype: DType,
    embed_rows: CudaFunction,
    rms_norm: CudaFunction,
    rope_kv_write: CudaFunction,
    attention_split: CudaFunction,
    attention_combine: CudaFunction,
    route_experts: CudaFunction,
    moe_gate_up: CudaFunction,
    moe_down: CudaFunction,
    moe_combine: CudaFunction,
    silu_mul: CudaFunction,
    greedy_pick: CudaFunction,
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
        Ok(Some(Self {
            stream: dev.cuda_stream(),
            dtype,
            embed_rows: load("embed_rows")?,
            rms_norm: load("rms_norm")?,
            rope_kv_write: load("rope_kv_write")?,
            attention_split: load("attention_split")?,
            attention_combine: load("attention_combine")?,
            route_experts: load("route_experts")?,
            moe_gate_up: load("moe_gate_up")?,
            moe_down: load("moe_down")?,
            moe_combine: load("moe_combine")?,
            silu_mul: load("silu_mul")?,
            greedy_pick: load("greedy_pick")?,
            dev: dev.clone(),
        }))
    }

    pub fn device(&self) -> &CudaDevice {
        &self.dev
    }

    /// Whether the kernels can run a model of these dimensions (vector loads of 8, register-held rows).
    pub fn supports(head_dim: usize, hidden: usize, moe_intermediate: usize, top_k: usize) -> bool {
        head_dim <= MAX_HEAD_DIM
            && head_dim % 2 == 0
            && hidden % 8 == 0
            && moe_intermediate % 8 == 0
            && top_k <= MAX_TOP_K
    }

    /// The embeddings (B, H) of the step's tokens from `table` (V, H).
    pub fn embed_rows(&self, table: &Tensor, inputs: &InputAddresses) -> Result<Tensor> {
        let h = table.dim(1)?;
        let b = inputs.batch;
        let out = self.empty((b, h), self.dtype)?;
        let (t_p, out_p, h_i) = (address(table)?, address(&out)?, h as i32);
        let mut launch = self.stream.launch_builder(&self.embed_rows);
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
        let delta_p = delta.map(address).transpose()?.unwrap_or(0);
        let sum_p = sum.as_ref().map(address).transpose()?.unwrap_or(0);
        let (h_i, eps_f) = (h as i32, eps as f32);
        let mut launch = self.stream.launch_builder(&self.rms_norm);
        launch
            .arg(&x_p)
            .arg(&delta_p)
            .arg(&w_p)
            .arg(&sum_p)
            .arg(&out_p)
            .arg(&h_i)
            .arg(&eps_f);
        self.run(launch, grid(b as u32, 1, 1), 256, 0)?;
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
        let mut launch = self.stream.launch_builder(&self.rope_kv_write);
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

    /// softmax(q·kᵀ/√hd)·v of each sequence over its whole cache (this step's key included): (B, nh·hd).
    pub fn attention(
        &self,
        q: &Tensor,
        inputs: &InputAddresses,
        layer: usize,
        heads: (usize, usize, usize),
    ) -> Result<Tensor> {
        let (nh, nkv, hd) = heads;
        let b = inputs.batch;
        let partial = self.empty((b * nh * ATTENTION_SPLITS as usize, hd + 2), DType::F32)?;
        let out = self.empty((b, nh * hd), self.dtype)?;
        let (k_p, v_p) = inputs.layer_caches(layer);
        let (pos_p, cap_p) = (inputs.positions, inputs.capacities);
        let (q_p, part_p, out_p) = (address(q)?, address(&partial)?, address(&out)?);
        let (nh_i, nkv_i, hd_i) = (nh as i32, nkv as i32, hd as i32);
        let scale = (hd as f32).powf(-0.5);
        let mut split = self.stream.launch_builder(&self.attention_split);
        split
            .arg(&q_p)
            .arg(&k_p)
            .arg(&v_p)
            .arg(&pos_p)
            .arg(&cap_p)
            .arg(&part_p)
            .arg(&nh_i)
            .arg(&nkv_i)
            .arg(&hd_i)
            .arg(&scale);
        self.run(split, grid(b as u32, nh as u32, ATTENTION_SPLITS), 128, 0)?;
        let splits = ATTENTION_SPLITS as i32;
        let mut combine = self.stream.launch_builder(&self.attention_combine);
        combine
            .arg(&part_p)
            .arg(&out_p)
            .arg(&nh_i)
            .arg(&hd_i)
            .arg(&splits);
        self.run(
            combine,
            grid(b as u32, nh as u32, 1),
            hd.next_multiple_of(32) as u32,
            0,
        )?;
        Ok(out)
    }

    /// Router softmax and top-k of each row of `x` (B, H) against `gate` (E, H) in f32: the chosen experts
    /// (B, k) in index order (u32) and their weights (B, k) in f32.
    pub fn route_experts(
        &self,
        x: &Tensor,
        gate: &Tensor,
        top_k: usize,
        scaling: f64,
        norm_topk: bool,
    ) -> Result<(Tensor, Tensor)> {
        let (b, h) = x.dims2()?;
        let e = gate.dim(0)?;
        let ids = self.empty((b, top_k), DType::U32)?;
        let weights = self.empty((b, top_k), DType::F32)?;
        let (x_p, g_p, ids_p, w_p) = (
            address(x)?,
            address(gate)?,
            address(&ids)?,
            address(&weights)?,
        );
        let (h_i, e_i, k_i) = (h as i32, e as i32, top_k as i32);
        let (scale_f, norm_i) = (scaling as f32, i32::from(norm_topk));
        let mut launch = self.stream.launch_builder(&self.route_experts);
        launch
            .arg(&x_p)
            .arg(&g_p)
            .arg(&ids_p)
            .arg(&w_p)
            .arg(&h_i)
            .arg(&e_i)
            .arg(&k_i)
            .arg(&scale_f)
            .arg(&norm_i);
        let shared = ((h + e) * std::mem::size_of::<f32>()) as u32;
        self.run(launch, grid(b as u32, 1, 1), 256, shared)?;
        Ok((ids, weights))
    }

    /// The routed experts of every slot (row × chosen expert), reading each chosen expert's rows once:
    /// `gate_up` (E, 2I, H), `down` (E, H, I). Returns y (B·k, H) in f32, already weighted.
    pub fn moe_experts(
        &self,
        x: &Tensor,
        gate_up: &Tensor,
        down: &Tensor,
        ids: &Tensor,
        weights: &Tensor,
    ) -> Result<Tensor> {
        let (b, h) = x.dims2()?;
        let (e, two_i, _) = gate_up.dims3()?;
        let inter = two_i / 2;
        let top_k = ids.dim(1)?;
        let slots = b * top_k;
        if b > MAX_MOE_TOKENS {
            return Err(EngineError::Input(format!(
                "{b} tokens through the MoE at once; the kernel takes at most {MAX_MOE_TOKENS}"
            )));
        }
        let act = self.empty((slots, inter), self.dtype)?;
        let y = self.empty((slots, h), DType::F32)?;
        let (x_p, gu_p, d_p, ids_p, w_p) = (
            address(x)?,
            address(gate_up)?,
            address(down)?,
            address(ids)?,
            address(weights)?,
        );
        let (act_p, y_p) = (address(&act)?, address(&y)?);
        let (slots_i, k_i, h_i, i_i) = (slots as i32, top_k as i32, h as i32, inter as i32);
        let mut first = self.stream.launch_builder(&self.moe_gate_up);
        first
            .arg(&x_p)
            .arg(&gu_p)
            .arg(&ids_p)
            .arg(&act_p)
            .arg(&slots_i)
            .arg(&k_i)
            .arg(&h_i)
            .arg(&i_i);
        self.run(
            first,
            grid((inter as u32).div_ceil(MOE_WARPS), e as u32, 1),
            MOE_WARPS * 32,
            0,
        )?;
        let mut second = self.stream.launch_builder(&self.moe_down);
        second
            .arg(&act_p)
            .arg(&d_p)
            .arg(&ids_p)
            .arg(&w_p)
            .arg(&y_p)
            .arg(&slots_i)
            .arg(&h_i)
            .arg(&i_i);
        self.run(
            second,
            grid((h as u32).div_ceil(MOE_WARPS), e as u32, 1),
            MOE_WARPS * 32,
            0,
        )?;
        Ok(y)
    }

    /// Σ of each row's k expert outputs `y` (B·k, H), in expert order, + `shared` (B, H): the MoE's output,
    /// added to the residual stream `x` when given.
    pub fn moe_combine(
        &self,
        y: &Tensor,
        shared: Option<&Tensor>,
        x: Option<&Tensor>,
        top_k: usize,
    ) -> Result<Tensor> {
        let (slots, h) = y.dims2()?;
        let b = slots / top_k;
        let out = self.empty((b, h), self.dtype)?;
        let (y_p, out_p) = (address(y)?, address(&out)?);
        let x_p = x.map(address).transpose()?.unwrap_or(0);
        let shared_p = shared.map(address).transpose()?.unwrap_or(0);
        let (k_i, h_i) = (top_k as i32, h as i32);
        let mut launch = self.stream.launch_builder(&self.moe_combine);
        launch
            .arg(&y_p)
            .arg(&shared_p)
            .arg(&x_p)
            .arg(&out_p)
            .arg(&k_i)
            .arg(&h_i);
        self.run(launch, grid(b as u32, 1, 1), 256, 0)?;
        Ok(out)
    }

    /// silu(gate) · up of a fused projection (B, 2I) → (B, I).
    pub fn silu_mul(&self, gate_up: &Tensor) -> Result<Tensor> {
        let (b, two_i) = gate_up.dims2()?;
        let inter = two_i / 2;
        let out = self.empty((b, inter), self.dtype)?;
        let (gu_p, out_p, i_i) = (address(gate_up)?, address(&out)?, inter as i32);
        let mut launch = self.stream.launch_builder(&self.silu_mul);
        launch.arg(&gu_p).arg(&out_p).arg(&i_i);
        self.run(launch, grid(b as u32, 1, 1), 256, 0)?;
        Ok(out)
    }

    /// The greedy token of each row of `logits` (B, V; overwritten) skipping the row's banned ids, written to
    /// the step's picks (u32::MAX where nothing is left).
    pub fn greedy_pick(&self, logits: &Tensor, inputs: &InputAddresses) -> Result<()> {
        let (b, vocab) = logits.dims2()?;
        let l_p = address(logits)?;
        let (max_i, v_i) = (MAX_BANS as i32, vocab as i32);
        let mut launch = self.stream.launch_builder(&self.greedy_pick);
        launch
            .arg(&l_p)
            .arg(&inputs.bans)
            .arg(&inputs.ban_counts)
            .arg(&max_i)
            .arg(&inputs.picks)
            .arg(&v_i);
        self.run(launch, grid(b as u32, 1, 1), 1024, 0)
    }

    fn run(
        &self,
        mut launch: candle_core::cuda_backend::cudarc::driver::LaunchArgs<'_>,
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
            .map(|_| ())
            .map_err(|e| EngineError::Cuda(e.to_string()))
    }

    /// An uninitialised tensor the kernel will fill.
    fn empty(&self, shape: impl Into<Shape>, dtype: DType) -> Result<Tensor> {
        let shape = shape.into();
        let n = shape.elem_count();
        // SAFETY: the memory is fully written by the kernel before anything reads it.
        let storage = unsafe {
            match dtype {
                DType::BF16 => {
                    CudaStorage::wrap_cuda_slice(self.dev.alloc::<bf16>(n)?, self.dev.clone())
                }
                DType::F32 => {
                    CudaStorage::wrap_cuda_slice(self.dev.alloc::<f32>(n)?, self.dev.clone())
                }
                DType::U32 => {
                    CudaStorage::wrap_cuda_slice(self.dev.alloc::<u32>(n)?, self.dev.clone())
                }
                other => {
                    return Err(EngineError::Cuda(format!(
                        "no decode-kernel buffers of {other:?}"
                    )))
                }
            }
        };
        Ok(Tensor::from_storage(
            Storage::Cuda(storage),
            shape,
            BackpropOp::none(),
            false,
        ))
    }
}

fn dtype_suffix(dtype: DType) -> Option<&'static str> {
    match dtype {
        DType::BF16 => Some("bf16"),
        DType::F32 => Some("f32"),
        _ => None,
    }
}

fn grid(x: u32, y: u32, z: u32) -> (u32, u32, u32) {
    (x, y, z)
}

/// The device address of a contiguous CUDA tensor's first element.
pub(crate) fn address(t: &Tensor) -> Result<u64> {
    let (storage, layout) = t.storage_and_layout();
    if !layout.is_contiguous() {
        return Err(EngineError::Cuda(
            "a decode kernel was given a non-contiguous tensor".into(),
        ));
    }
    let Storage::Cuda(s) = &*storage else {
        return Err(EngineError::Cuda(
            "a decode kernel was given a tensor off the GPU".into(),
        ));
    };
    let stream = s.device.cuda_stream();
    let base = match s.dtype() {
        DType::BF16 => s.as_cuda_slice::<bf16>()?.device_ptr(&stream).0,
        DType::F32 => s.as_cuda_slice::<f32>()?.device_ptr(&stream).0,
        DType::U32 => s.as_cuda_slice::<u32>()?.device_ptr(&stream).0,
        other => {
            return Err(EngineError::Cuda(format!(
                "a decode kernel was given a {other:?} tensor"
            )))
        }
    };
    Ok(base + (layout.start_offset() * s.dtype().size_in_bytes()) as u64)
}
