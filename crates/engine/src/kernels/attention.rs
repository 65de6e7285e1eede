//! The decode step's attention over each sequence's key/value cache (attention.cuh) and its launch.

use candle_core::cuda_backend::cudarc::driver::{CudaFunction, CudaSlice, DevicePtr};
use candle_core::cuda_backend::CudaDevice;
use candle_core::{DType, Tensor};

use super::buffers::address;
use super::launch::{grid, Kernels};
use super::step_inputs::InputAddresses;
use crate::error::{EngineError, Result};

/// Most splits of a sequence (attention.cuh's ATTN_MAX_SPLITS): a split holds 64 positions until the
/// sequence passes 4096.
const SPLITS: u32 = 64;
/// Threads of a block (ATTN_WARPS · 32).
const THREADS: u32 = 4 * 32;
/// (sequence, head) pairs from which a launch has BLOCKS_MANY_ROWS blocks per pair, each taking every 16th
/// split, rather than a block per possible split: a page of 1,200 positions has 19 splits, and blocks placed
/// only to find no split cost 64 pages up to a tenth of their step (H200, 2026-11-28).
const MANY_ROWS: usize = 64;
const BLOCKS_MANY_ROWS: u32 = 16;
/// Most (sequence, head) pairs one decode attention takes.
const MAX_HEAD_ROWS: usize = 16384;

pub(super) struct DecodeAttention {
    func: CudaFunction,
    /// Per (row, head), the splits done so far (reset by the last).
    done: CudaSlice<u32>,
}

impl DecodeAttention {
    pub(super) fn new(dev: &CudaDevice, func: CudaFunction) -> Result<Self> {
        Ok(Self {
            func,
            done: dev.alloc_zeros::<u32>(MAX_HEAD_ROWS)?,
        })
    }
}

impl Kernels {
    /// softmax(q·kᵀ/√hd)·v of each sequence over its whole cache (this step's key included): (B, nh·hd).
    /// A sequence's sums are the same whatever the batch and the grid (attention.cuh).
    pub fn attention(
        &self,
        q: &Tensor,
        inputs: &InputAddresses,
        layer: usize,
        heads: (usize, usize, usize),
    ) -> Result<Tensor> {
        let (nh, nkv, hd) = heads;
        let b = inputs.batch;
        let pairs = b * nh;
        if pairs > MAX_HEAD_ROWS {
            return Err(EngineError::Input(format!(
                "{b} sequences × {nh} heads in one decode step; attention takes at most {MAX_HEAD_ROWS}"
            )));
        }
        let partial = self.empty((pairs * SPLITS as usize, hd + 2), DType::F32)?;
        let out = self.empty((b, nh * hd), self.dtype)?;
        let (k_p, v_p) = inputs.layer_caches(layer);
        let (pos_p, cap_p) = (inputs.positions, inputs.capacities);
        let (q_p, part_p, out_p) = (address(q)?, address(&partial)?, address(&out)?);
        let done_p = self.attention.done.device_ptr(&self.stream).0;
        let (nh_i, nkv_i, hd_i) = (nh as i32, nkv as i32, hd as i32);
        let scale = (hd as f32).powf(-0.5);
        let mut launch = self.prepare(&self.attention.func);
        launch
            .arg(&q_p)
            .arg(&k_p)
            .arg(&v_p)
            .arg(&pos_p)
            .arg(&cap_p)
            .arg(&part_p)
            .arg(&done_p)
            .arg(&out_p)
            .arg(&nh_i)
            .arg(&nkv_i)
            .arg(&hd_i)
            .arg(&scale);
        let per_pair = if pairs >= MANY_ROWS {
            BLOCKS_MANY_ROWS
        } else {
            SPLITS
        };
        self.run(launch, grid(b as u32, nh as u32, per_pair), THREADS, 0)?;
        Ok(out)
    }
}
