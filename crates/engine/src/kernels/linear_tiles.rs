//! A decode step's linear layers on tensor cores (linear_tiles.cuh), for [`Sums::BatchInvariant`] in bf16: the
//! weights are read once for up to 64 rows, and each output is summed in the same order whatever the rows
//! beside it, so a page reads alike alone or among many. For a few rows the q/k/v projection's tiles also
//! rotate q and k and write the caches (qkv_rope.cuh), which saves that its own launch. bf16 activations only
//! (mma's inputs); K a multiple of 64.
//!
//! [`Sums::BatchInvariant`]: crate::lm::Sums::BatchInvariant

use candle_core::cuda_backend::cudarc::driver::CudaFunction;
use candle_core::cuda_backend::CudaDevice;
use candle_core::{DType, Tensor};

use super::buffers::{address, optional_address};
use super::hidden::Hidden;
use super::launch::{grid, Kernels, Weight, MAX_GRID_Y, PTX};
use super::step_inputs::InputAddresses;
use crate::error::{EngineError, Result};
use crate::lm::Sums;

/// linear_tiles.cuh's block: weight rows (TILE_GROUPS · 16), rows of x (TILE_PAGES), threads, K granule.
const WEIGHT_ROWS: usize = 32;
const PAGES: usize = 64;
const THREADS: u32 = 256;
const K_BLOCK: usize = 64;
/// Rows up to which the `_few_` kernels run (FEW_PAGES): one tile of x, each warp's weights requested five K
/// blocks ahead rather than one. The same sums.
const FEW_PAGES: usize = 8;
/// Dims of a head one block of the fused q/k/v projection takes: 16 of each half (qkv_rope.cuh's RopeOut).
const QKV_HEAD_DIMS: usize = 32;
/// Rows up to which each block normalises the rows itself: past them the norm's own launch costs less than
/// every block normalising them all (the fused q/k/v projection at 4 pages, its 120 blocks each normalising
/// the 4 rows: a step of 1.001–1.013 ms against 0.976–0.978 with the norm's launch, H200).
const NORMED_IN_BLOCKS_MAX_ROWS: usize = 2;
/// Rows up to which the fused q/k/v projection's blocks also add the MoE output that comes before them: at one
/// row this saves moe_combine's launch (a step of 0.841 against 0.851 ms, H100, 2026-12-07); at two, each of
/// the 120 blocks reading both rows' seven outputs costs more than it saves (0.943 against 0.935 ms).
const MOE_FOLD_MAX_ROWS: usize = 1;
/// Dynamic shared memory for rows normed by each block: what the 48 KB a block may take without opting in
/// leaves beside the quarters' sums (24 KB) and the norm's.
const NORMED_BYTES: usize = 20 * 1024;

/// One kernel's builds over bf16 weights and over int8 rows.
pub(super) struct Builds {
    dense: CudaFunction,
    int8: CudaFunction,
}

impl Builds {
    pub(super) fn load(dev: &CudaDevice, name: &str) -> Result<Self> {
        let load = |infix: &str| -> Result<CudaFunction> {
            Ok(dev
                .get_or_load_custom_func(&format!("{name}{infix}bf16"), "deepread_decode", PTX)?
                .into_cuda_function())
        };
        Ok(Self {
            dense: load("_")?,
            int8: load("_int8_")?,
        })
    }

    fn of(&self, layer: Weight<'_>) -> &CudaFunction {
        self.pick(matches!(layer, Weight::Int8(_)))
    }

    pub(super) fn pick(&self, int8: bool) -> &CudaFunction {
        if int8 {
            &self.int8
        } else {
            &self.dense
        }
    }
}

/// The tiles as a plain linear layer for up to 64 rows and for a few, and as the fused q/k/v projection of a
/// few rows, which rotates its q and k heads and writes k and v into the caches (qkv_rope.cuh). (For more rows
/// the fused projection measured slower than the plain tiles and rope_kv_write: 3.47–3.50 ms a 64-page step
/// against 3.31–3.34 on the H200.)
pub struct LinearTiles {
    many: Builds,
    few: Builds,
    qkv_rope_few: Builds,
}

impl LinearTiles {
    /// The kernels for activations in `dtype`: None but for bf16.
    pub fn new(dev: &CudaDevice, dtype: DType) -> Result<Option<Self>> {
        if dtype != DType::BF16 {
            return Ok(None);
        }
        Ok(Some(Self {
            many: Builds::load(dev, "linear_tiles")?,
            few: Builds::load(dev, "linear_tiles_few")?,
            qkv_rope_few: Builds::load(dev, "qkv_rope_tiles_few")?,
        }))
    }

    /// Whether a layer of K inputs fits the tiles.
    pub fn takes(k: usize) -> bool {
        k.is_multiple_of(K_BLOCK)
    }
}

/// A decode step's layer as its attention's inputs see it: the step's inputs, the layer (whose caches take the
/// keys and values), its heads (q, k/v, head dim).
#[derive(Clone, Copy)]
pub struct StepLayer<'a> {
    pub inputs: &'a InputAddresses,
    pub layer: usize,
    pub heads: (usize, usize, usize),
}

/// The rows a launch of the tiles takes, and their norm if the blocks apply it.
struct TileInput<'a> {
    x: Tensor,
    norm: Option<(&'a Tensor, f64)>,
    normed_bytes: u32,
}

impl Kernels {
    /// `layer` (bias-free) on `x` (B, K) bf16 on tensor cores, each output summed in one order whatever B;
    /// with `norm` (weight, eps), on RMSNorm(x), normalised by each block for a row or two (see tile_input).
    /// None where the tiles do not take it (not bf16, or K not a multiple of 64).
    pub(super) fn linear_tiles(
        &self,
        x: &Tensor,
        norm: Option<(&Tensor, f64)>,
        layer: Weight<'_>,
    ) -> Result<Option<Tensor>> {
        let Some(tiles) = &self.tiles else {
            return Ok(None);
        };
        let Some(input) = self.tile_input(x, norm, layer)? else {
            return Ok(None);
        };
        let (b, n) = (input.x.dim(0)?, layer.dims()?.0);
        let kernel = if b <= FEW_PAGES {
            tiles.few.of(layer)
        } else {
            tiles.many.of(layer)
        };
        let blocks = grid(n.div_ceil(WEIGHT_ROWS) as u32, b.div_ceil(PAGES) as u32, 1);
        let out = self.launch_linear(
            kernel,
            &input.x,
            input.norm,
            layer,
            blocks,
            THREADS,
            input.normed_bytes,
        )?;
        Ok(Some(out))
    }

    /// The attention's inputs of a decode step: `qkv` (bias-free, (nh + 2·nkv)·hd rows) on RMSNorm(`x`) with
    /// `norm`, its q and k heads rotated with the step's cos/sin, k and v written into layer `layer`'s caches at
    /// each row's position; returns q (B, nh·hd) and x's rows. For [`Sums::BatchInvariant`] and a few rows one
    /// launch of the tiles where they take the layer, with the sums of the plain tiles and rope_kv_write's
    /// arithmetic; for one row its blocks also add a pending MoE output to its residual (and return the sum)
    /// as moe_combine would (MOE_FOLD_MAX_ROWS). Else the combine, the projection, then
    /// [`Kernels::rope_kv_write`].
    ///
    /// [`Sums::BatchInvariant`]: crate::lm::Sums::BatchInvariant
    pub fn qkv_rope(
        &self,
        x: Hidden,
        norm: (&Tensor, f64),
        qkv: Weight<'_>,
        at: StepLayer<'_>,
        sums: Sums,
    ) -> Result<(Tensor, Tensor)> {
        let (b, k) = x.dims()?;
        let tiles =
            matches!(sums, Sums::BatchInvariant) && self.qkv_tiles_take(b, k, qkv, at.heads)?;
        let x = match x {
            Hidden::Moe(moe) if !(tiles && b <= MOE_FOLD_MAX_ROWS && normed_in_blocks(b, k)) => {
                Hidden::Rows(self.hidden_rows(Hidden::Moe(moe))?)
            }
            x => x,
        };
        if tiles {
            return self.qkv_rope_tiles(&x, norm, qkv, at);
        }
        let rows = self.hidden_rows(x)?;
        let projected = self.norm_linear(&rows, norm.0, norm.1, qkv, sums)?;
        let q = self.rope_kv_write(&projected, at.inputs, at.layer, at.heads)?;
        Ok((q, rows))
    }

    /// Whether one launch of the tiles takes the fused projection of `b` rows of `k`.
    fn qkv_tiles_take(
        &self,
        b: usize,
        k: usize,
        qkv: Weight<'_>,
        (nh, nkv, hd): (usize, usize, usize),
    ) -> Result<bool> {
        Ok(self.tiles.is_some()
            && hd.is_multiple_of(QKV_HEAD_DIMS)
            && qkv.dims()?.0 == (nh + 2 * nkv) * hd
            && b <= FEW_PAGES
            && LinearTiles::takes(k))
    }

    fn qkv_rope_tiles(
        &self,
        x: &Hidden,
        norm: (&Tensor, f64),
        qkv: Weight<'_>,
        StepLayer {
            inputs,
            layer,
            heads: (nh, nkv, hd),
        }: StepLayer<'_>,
    ) -> Result<(Tensor, Tensor)> {
        let (rows, moe) = (x.rows_before(), x.moe());
        let Some(tiles) = &self.tiles else {
            return Err(EngineError::Cuda("the q/k/v tiles are not loaded".into()));
        };
        let Some(input) = self.tile_input(rows, Some(norm), qkv)? else {
            return Err(EngineError::Cuda(
                "the q/k/v tiles do not take the rows".into(),
            ));
        };
        if moe.is_some() && input.norm.is_none() {
            return Err(EngineError::Cuda(
                "a MoE output reached q/k/v tiles that do not norm the rows".into(),
            ));
        }
        let (b, k) = input.x.dims2()?;
        let q = self.empty((b, nh * hd), self.dtype)?;
        let sum = moe.map(|_| self.empty((b, k), self.dtype)).transpose()?;
        let (x_p, w_p, q_p) = (address(&input.x)?, qkv.address()?, address(&q)?);
        let norm_p = optional_address(input.norm.map(|(w, _)| w))?;
        let eps = input.norm.map_or(0.0, |(_, eps)| eps as f32);
        let (y_p, shared_p, sum_p) = (
            optional_address(moe.map(|m| &m.y))?,
            optional_address(moe.and_then(|m| m.shared.as_ref()))?,
            optional_address(sum.as_ref())?,
        );
        let top_k = moe.map_or(0, |m| m.top_k as i32);
        let (k_p, v_p) = inputs.layer_caches(layer);
        let (b_i, k_i) = (b as i32, k as i32);
        let (nh_i, nkv_i, hd_i) = (nh as i32, nkv as i32, hd as i32);
        let mut launch = self.prepare(tiles.qkv_rope_few.of(qkv));
        launch
            .arg(&x_p)
            .arg(&norm_p)
            .arg(&eps)
            .arg(&w_p)
            .arg(&b_i)
            .arg(&k_i)
            .arg(&inputs.cos)
            .arg(&inputs.sin)
            .arg(&k_p)
            .arg(&v_p)
            .arg(&inputs.positions)
            .arg(&inputs.capacities)
            .arg(&q_p)
            .arg(&nh_i)
            .arg(&nkv_i)
            .arg(&hd_i)
            .arg(&y_p)
            .arg(&shared_p)
            .arg(&top_k)
            .arg(&sum_p);
        let blocks = (nh + 2 * nkv) * hd / QKV_HEAD_DIMS;
        let blocks = grid(blocks as u32, 1, 1);
        self.run(launch, blocks, THREADS, input.normed_bytes)?;
        Ok((q, sum.unwrap_or_else(|| rows.clone())))
    }

    /// What a launch of the tiles takes for `x` (normed with `norm`, if given) through `layer`: the norm in the
    /// blocks for a row or two that fit their shared memory, else by its own launch first (the same values).
    /// None where the tiles do not take the layer.
    fn tile_input<'a>(
        &self,
        x: &Tensor,
        norm: Option<(&'a Tensor, f64)>,
        layer: Weight<'_>,
    ) -> Result<Option<TileInput<'a>>> {
        let (b, k) = x.dims2()?;
        let (n, weight_k) = layer.dims()?;
        if !LinearTiles::takes(k) {
            return Ok(None);
        }
        if weight_k != k || b.div_ceil(PAGES) > MAX_GRID_Y as usize {
            return Err(EngineError::Input(format!(
                "a decode step's linear layer of {n}×{weight_k} on {b} rows of {k} does not fit the tiles"
            )));
        }
        let normed_bytes = norm.map_or(0, |_| normed_row_bytes(b, k));
        if let Some((weight, eps)) = norm.filter(|_| !normed_in_blocks(b, k)) {
            // The norm's own launch, the same values.
            return Ok(Some(TileInput {
                x: self.rms_norm(x, weight, eps)?,
                norm: None,
                normed_bytes: 0,
            }));
        }
        Ok(Some(TileInput {
            x: x.clone(),
            norm,
            normed_bytes: normed_bytes as u32,
        }))
    }
}

/// Shared memory for `b` rows of `k` normed by each block, a float a value.
fn normed_row_bytes(b: usize, k: usize) -> usize {
    b * k * std::mem::size_of::<f32>()
}

/// Whether each block of the tiles normalises `b` rows of `k` itself (else the norm has its own launch).
fn normed_in_blocks(b: usize, k: usize) -> bool {
    b <= NORMED_IN_BLOCKS_MAX_ROWS && normed_row_bytes(b, k) <= NORMED_BYTES
}
