//! Pixel bytes into the vision tower's input. A page's views cross to the GPU as the preprocessing's bytes, a
//! quarter of their `f32` values (55 MB a page of six tiles), and each byte takes its normalised value from a
//! table of 256 on the device: the values the preprocessing defines, cast to the model's dtype where the
//! `f32` values would have been.

use candle_core::{DType, Device, Tensor};

use crate::error::Result;
use crate::preprocess::normalise;

/// Every byte's normalised value, in the model's dtype on the vision tower's device.
#[derive(Debug, Clone)]
pub struct PixelValues {
    table: Tensor,
}

impl PixelValues {
    pub fn new(device: &Device, dtype: DType) -> Result<Self> {
        let values: Vec<f32> = (0..=u8::MAX).map(normalise).collect();
        let table = Tensor::from_vec(values, 256, device)?.to_dtype(dtype)?;
        Ok(Self { table })
    }

    /// Flat CHW bytes of `count` views of side `size` → (count, 3, size, size).
    pub fn views(&self, bytes: &[u8], count: usize, size: usize) -> Result<Tensor> {
        let bytes = Tensor::from_slice(bytes, bytes.len(), self.table.device())?;
        // As u32 indices: candle's gather reads the largest index of u8 (255, white) as "none" and gives 0.
        Ok(self
            .table
            .index_select(&bytes.to_dtype(DType::U32)?, 0)?
            .reshape((count, 3, size, size))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_takes_its_normalised_value() {
        let bytes: Vec<u8> = (0..2 * 3 * 16 * 16).map(|i| (i * 37 % 256) as u8).collect();
        assert!(bytes.contains(&0) && bytes.contains(&255));
        for dtype in [DType::F32, DType::BF16] {
            let views = PixelValues::new(&Device::Cpu, dtype)
                .unwrap()
                .views(&bytes, 2, 16)
                .unwrap();
            assert_eq!(views.dims(), [2, 3, 16, 16]);
            // What the f32 values gave before: uploaded, then cast to the model's dtype.
            let f32_values: Vec<f32> = bytes.iter().map(|&b| normalise(b)).collect();
            let want = Tensor::from_vec(f32_values, (2, 3, 16, 16), &Device::Cpu)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let same = views.eq(&want).unwrap().to_dtype(DType::U32).unwrap();
            assert_eq!(
                same.sum_all().unwrap().to_scalar::<u32>().unwrap(),
                2 * 3 * 16 * 16
            );
        }
    }
}
