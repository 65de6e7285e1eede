//! Per-sequence key/value cache that is written in place: the buffer is preallocated with a capacity and grown
//! by a fixed step, so a decode step copies only the new key/value, and a long page holds at most one step of
//! unused room (doubling would hold up to half its cache unused: 2 GB over 16 long pages).

use candle_core::Tensor;

use crate::error::{EngineError, Result};

/// Positions added whenever a cache runs out of room. A growth copies the page's cache once (about 250 MB read
/// and written for a 4,000-token page), which spread over 512 decode steps is negligible.
pub const GROWTH_STEP: usize = 512;

/// Keys and values of one layer for one sequence, shaped (1, kv_heads, capacity, head_dim).
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    k: Option<Tensor>,
    v: Option<Tensor>,
    len: usize,
    capacity_hint: usize,
}

impl KvCache {
    pub fn with_capacity(capacity_hint: usize) -> Self {
        Self {
            capacity_hint,
            ..Self::default()
        }
    }

    /// Number of positions stored.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Positions the buffers hold before they must grow.
    pub fn capacity(&self) -> usize {
        self.k.as_ref().map_or(0, |k| k.dims()[2])
    }

    /// The key and value buffers (1, kv_heads, capacity, head_dim), once allocated.
    pub fn buffers(&self) -> Option<(&Tensor, &Tensor)> {
        self.k.as_ref().zip(self.v.as_ref())
    }

    /// Make room for `extra` more positions shaped like `like` (1, kv_heads, _, head_dim) without storing
    /// any, so that a kernel can write them in place.
    pub fn reserve(&mut self, extra: usize, like: &Tensor) -> Result<()> {
        let capacity = self.capacity();
        if self.len + extra > capacity {
            // The first buffer takes the hint as sized by the caller; later ones add a step.
            let room = if capacity == 0 { 0 } else { GROWTH_STEP };
            let new_capacity = (self.len + extra + room).max(self.capacity_hint);
            self.k = Some(grow(self.k.as_ref(), like, self.len, new_capacity)?);
            self.v = Some(grow(self.v.as_ref(), like, self.len, new_capacity)?);
        }
        Ok(())
    }

    /// Count `n` positions a kernel wrote into the reserved room.
    pub fn advance(&mut self, n: usize) {
        self.len += n;
    }

    /// Forget every position but keep the buffers, for the next sequence to write over.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Append `k`, `v` (1, kv_heads, T, head_dim) and return views of everything stored so far.
    pub fn append(&mut self, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let t = k.dim(2)?;
        self.reserve(t, k)?;
        // Both buffers exist here: they were allocated above whenever the capacity was short.
        let (Some(kbuf), Some(vbuf)) = (&self.k, &self.v) else {
            return Err(EngineError::Input(
                "key/value cache without a buffer".into(),
            ));
        };
        kbuf.slice_set(&k.contiguous()?, 2, self.len)?;
        vbuf.slice_set(&v.contiguous()?, 2, self.len)?;
        self.len += t;
        Ok((kbuf.narrow(2, 0, self.len)?, vbuf.narrow(2, 0, self.len)?))
    }
}

/// A fresh zeroed buffer of `capacity` positions holding the first `len` positions of `old`.
fn grow(old: Option<&Tensor>, like: &Tensor, len: usize, capacity: usize) -> Result<Tensor> {
    let (b, heads, _, d) = like.dims4()?;
    let buf = Tensor::zeros((b, heads, capacity, d), like.dtype(), like.device())?;
    if let Some(old) = old {
        if len > 0 {
            buf.slice_set(&old.narrow(2, 0, len)?.contiguous()?, 2, 0)?;
        }
    }
    Ok(buf)
}

/// All layers' caches of one sequence (one page).
#[derive(Debug, Clone)]
pub struct SequenceCache {
    pub layers: Vec<KvCache>,
}

impl SequenceCache {
    pub fn new(num_layers: usize, capacity_hint: usize) -> Self {
        Self {
            layers: (0..num_layers)
                .map(|_| KvCache::with_capacity(capacity_hint))
                .collect(),
        }
    }

    /// Positions already processed (the position id of the next token).
    pub fn len(&self) -> usize {
        self.layers.first().map_or(0, KvCache::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Positions every layer holds before growing (the layers grow together).
    pub fn capacity(&self) -> usize {
        self.layers.first().map_or(0, KvCache::capacity)
    }

    /// Room in every layer for one more position, written in place by a kernel; then [`Self::advance`].
    pub fn reserve_one(&mut self) -> Result<()> {
        for layer in &mut self.layers {
            let Some((k, _)) = layer.buffers() else {
                return Err(EngineError::Input(
                    "decoding needs a prefilled key/value cache".into(),
                ));
            };
            let like = k.narrow(2, 0, 1)?;
            layer.reserve(1, &like)?;
        }
        Ok(())
    }

    /// Empty for another page: the buffers stay allocated and are written over.
    pub fn clear(&mut self) {
        for layer in &mut self.layers {
            layer.clear();
        }
    }

    /// Positions the next [`Self::reserve_one`] allocates anew: 0 while there is room, else the growth.
    pub fn growth_for_one(&self) -> usize {
        let (len, capacity) = (self.len(), self.capacity());
        if len < capacity {
            0
        } else {
            len + 1 + GROWTH_STEP - capacity
        }
    }

    /// Count one position written into every layer's reserved room.
    pub fn advance(&mut self) {
        for layer in &mut self.layers {
            layer.advance(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};

    #[test]
    fn appends_past_the_capacity_keep_every_position() {
        let dev = Device::Cpu;
        let mut cache = KvCache::with_capacity(2);
        let mut all = Vec::new();
        for step in 0..5 {
            let k = Tensor::full(step as f32, (1, 2, 1, 3), &dev).unwrap();
            all.push(step as f32);
            let (ks, vs) = cache.append(&k, &k).unwrap();
            assert_eq!(ks.dims(), &[1, 2, step + 1, 3]);
            let got: Vec<f32> = ks
                .get(0)
                .unwrap()
                .get(1)
                .unwrap()
                .to_dtype(DType::F32)
                .unwrap()
                .to_vec2::<f32>()
                .unwrap()
                .into_iter()
                .map(|r| r[0])
                .collect();
            assert_eq!(got, all);
            assert_eq!(vs.dims(), ks.dims());
        }
    }

    #[test]
    fn a_full_cache_grows_by_one_step_not_by_doubling() {
        let dev = Device::Cpu;
        let hint = 3 * GROWTH_STEP;
        let mut cache = KvCache::with_capacity(hint);
        let prompt = Tensor::zeros((1, 1, hint, 1), DType::F32, &dev).unwrap();
        cache.append(&prompt, &prompt).unwrap();
        assert_eq!(cache.capacity(), hint);
        let one = Tensor::ones((1, 1, 1, 1), DType::F32, &dev).unwrap();
        let (ks, _) = cache.append(&one, &one).unwrap();
        assert_eq!(cache.capacity(), hint + 1 + GROWTH_STEP);
        assert_eq!(ks.dims(), &[1, 1, hint + 1, 1]);
        let last = ks.narrow(2, hint, 1).unwrap().flatten_all().unwrap();
        assert_eq!(last.to_vec1::<f32>().unwrap(), vec![1.0]);
    }
}
