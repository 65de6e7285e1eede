//! A decode step's routed and shared experts on the linear tiles (expert_tiles.cuh), for
//! [`Sums::BatchInvariant`] with bf16 activations (bf16 or int8 weights) up to TILES_MAX_ROWS rows: each
//! block reads 32 rows of one expert's weights straight into registers, a quarter of K a warp, for a tile of
//! up to 8 of its slots, so a step of a page streams the experts it chose as the linear layers stream theirs.
//! A slot's sums are those of the grouped GEMMs' decode kernels (moe_prefill.cu's Quarters order), which take
//! the steps of more rows, so they are the same whatever the slots beside it. The routed and shared experts
//! run in the same two launches.
//!
//! [`Sums::BatchInvariant`]: crate::lm::Sums::BatchInvariant

use candle_core::cuda_backend::CudaDevice;
use candle_core::{DType, Tensor};

use super::buffers::address;
use super::experts::{mixed_weights, Routed};
use super::grouped_experts::{row_tiles, GroupedExperts, SharedArgs, SharedBuffers};
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
        if !self.tiles_take_step(x, routed, shared)? {
            return Ok(None);
        }
        if shared.is_some_and(|s| s.is_int8() != routed.is_int8()) {
            return Err(mixed_weights());
        }
        let (t, h) = x.dims2()?;
        let (e, inter, top_k) = (routed.experts()?, routed.inter()?, choice.ids.dim(1)?);
        let slots = t * top_k;
        let mut planned_here = None;
        let given = choice.plan.as_ref();
        let plan =
            self.grouped
                .plan_unless_given(given, &choice.ids, slots, e, &mut planned_here)?;
        let shared = shared
            .map(|mlp| SharedBuffers::new(&self.dev, mlp, t, h))
            .transpose()?;
        let act = self.empty((slots, inter), DType::BF16)?;
        let y = self.empty((slots, h), DType::F32)?;
        let (gate_up, down) = routed.addresses()?;
        let step = TileStep {
            x: address(x)?,
            gate_up,
            down,
            offsets: address(&plan.offsets)?,
            order: address(&plan.order)?,
            weights: address(&choice.weights)?,
            act: address(&act)?,
            y: address(&y)?,
            shared: shared
                .as_ref()
                .map_or(Ok(SharedArgs::default()), SharedBuffers::args)?,
            sizes: [e, top_k, h, inter, t].map(|n| n as i32),
            int8: routed.is_int8(),
        };
        self.expert_gate_up_on_tiles(tiles, &step)?;
        self.expert_down_on_tiles(tiles, &step)?;
        Ok(Some((y, shared.map(|s| s.y))))
    }

    /// Whether the tiles take this step: at most TILES_MAX_ROWS rows, and the grouped GEMMs' bounds (bf16
    /// activations, sizes multiples of 64, K_BLOCK).
    fn tiles_take_step(
        &self,
        x: &Tensor,
        routed: Mlp<'_>,
        shared: Option<Mlp<'_>>,
    ) -> Result<bool> {
        let (t, h) = x.dims2()?;
        let shared_fits = match shared {
            Some(mlp) => mlp.inter()?.is_multiple_of(K_BLOCK),
            None => true,
        };
        let (inter, e) = (routed.inter()?, routed.experts()?);
        Ok(t <= TILES_MAX_ROWS && shared_fits && GroupedExperts::supports(self.dtype, h, inter, e))
    }

    /// act = SwiGLU of gate/up for the routed slots and, into its own act, the shared experts' tokens.
    fn expert_gate_up_on_tiles(&self, tiles: &ExpertTiles, step: &TileStep) -> Result<()> {
        let [e, k, h, inter, t] = &step.sizes;
        let s = &step.shared;
        let mut launch = self.prepare(tiles.gate_up.pick(step.int8));
        launch
            .arg(&step.x)
            .arg(&step.gate_up)
            .arg(&s.gate_up)
            .arg(&step.offsets)
            .arg(&step.order)
            .arg(&step.act)
            .arg(&s.act)
            .arg(k)
            .arg(h)
            .arg(inter)
            .arg(&s.inter)
            .arg(e)
            .arg(t);
        // The grid spans the routed experts' I; wider shared experts take several row tiles.
        let parts = (s.inter as usize).div_ceil(*inter as usize).max(1);
        let rows = step.routed_tiles() + step.shared_tiles() * parts;
        let columns = (*inter as usize).div_ceil(GATE_UP_COLUMNS) as u32;
        self.run(launch, grid(columns, rows as u32, 1), THREADS, 0)
    }

    /// y = down · act, weighted, for the routed slots; the shared experts' y unweighted.
    fn expert_down_on_tiles(&self, tiles: &ExpertTiles, step: &TileStep) -> Result<()> {
        let [e, k, h, inter, t] = &step.sizes;
        let s = &step.shared;
        let mut launch = self.prepare(tiles.down.pick(step.int8));
        launch
            .arg(&step.act)
            .arg(&step.down)
            .arg(&s.down)
            .arg(&step.offsets)
            .arg(&step.order)
            .arg(&step.weights)
            .arg(&step.y)
            .arg(&s.act)
            .arg(&s.y)
            .arg(h)
            .arg(inter)
            .arg(&s.inter)
            .arg(e)
            .arg(t)
            .arg(k);
        let rows = step.routed_tiles() + step.shared_tiles();
        let out_rows = (*h as usize).div_ceil(DOWN_ROWS) as u32;
        self.run(launch, grid(out_rows, rows as u32, 1), THREADS, 0)
    }
}

/// A step's arguments to the two launches: device addresses, the shared experts' (0 for none) and the sizes
/// [E, k, H, I, T] as the kernels take them.
struct TileStep {
    x: u64,
    gate_up: u64,
    down: u64,
    offsets: u64,
    order: u64,
    weights: u64,
    act: u64,
    y: u64,
    shared: SharedArgs,
    sizes: [i32; 5],
    int8: bool,
}

impl TileStep {
    /// The routed experts' row tiles of SLOTS slots (grouped_experts.rs's `row_tiles`).
    fn routed_tiles(&self) -> usize {
        let [e, k, _, _, t] = self.sizes.map(|n| n as usize);
        row_tiles(t * k, e, SLOTS)
    }

    /// The shared experts' row tiles of tokens, if the step has them.
    fn shared_tiles(&self) -> usize {
        if self.shared.gate_up == 0 {
            return 0;
        }
        (self.sizes[4] as usize).div_ceil(SLOTS)
    }
}
