//! int8 matrices in DeepRead's own row layout, made from Q8_0 blocks at load: a row holds its K int8 weights,
//! then one f16 scale per block of 32, padded to 16 bytes. A Q8_0 block puts its scale first, so its weights
//! sit 2 bytes in and a kernel reads them 2 bytes at a time; here every row starts on 16 bytes and a lane reads
//! 16 weights in one load (weights.cuh's `Int8`). A stack of experts is one tensor, expert after expert.

use std::borrow::Cow;

use candle_core::quantized::{GgmlDType, QStorage, QTensor};
use candle_core::{DType, Device, Tensor};
use half::f16;

use super::INT8;
use crate::error::{EngineError, Result};

/// A Q8_0 block: an f16 scale, then 32 int8 weights.
const BLOCK: usize = 32;
const BLOCK_BYTES: usize = 2 + BLOCK;

/// The bytes of one int8 row of `k` weights: the weights, then k/32 f16 scales rounded up to 16 bytes.
pub fn row_bytes(k: usize) -> usize {
    k + (k / BLOCK * 2).div_ceil(16) * 16
}

/// One int8 matrix (N, K), or a stack of them (E, N, K).
#[derive(Debug, Clone)]
pub struct Int8Matrix {
    /// u8 (…, N, row_bytes(K)).
    rows: Tensor,
    /// The logical shape (…, N, K).
    dims: Vec<usize>,
}

impl Int8Matrix {
    /// The matrices of Q8_0 tensors of one shape (…, N, K), stacked along a new leading dim when there are
    /// several, on `device`.
    pub fn from_q8_0(blocks: &[&QTensor], device: &Device) -> Result<Self> {
        let first = blocks
            .first()
            .ok_or_else(|| EngineError::Input("no int8 matrices to stack".into()))?;
        let dims = first.shape().dims().to_vec();
        let k = *dims.last().unwrap_or(&0);
        if first.dtype() != INT8 || k % BLOCK != 0 || k % 16 != 0 {
            return Err(EngineError::Input(format!(
                "int8 rows need Q8_0 blocks and a width that is a multiple of 32, not {:?} of {dims:?}",
                first.dtype()
            )));
        }
        let mut bytes =
            Vec::with_capacity(blocks.len() * first.shape().elem_count() / k * row_bytes(k));
        for q in blocks {
            if q.shape().dims() != dims.as_slice() || q.dtype() != INT8 {
                return Err(EngineError::Input(
                    "int8 matrices of different shapes in one stack".into(),
                ));
            }
            split_rows(&q.data()?, k, &mut bytes);
        }
        let mut dims = dims;
        if blocks.len() > 1 {
            dims.insert(0, blocks.len());
        }
        let mut shape = dims.clone();
        *shape.last_mut().expect("a matrix has dims") = row_bytes(k);
        let rows = Tensor::from_vec(bytes, shape, &Device::Cpu)?.to_device(device)?;
        Ok(Self { rows, dims })
    }

    /// The logical shape (…, N, K).
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// K, the width summed over.
    pub fn k(&self) -> usize {
        *self.dims.last().unwrap_or(&0)
    }

    /// The raw rows (u8, (…, N, row bytes)): what the kernels read.
    pub fn rows(&self) -> &Tensor {
        &self.rows
    }

    /// Matrix `e` of a stack.
    pub fn get(&self, e: usize) -> Result<Self> {
        Ok(Self {
            rows: self.rows.get(e)?,
            dims: self.dims[1..].to_vec(),
        })
    }

    /// The rows' bytes on the host: a view of a stack copied alone, not with the whole stack.
    fn host_bytes(&self) -> Result<Vec<u8>> {
        let own = self.rows.force_contiguous()?.flatten_all()?;
        Ok(own.to_device(&Device::Cpu)?.to_vec1::<u8>()?)
    }

    /// The matrix back in Q8_0 blocks, on the CPU: what the cache file holds.
    pub fn to_q8_0(&self) -> Result<QTensor> {
        let k = self.k();
        let rows = self.host_bytes()?;
        let mut blocks = Vec::with_capacity(rows.len() / row_bytes(k) * (k / BLOCK) * BLOCK_BYTES);
        for row in rows.chunks_exact(row_bytes(k)) {
            let (weights, scales) = row.split_at(k);
            for (b, quants) in weights.chunks_exact(BLOCK).enumerate() {
                blocks.extend_from_slice(&scales[2 * b..2 * b + 2]);
                blocks.extend_from_slice(quants);
            }
        }
        let storage = QStorage::from_data(Cow::Owned(blocks), &Device::Cpu, GgmlDType::Q8_0)?;
        Ok(QTensor::new(storage, self.dims.as_slice())?)
    }

    /// The weights in `dtype`, (…, N, K), on the matrix's device: scale · q in f32, rounded to `dtype`, as
    /// the kernels compute them.
    pub fn dequantize(&self, dtype: DType) -> Result<Tensor> {
        #[cfg(feature = "cuda")]
        if let Some(dense) = crate::kernels::dequantize_int8(&self.rows, self.k(), dtype)? {
            return dense.reshape(self.dims.as_slice()).map_err(Into::into);
        }
        let k = self.k();
        let rows = self.host_bytes()?;
        let mut values = Vec::with_capacity(rows.len() / row_bytes(k) * k);
        for row in rows.chunks_exact(row_bytes(k)) {
            let (weights, scales) = row.split_at(k);
            for (b, quants) in weights.chunks_exact(BLOCK).enumerate() {
                let d = f16::from_le_bytes([scales[2 * b], scales[2 * b + 1]]).to_f32();
                values.extend(quants.iter().map(|&q| d * q as i8 as f32));
            }
        }
        let dense = Tensor::from_vec(values, self.dims.as_slice(), &Device::Cpu)?;
        Ok(dense.to_dtype(dtype)?.to_device(self.rows.device())?)
    }
}

/// Q8_0 `blocks` of rows `k` wide, appended to `out` as int8 rows.
fn split_rows(blocks: &[u8], k: usize, out: &mut Vec<u8>) {
    let per_row = k / BLOCK * BLOCK_BYTES;
    for row in blocks.chunks_exact(per_row) {
        let start = out.len();
        out.resize(start + row_bytes(k), 0);
        let (weights, scales) = out[start..].split_at_mut(k);
        for (b, block) in row.chunks_exact(BLOCK_BYTES).enumerate() {
            scales[2 * b..2 * b + 2].copy_from_slice(&block[..2]);
            weights[b * BLOCK..(b + 1) * BLOCK].copy_from_slice(&block[2..]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_whole_sixteen_byte_lines() {
        assert_eq!(row_bytes(1280), 1280 + 80);
        assert_eq!(row_bytes(896), 896 + 64); // 56 bytes of scales, padded
        assert_eq!(row_bytes(64), 64 + 16);
    }

    #[test]
    fn the_row_layout_holds_what_q8_0_held() -> Result<()> {
        let dense = Tensor::randn(0f32, 1.0, (2, 3, 96), &Device::Cpu)?;
        let q: Vec<_> = (0..2)
            .map(|e| QTensor::quantize(&dense.get(e)?.force_contiguous()?, INT8))
            .collect::<candle_core::Result<_>>()?;
        let stack = Int8Matrix::from_q8_0(&q.iter().collect::<Vec<_>>(), &Device::Cpu)?;
        assert_eq!(stack.dims(), &[2, 3, 96]);
        for (e, q) in q.iter().enumerate() {
            let ours = stack.get(e)?;
            // Back to the same blocks, byte for byte, and the same weights as candle dequantizes them.
            assert_eq!(ours.to_q8_0()?.data()?, q.data()?);
            let want = q.dequantize(&Device::Cpu)?.to_vec2::<f32>()?;
            assert_eq!(ours.dequantize(DType::F32)?.to_vec2::<f32>()?, want);
            // Within int8's rounding of the weights they came from.
            let diff = (ours.dequantize(DType::F32)? - dense.get(e)?)?
                .abs()?
                .max_all()?;
            assert!(diff.to_scalar::<f32>()? < 0.05);
        }
        Ok(())
    }
}
