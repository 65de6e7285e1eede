//! The routed experts of a prompt, or of a step past 256 slots, as grouped GEMMs on tensor cores
//! (moe_prefill.cu): the slots are grouped by expert on the GPU (`moe_plan`), then each expert's slots are
//! multiplied by its weights in tiles of 128 slots. bf16 activations, weights in bf16 or int8 rows (read as
//! int8, multiplied in bf16), hidden and expert sizes multiples of 64; elsewhere the row-per-warp kernels run.

use candle_core::cuda_backend::cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use candle_core::cuda_backend::CudaDevice;
use candle_core::{DType, Tensor};

use super::buffers::{address, empty};
use super::mlp::Mlp;
use crate::error::{EngineError, Result};

const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/moe_prefill.ptx"));

/// moe_prefill.cu's tile shape: slots per row tile (MOE_BM), gate/up columns per block (64 of each), down
/// columns per block (MOE_BN), threads (MOE_THREADS), planner threads and most experts (MOE_PLAN_THREADS,
/// MOE_MAX_EXPERTS).
const SLOTS_PER_TILE: usize = 128;
const GATE_UP_COLUMNS: usize = 64;
const DOWN_COLUMNS: usize = 128;
const THREADS: u32 = 256;
const PLAN_THREADS: u32 = 1024;
const MAX_EXPERTS: usize = 1024;

/// One kind of weights' pair of kernels.
struct Gemms {
    gate_up: CudaFunction,
    down: CudaFunction,
}

pub struct GroupedExperts {
    dev: CudaDevice,
    plan: CudaFunction,
    bf16: Gemms,
    int8: Gemms,
}

impl GroupedExperts {
    pub fn new(dev: &CudaDevice) -> Result<Self> {
        let load = |name: &str| -> Result<CudaFunction> {
            Ok(dev
                .get_or_load_custom_func(name, "deepread_moe_prefill", PTX)?
                .into_cuda_function())
        };
        let gemms = |suffix: &str| -> Result<Gemms> {
            Ok(Gemms {
                gate_up: load(&format!("moe_gate_up_grouped_{suffix}"))?,
                down: load(&format!("moe_down_grouped_{suffix}"))?,
            })
        };
        Ok(Self {
            plan: load("moe_plan")?,
            bf16: gemms("bf16")?,
            int8: gemms("int8")?,
            dev: dev.clone(),
        })
    }

    /// Whether the kernels take experts of these sizes with activations in this dtype.
    pub fn supports(dtype: DType, hidden: usize, inter: usize, experts: usize) -> bool {
        dtype == DType::BF16
            && hidden.is_multiple_of(64)
            && inter.is_multiple_of(64)
            && experts <= MAX_EXPERTS
    }

    /// y (slots, H) in f32, weighted, for the slots `ids` (T, k) of the rows of `x` (T, H) through the stacked
    /// experts: gate_up (E, 2I, H) and down (E, H, I).
    pub fn forward(
        &self,
        x: &Tensor,
        experts: Mlp<'_>,
        ids: &Tensor,
        weights: &Tensor,
    ) -> Result<Tensor> {
        let (t, h) = x.dims2()?;
        let (e, inter, top_k) = (experts.experts()?, experts.inter()?, ids.dim(1)?);
        let gemms = if experts.is_int8() {
            &self.int8
        } else {
            &self.bf16
        };
        let slots = t * top_k;
        let offsets = empty(&self.dev, e + 1, DType::U32)?;
        let order = empty(&self.dev, slots, DType::U32)?;
        let act = empty(&self.dev, (slots, inter), DType::BF16)?;
        let y = empty(&self.dev, (slots, h), DType::F32)?;
        let (gu_p, d_p) = experts.addresses()?;
        let (x_p, ids_p, w_p) = (address(x)?, address(ids)?, address(weights)?);
        let (off_p, ord_p, act_p, y_p) = (
            address(&offsets)?,
            address(&order)?,
            address(&act)?,
            address(&y)?,
        );
        let (slots_i, e_i, k_i, h_i, i_i) =
            (slots as i32, e as i32, top_k as i32, h as i32, inter as i32);
        let stream = self.dev.cuda_stream();
        let mut plan = stream.launch_builder(&self.plan);
        plan.arg(&ids_p)
            .arg(&slots_i)
            .arg(&e_i)
            .arg(&off_p)
            .arg(&ord_p);
        launch(plan, (1, 1), PLAN_THREADS)?;
        // Every expert's slots in tiles: at most ceil(slots / tile) + E of them; the rest exit at once.
        let tiles = (slots.div_ceil(SLOTS_PER_TILE) + e) as u32;
        let mut first = stream.launch_builder(&gemms.gate_up);
        first
            .arg(&x_p)
            .arg(&gu_p)
            .arg(&off_p)
            .arg(&ord_p)
            .arg(&act_p)
            .arg(&k_i)
            .arg(&h_i)
            .arg(&i_i)
            .arg(&e_i);
        launch(first, ((inter / GATE_UP_COLUMNS) as u32, tiles), THREADS)?;
        let mut second = stream.launch_builder(&gemms.down);
        second
            .arg(&act_p)
            .arg(&d_p)
            .arg(&off_p)
            .arg(&ord_p)
            .arg(&w_p)
            .arg(&y_p)
            .arg(&h_i)
            .arg(&i_i)
            .arg(&e_i);
        launch(second, (h.div_ceil(DOWN_COLUMNS) as u32, tiles), THREADS)?;
        Ok(y)
    }
}

fn launch(
    mut builder: candle_core::cuda_backend::cudarc::driver::LaunchArgs<'_>,
    grid: (u32, u32),
    threads: u32,
) -> Result<()> {
    let config = LaunchConfig {
        grid_dim: (grid.0, grid.1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the arguments follow moe_prefill.cu's parameter lists; the buffers are sized from the same
    // slot, expert and hidden counts the kernels index by.
    unsafe { builder.launch(config) }
        .map(|_| ())
        .map_err(|e| EngineError::Cuda(e.to_string()))
}
