//! A decode step's routed and shared experts on the linear tiles (expert_tiles.cuh), for
//! [`Sums::BatchInvariant`] in bf16 up to TILES_MAX_ROWS rows: each block reads 32 rows of one expert's weights
//! straight into registers, a quarter of K a warp, for a tile of up to 8 of its slots, so a step of a page
//! streams the experts it chose as the linear layers stream theirs. A slot's sums are those of the grouped
//! GEMMs' decode kernels (moe_prefill.cu's Quarters order), which take the steps of more rows, so they are the
//! same whatever the slots beside it. The routed and shared experts run in the same two launches.
//!
//! [`Sums::BatchInvariant`]: crate::lm::Sums::BatchInvariant

use candle_core::cuda_backend::CudaDevice;
use candle_core::{DType, Tensor};

use super::buffers::address;
use super::experts::{mixed_weights, Routed};
use super::grouped_experts::{GroupedExperts, SharedArgs, SharedBuffers};
use super::launch::{grid, Kernels};
use super::linear_tiles::Builds;
use super::mlp::Mlp;
use crate::error::Result;

/// expert_tiles.cuh's block: threads, gate/up's intermediate columns and down's output rows a block
/// (TILE_GROUPS · 8 and · 16), K granule (TILE_K), slots a tile (FEW_PAGES).
const THREADS: u32 = 256;
const GATE_UP_COLUMNS: usize = 16;
const DOWN_ROWS: usize = 32;
const K_BLOCK: usize = 64;
const SLOTS: usize = 8;
/// Rows up to which a step's experts run on these tiles rather than the grouped GEMMs' decode kernels (at most
/// SLOTS: a tile holds an expert's slots). Measured on the H200 (2026-11-29, `deepread bench --tokens 128`,
/// one job): with the tiles, a step takes 0.76 / 0.94 ms at 1 / 4 pages, on the decode kernels alone 0.86 /
/// 1.00; at 8 pages the two are level (1.10 against 1.09-1.12).
const TILES_MAX_ROWS: usize = 4;

/// The gate/up and down kernels, each over bf16 weights and over int8 rows.
pub struct ExpertTiles {
    gate_up: Builds,
    down: Builds,
}

impl ExpertTiles {
    /// The kernels for activations in `dtype`: None but for bf16.
    pub(super) fn new(dev: &CudaDevice, dtype: DType) -> Result<Option<Self>> {
        if dtype != DType::BF16 {
            return Ok(None);
        }
        Ok(Some(Self {
            gate_up: Builds::load(dev, "expert_gate_up_tiles_few")?,
            down: Builds::load(dev, "expert_down_tiles_few")?,
        }))
    }
}

/// The routed experts' row tiles a launch provides for: each expert's slots in tiles of `tile`, so at most
/// ceil(slots / tile) + E, and at most one a slot (moe_plan.cuh's `routed_tiles`); the rest exit at once.
fn routed_tiles(slots: usize, experts: usize, tile: usize) -> usize {
    (slots.div_ceil(tile) + experts).min(slots)
}

impl Kernels {
    /// The routed experts (and the shared ones, if given) of a decode step on the expert tiles: y (B·k, H) f32,
    /// weighted, and the shared experts' (B, H) f32. None where the tiles do not take the step (more than
    /// TILES_MAX_ROWS rows, activations not bf16, sizes not multiples of 64). `choice`: the rows' experts, and
    /// the router's plan if it made one.
    pub(super) fn experts_on_tiles(
        &self,
        x: &Tensor,
        routed: Mlp<'_>,
        shared: Option<Mlp<'_>>,
        choice: &Routed,
    ) -> Result<Option<(Tensor, Option<Tensor>)>> {
        let Some(tiles) = &self.expert_tiles else {
            return Ok(None);
        };
        let (t, h) = x.dims2()?;
        if t > TILES_MAX_ROWS {
            return Ok(None);
        }
        let (e, inter, top_k) = (routed.experts()?, routed.inter()?, choice.ids.dim(1)?);
        let shared_fits = match shared {
            Some(mlp) => mlp.inter()?.is_multiple_of(K_BLOCK),
            None => true,
        };
        // The grouped GEMMs' bounds: bf16 activations, sizes multiples of 64 (K_BLOCK).
        if !(shared_fits && GroupedExperts::supports(self.dtype, h, inter, e)) {
            return Ok(None);
        }
        if shared.is_some_and(|s| s.is_int8() != routed.is_int8()) {
            return Err(mixed_weights());
        }
        let slots = t * top_k;
        let planned_here;
        let plan = match choice.plan.as_ref().filter(|p| p.fits(slots, e)) {
            Some(plan) => plan,
            None => {
                planned_here = self.grouped.plan(&choice.ids, slots, e)?;
                &planned_here
            }
        };
        let shared = shared
            .map(|mlp| SharedBuffers::new(&self.dev, mlp, t, h))
            .transpose()?;
        let s = shared
            .as_ref()
            .map_or(Ok(SharedArgs::default()), SharedBuffers::args)?;
        let shared_tiles = if shared.is_some() {
            t.div_ceil(SLOTS)
        } else {
            0
        };
        // Gate/up's grid spans the routed experts' I; wider shared experts take several row tiles.
        let parts = (s.inter as usize).div_ceil(inter).max(1);
        let routed_rows = routed_tiles(slots, e, SLOTS);
        let (gate_up_rows, down_rows) = (
            (routed_rows + shared_tiles * parts) as u32,
            (routed_rows + shared_tiles) as u32,
        );
        let act = self.empty((slots, inter), DType::BF16)?;
        let y = self.empty((slots, h), DType::F32)?;
        let (gu_p, d_p) = routed.addresses()?;
        let (x_p, w_p, act_p, y_p) = (
            address(x)?,
            address(&choice.weights)?,
            address(&act)?,
            address(&y)?,
        );
        let (off_p, ord_p) = (address(&plan.offsets)?, address(&plan.order)?);
        let (e_i, k_i, h_i, i_i, t_i) = (e as i32, top_k as i32, h as i32, inter as i32, t as i32);
        let int8 = routed.is_int8();

        let mut gate_up = self.prepare(tiles.gate_up.pick(int8));
        gate_up
            .arg(&x_p)
            .arg(&gu_p)
            .arg(&s.gate_up)
            .arg(&off_p)
            .arg(&ord_p)
            .arg(&act_p)
            .arg(&s.act)
            .arg(&k_i)
            .arg(&h_i)
            .arg(&i_i)
            .arg(&s.inter)
            .arg(&e_i)
            .arg(&t_i);
        let columns = inter.div_ceil(GATE_UP_COLUMNS) as u32;
        self.run(gate_up, grid(columns, gate_up_rows, 1), THREADS, 0)?;

        let mut down = self.prepare(tiles.down.pick(int8));
        down.arg(&act_p)
            .arg(&d_p)
            .arg(&s.down)
            .arg(&off_p)
            .arg(&ord_p)
            .arg(&w_p)
            .arg(&y_p)
            .arg(&s.act)
            .arg(&s.y)
            .arg(&h_i)
            .arg(&i_i)
            .arg(&s.inter)
            .arg(&e_i)
            .arg(&t_i)
            .arg(&k_i);
        let out_rows = h.div_ceil(DOWN_ROWS) as u32;
        self.run(down, grid(out_rows, down_rows, 1), THREADS, 0)?;
        Ok(Some((y, shared.map(|s| s.y))))
    }
}
