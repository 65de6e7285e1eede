//! The routed experts of a prompt or of a decode step as grouped GEMMs on tensor cores (moe_prefill.cu): the
//! slots are grouped by expert on the GPU (`moe_plan`), then each expert's slots are multiplied by its weights
//! in tiles of 128 slots, or of 16 where experts have a few (the same sums either way, so a slot's output does
//! not depend on which tile served it). A decode step of [`Sums::BatchInvariant`] takes 16-slot tiles that sum
//! K in the expert tiles' order (moe_prefill.cu's Quarters, expert_tiles.rs), at any size. A layer's shared
//! experts can ride in the same two launches, as one more expert whose slots are all the tokens. bf16
//! activations, weights in bf16 or int8 rows (read as int8, multiplied in bf16), hidden and expert sizes
//! multiples of 64; elsewhere the row-per-warp kernels run.

use candle_core::cuda_backend::cudarc::driver::{CudaFunction, LaunchConfig};
use candle_core::cuda_backend::CudaDevice;
use candle_core::{DType, Tensor};

use super::buffers::{address, empty};
use super::dependent_launch::Launch;
use super::experts::mixed_weights;
use super::mlp::Mlp;
use crate::error::Result;
use crate::lm::Sums;

const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/moe_prefill.ptx"));

/// A tile shape of moe_prefill.cu (its `TileShape`s): slots per row tile (BM), gate/up's act columns per block
/// (BN / 2), down's output columns per block (BN), threads. Both shapes give the same sums, bit for bit.
struct Tile {
    slots: usize,
    gate_up_columns: usize,
    down_columns: usize,
    threads: u32,
}

/// `Wide`: an expert's weights read once per 128 slots, for prompts.
const WIDE: Tile = Tile {
    slots: 128,
    gate_up_columns: 64,
    down_columns: 128,
    threads: 256,
};

/// `Narrow`: 16-slot tiles and narrower blocks, for a few slots an expert (decode steps); the decode kernels'
/// shape too.
const NARROW: Tile = Tile {
    slots: 16,
    gate_up_columns: 32,
    down_columns: 64,
    threads: 64,
};

/// Up to this many slots an expert on average, `NARROW` tiles: past it they would read the weights of the
/// busiest experts several times.
const NARROW_SLOTS_PER_EXPERT: usize = 8;
/// moe_plan's threads and most experts (MOE_PLAN_THREADS, MOE_MAX_EXPERTS).
const PLAN_THREADS: u32 = 1024;
const MAX_EXPERTS: usize = 1024;

/// One kind of weights' pair of kernels, and their tile.
struct Gemms {
    gate_up: CudaFunction,
    down: CudaFunction,
    tile: Tile,
}

pub struct GroupedExperts {
    dev: CudaDevice,
    /// Whether the kernels are launched as dependents of the kernel before them (dependent_launch.rs).
    dependent: bool,
    plan: CudaFunction,
    bf16: Gemms,
    bf16_narrow: Gemms,
    int8: Gemms,
    int8_narrow: Gemms,
    /// Narrow tiles summing in the expert tiles' order, for [`Sums::BatchInvariant`].
    bf16_decode: Gemms,
    int8_decode: Gemms,
}

impl GroupedExperts {
    /// The kernels for `dev`; `dependent`: launch them as dependents of the kernel before them
    /// (dependent_launch.rs).
    pub fn new(dev: &CudaDevice, dependent: bool) -> Result<Self> {
        let load = |name: &str| -> Result<CudaFunction> {
            Ok(dev
                .get_or_load_custom_func(name, "deepread_moe_prefill", PTX)?
                .into_cuda_function())
        };
        let gemms = |suffix: &str, tile: Tile| -> Result<Gemms> {
            Ok(Gemms {
                gate_up: load(&format!("moe_gate_up_{suffix}"))?,
                down: load(&format!("moe_down_{suffix}"))?,
                tile,
            })
        };
        Ok(Self {
            plan: load("moe_plan")?,
            bf16: gemms("grouped_bf16", WIDE)?,
            bf16_narrow: gemms("narrow_bf16", NARROW)?,
            int8: gemms("grouped_int8", WIDE)?,
            int8_narrow: gemms("narrow_int8", NARROW)?,
            bf16_decode: gemms("decode_bf16", NARROW)?,
            int8_decode: gemms("decode_int8", NARROW)?,
            dev: dev.clone(),
            dependent,
        })
    }

    /// Whether the kernels take experts of these sizes with activations in this dtype.
    pub fn supports(dtype: DType, hidden: usize, inter: usize, experts: usize) -> bool {
        dtype == DType::BF16
            && hidden.is_multiple_of(64)
            && inter.is_multiple_of(64)
            && experts <= MAX_EXPERTS
    }

    /// Whether shared experts `inter` wide can run beside the routed ones.
    pub fn takes_shared(inter: usize) -> bool {
        inter.is_multiple_of(64)
    }

    /// y (slots, H) in f32, weighted, for the slots `ids` (T, k) of the rows of `x` (T, H) through the stacked
    /// experts: gate_up (E, 2I, H) and down (E, H, I). With `shared` (gate_up (2I', H), down (H, I'), of the
    /// routed experts' kind), the shared experts' y (T, H) in f32 too, from the same two launches. `plan`: the
    /// slots already grouped by expert (by the router), else moe_plan's launch groups them first. `sums`:
    /// [`Sums::BatchInvariant`] for a decode step whose sums must be the expert tiles'.
    pub fn forward(
        &self,
        x: &Tensor,
        experts: Mlp<'_>,
        shared: Option<Mlp<'_>>,
        (ids, weights): (&Tensor, &Tensor),
        plan: Option<&ExpertPlan>,
        sums: Sums,
    ) -> Result<(Tensor, Option<Tensor>)> {
        if shared.is_some_and(|s| s.is_int8() != experts.is_int8()) {
            return Err(mixed_weights());
        }
        let (t, h) = x.dims2()?;
        let (e, inter, top_k) = (experts.experts()?, experts.inter()?, ids.dim(1)?);
        let slots = t * top_k;
        let gemms = self.gemms(experts.is_int8(), slots, e, sums);
        let tile = &gemms.tile;
        let stream = self.dev.cuda_stream();
        let mut planned_here = None;
        let plan = self.plan_unless_given(plan, ids, slots, e, &mut planned_here)?;
        let act = empty(&self.dev, (slots, inter), DType::BF16)?;
        let y = empty(&self.dev, (slots, h), DType::F32)?;
        let shared = shared
            .map(|mlp| SharedBuffers::new(&self.dev, mlp, t, h))
            .transpose()?;
        let (gu_p, d_p) = experts.addresses()?;
        let (x_p, w_p) = (address(x)?, address(weights)?);
        let (off_p, ord_p, act_p, y_p) = (
            address(&plan.offsets)?,
            address(&plan.order)?,
            address(&act)?,
            address(&y)?,
        );
        let s = shared
            .as_ref()
            .map_or(Ok(SharedArgs::default()), SharedBuffers::args)?;
        let (e_i, k_i, h_i, i_i, t_i) = (e as i32, top_k as i32, h as i32, inter as i32, t as i32);
        let shared_tiles = if shared.is_some() {
            t.div_ceil(tile.slots)
        } else {
            0
        };
        let tiles = (row_tiles(slots, e, tile.slots) + shared_tiles) as u32;
        let mut first = Launch::new(&stream, &gemms.gate_up, self.dependent);
        first
            .arg(&x_p)
            .arg(&gu_p)
            .arg(&off_p)
            .arg(&ord_p)
            .arg(&act_p)
            .arg(&k_i)
            .arg(&h_i)
            .arg(&i_i)
            .arg(&e_i)
            .arg(&t_i)
            .arg(&s.gate_up)
            .arg(&s.act)
            .arg(&s.inter);
        let widest = inter.max(s.inter as usize);
        launch(
            first,
            ((widest / tile.gate_up_columns) as u32, tiles),
            tile.threads,
        )?;
        let mut second = Launch::new(&stream, &gemms.down, self.dependent);
        second
            .arg(&act_p)
            .arg(&d_p)
            .arg(&off_p)
            .arg(&ord_p)
            .arg(&w_p)
            .arg(&y_p)
            .arg(&h_i)
            .arg(&i_i)
            .arg(&e_i)
            .arg(&t_i)
            .arg(&k_i)
            .arg(&s.down)
            .arg(&s.act)
            .arg(&s.y)
            .arg(&s.inter);
        launch(
            second,
            (h.div_ceil(tile.down_columns) as u32, tiles),
            tile.threads,
        )?;
        Ok((y, shared.map(|s| s.y)))
    }

    /// `given` where it plans these `slots` over `experts` (the router's), else a plan made by moe_plan's launch
    /// and kept in `made`.
    pub(super) fn plan_unless_given<'p>(
        &self,
        given: Option<&'p ExpertPlan>,
        ids: &Tensor,
        slots: usize,
        experts: usize,
        made: &'p mut Option<ExpertPlan>,
    ) -> Result<&'p ExpertPlan> {
        match given.filter(|p| p.fits(slots, experts)) {
            Some(plan) => Ok(plan),
            None => Ok(made.insert(self.plan(ids, slots, experts)?)),
        }
    }

    /// The `slots` slots of `ids` grouped by expert, by moe_plan's launch.
    fn plan(&self, ids: &Tensor, slots: usize, experts: usize) -> Result<ExpertPlan> {
        let plan = ExpertPlan::new(&self.dev, slots, experts)?;
        let (ids_p, off_p, ord_p) = (
            address(ids)?,
            address(&plan.offsets)?,
            address(&plan.order)?,
        );
        let (slots_i, e_i) = (slots as i32, experts as i32);
        let stream = self.dev.cuda_stream();
        let mut launcher = Launch::new(&stream, &self.plan, self.dependent);
        launcher
            .arg(&ids_p)
            .arg(&slots_i)
            .arg(&e_i)
            .arg(&off_p)
            .arg(&ord_p);
        launch(launcher, (1, 1), PLAN_THREADS)?;
        Ok(plan)
    }

    /// The kernels for these weights and this many slots over `experts`: the decode kernels for
    /// [`Sums::BatchInvariant`] at any size, else by the slots an expert has.
    fn gemms(&self, int8: bool, slots: usize, experts: usize, sums: Sums) -> &Gemms {
        if sums == Sums::BatchInvariant {
            return if int8 {
                &self.int8_decode
            } else {
                &self.bf16_decode
            };
        }
        let narrow = slots <= NARROW_SLOTS_PER_EXPERT * experts;
        match (int8, narrow) {
            (false, true) => &self.bf16_narrow,
            (false, false) => &self.bf16,
            (true, true) => &self.int8_narrow,
            (true, false) => &self.int8,
        }
    }
}

/// A step's slots grouped by expert for the grouped GEMMs, as moe_plan.cuh's plan_slots writes them: expert
/// e's slots are `order[offsets[e]..offsets[e + 1]]`, in no particular order.
pub struct ExpertPlan {
    /// (E + 1) u32.
    pub offsets: Tensor,
    /// (slots) u32.
    pub order: Tensor,
}

impl ExpertPlan {
    /// Room for the plan of `slots` slots over `experts`, to be written on the device.
    pub(super) fn new(dev: &CudaDevice, slots: usize, experts: usize) -> Result<Self> {
        Ok(Self {
            offsets: empty(dev, experts + 1, DType::U32)?,
            order: empty(dev, slots, DType::U32)?,
        })
    }

    fn fits(&self, slots: usize, experts: usize) -> bool {
        self.offsets.elem_count() == experts + 1 && self.order.elem_count() == slots
    }
}

/// The routed experts' row tiles a launch provides for: each expert's slots in tiles of `tile_slots`, so at
/// most ceil(slots / tile_slots) + E, and at most one a slot (moe_plan.cuh's `routed_tiles`); the rest exit at
/// once. At one token that is 6 rather than 65, so the grid holds no thousands of empty blocks ahead of the
/// shared experts'. The expert tiles' launches count theirs alike.
pub(super) fn row_tiles(slots: usize, experts: usize, tile_slots: usize) -> usize {
    (slots.div_ceil(tile_slots) + experts).min(slots)
}

/// The shared experts' weights and the buffers their launches write: act (T, I') bf16, y (T, H) f32.
pub(super) struct SharedBuffers<'a> {
    mlp: Mlp<'a>,
    act: Tensor,
    pub(super) y: Tensor,
}

/// The shared experts' kernel arguments: addresses (0 for none) and their width.
#[derive(Default)]
pub(super) struct SharedArgs {
    pub(super) gate_up: u64,
    pub(super) down: u64,
    pub(super) act: u64,
    pub(super) y: u64,
    pub(super) inter: i32,
}

impl<'a> SharedBuffers<'a> {
    pub(super) fn new(dev: &CudaDevice, mlp: Mlp<'a>, tokens: usize, h: usize) -> Result<Self> {
        Ok(Self {
            act: empty(dev, (tokens, mlp.inter()?), DType::BF16)?,
            y: empty(dev, (tokens, h), DType::F32)?,
            mlp,
        })
    }

    pub(super) fn args(&self) -> Result<SharedArgs> {
        let (gate_up, down) = self.mlp.addresses()?;
        Ok(SharedArgs {
            gate_up,
            down,
            act: address(&self.act)?,
            y: address(&self.y)?,
            inter: self.mlp.inter()? as i32,
        })
    }
}

fn launch(builder: Launch<'_>, grid: (u32, u32), threads: u32) -> Result<()> {
    let config = LaunchConfig {
        grid_dim: (grid.0, grid.1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the arguments follow moe_prefill.cu's parameter lists; the buffers are sized from the same
    // slot, expert and hidden counts the kernels index by.
    unsafe { builder.launch(config) }
}
