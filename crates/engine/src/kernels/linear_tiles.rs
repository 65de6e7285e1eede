//! A decode step's linear layers on tensor cores (linear_tiles.cuh), for [`Sums::BatchInvariant`] in bf16: the
//! weights are read once for up to 64 rows, and each output is summed in the same order whatever the rows
//! beside it, so a page reads alike alone or among many. bf16 activations only (mma's inputs); K a multiple
//! of 64.
//!
//! [`Sums::BatchInvariant`]: crate::lm::Sums::BatchInvariant

use candle_core::cuda_backend::cudarc::driver::CudaFunction;
use candle_core::cuda_backend::CudaDevice;
use candle_core::{DType, Tensor};

use super::launch::{grid, Kernels, Weight, MAX_GRID_Y, PTX};
use crate::error::{EngineError, Result};

/// linear_tiles.cuh's block: weight rows (TILE_GROUPS · 16), rows of x (TILE_PAGES), threads, K granule.
const WEIGHT_ROWS: usize = 32;
const PAGES: usize = 64;
const THREADS: u32 = 256;
const K_BLOCK: usize = 64;
/// Rows up to which the `_few_` kernels run (FEW_PAGES): one tile of x, each warp's weights requested five K
/// blocks ahead rather than one. The same sums.
const FEW_PAGES: usize = 8;
/// Dynamic shared memory for rows normed by each block: what the 48 KB a block may take without opting in
/// leaves beside the quarters' sums (24 KB) and the norm's.
const NORMED_BYTES: usize = 20 * 1024;

/// The builds of the kernel: over bf16 weights and over int8 rows, for up to 64 rows and for a few.
pub struct LinearTiles {
    dense: CudaFunction,
    int8: CudaFunction,
    few_dense: CudaFunction,
    few_int8: CudaFunction,
}

impl LinearTiles {
    /// The kernels for activations in `dtype`: None but for bf16.
    pub fn new(dev: &CudaDevice, dtype: DType) -> Result<Option<Self>> {
        if dtype != DType::BF16 {
            return Ok(None);
        }
        let load = |name: &str| -> Result<CudaFunction> {
            Ok(dev
                .get_or_load_custom_func(name, "deepread_decode", PTX)?
                .into_cuda_function())
        };
        Ok(Some(Self {
            dense: load("linear_tiles_bf16")?,
            int8: load("linear_tiles_int8_bf16")?,
            few_dense: load("linear_tiles_few_bf16")?,
            few_int8: load("linear_tiles_few_int8_bf16")?,
        }))
    }

    /// Whether a layer of K inputs fits the tiles.
    pub fn takes(k: usize) -> bool {
        k.is_multiple_of(K_BLOCK)
    }
}

impl Kernels {
    /// `layer` (bias-free) on `x` (B, K) bf16 on tensor cores, each output summed in one order whatever B;
    /// with `norm` (weight, eps), on RMSNorm(x), normalised by each block where its rows fit in shared memory.
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
        let (b, k) = x.dims2()?;
        let (n, weight_k) = layer.dims()?;
        if !LinearTiles::takes(k) {
            return Ok(None);
        }
        let normed_bytes = norm.map_or(0, |_| b * k * std::mem::size_of::<f32>());
        if let Some((weight, eps)) = norm.filter(|_| normed_bytes > NORMED_BYTES) {
            // Rows too long to normalise in a block: the norm's own launch, the same values.
            let normed = self.rms_norm(x, weight, eps)?;
            return self.linear_tiles(&normed, None, layer);
        }
        if weight_k != k || b.div_ceil(PAGES) > MAX_GRID_Y as usize {
            return Err(EngineError::Input(format!(
                "a decode step's linear layer of {n}×{weight_k} on {b} rows of {k} does not fit the tiles"
            )));
        }
        let kernel = match (layer, b <= FEW_PAGES) {
            (Weight::Dense(_), false) => &tiles.dense,
            (Weight::Int8(_), false) => &tiles.int8,
            (Weight::Dense(_), true) => &tiles.few_dense,
            (Weight::Int8(_), true) => &tiles.few_int8,
        };
        let blocks = grid(n.div_ceil(WEIGHT_ROWS) as u32, b.div_ceil(PAGES) as u32, 1);
        let out =
            self.launch_linear(kernel, x, norm, layer, blocks, THREADS, normed_bytes as u32)?;
        Ok(Some(out))
    }
}
