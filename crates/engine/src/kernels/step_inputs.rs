//! Everything a decode step reads from the host, in one device buffer that stays at the same address for a
//! given batch size: the fed-back tokens, the rotary cos/sin of each row's position, each layer's key and
//! value buffer addresses, the write positions and capacities, and the banned ids. One copy fills it before
//! each step, so a step captured as a CUDA graph finds each replay's inputs where it recorded them.

use candle_core::cuda_backend::cudarc::driver::{CudaSlice, DevicePtr};
use candle_core::cuda_backend::CudaDevice;
use half::bf16;

use super::buffers::address;
use crate::error::{EngineError, Result};
use crate::lm::SequenceCache;

/// Banned ids a row may carry into a fused step (the official window of 90 bans at most 71).
pub const MAX_BANS: usize = 128;

/// Byte offsets of each section in the buffer.
#[derive(Debug, Clone, Copy)]
struct Sections {
    tokens: usize,
    positions: usize,
    capacities: usize,
    ban_counts: usize,
    bans: usize,
    cos: usize,
    sin: usize,
    addresses: usize,
    total: usize,
}

impl Sections {
    fn new(batch: usize, layers: usize, half_dim: usize, elem: usize) -> Self {
        let mut at = 0;
        let mut section = |bytes: usize| {
            let start = at;
            at = (at + bytes).next_multiple_of(16);
            start
        };
        let word = 4 * batch;
        Self {
            tokens: section(word),
            positions: section(word),
            capacities: section(word),
            ban_counts: section(word),
            bans: section(4 * batch * MAX_BANS),
            cos: section(elem * batch * half_dim),
            sin: section(elem * batch * half_dim),
            addresses: section(8 * layers * 2 * batch),
            total: at,
        }
    }
}

/// The inputs of decode steps over `batch` sequences, and the chosen tokens they write back.
pub struct StepInputs {
    buffer: CudaSlice<u8>,
    picks: CudaSlice<u32>,
    staging: Vec<u8>,
    sections: Sections,
    batch: usize,
    layers: usize,
    half_dim: usize,
    bf16: bool,
}

impl StepInputs {
    pub fn new(
        dev: &CudaDevice,
        batch: usize,
        layers: usize,
        head_dim: usize,
        bf16: bool,
    ) -> Result<Self> {
        let half_dim = head_dim / 2;
        let sections = Sections::new(batch, layers, half_dim, if bf16 { 2 } else { 4 });
        Ok(Self {
            buffer: dev.alloc_zeros::<u8>(sections.total)?,
            picks: dev.alloc_zeros::<u32>(batch)?,
            staging: vec![0; sections.total],
            sections,
            batch,
            layers,
            half_dim,
            bf16,
        })
    }

    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Whether every row's bans fit the buffer.
    pub fn fits(bans: &[Vec<u32>]) -> bool {
        bans.iter().all(|b| b.len() <= MAX_BANS)
    }

    /// Writes one step's inputs and uploads them. `cos`/`sin` are (batch, head_dim/2) in f32, each cache has
    /// room for the step's position, and every row's bans fit ([`Self::fits`]).
    pub fn fill(
        &mut self,
        dev: &CudaDevice,
        tokens: &[u32],
        caches: &[&mut SequenceCache],
        (cos, sin): (&[f32], &[f32]),
        bans: &[Vec<u32>],
    ) -> Result<()> {
        let (b, s) = (self.batch, self.sections);
        if tokens.len() != b || caches.len() != b || bans.len() != b || !Self::fits(bans) {
            return Err(EngineError::Input(format!(
                "a decode step over {b} sequences was given {} tokens, {} caches and {} ban lists (≤ {MAX_BANS} each)",
                tokens.len(),
                caches.len(),
                bans.len()
            )));
        }
        for (row, cache) in caches.iter().enumerate() {
            self.put_u32(s.tokens, row, tokens[row]);
            self.put_u32(s.positions, row, cache.len() as u32);
            self.put_u32(s.capacities, row, cache.capacity() as u32);
            self.put_u32(s.ban_counts, row, bans[row].len() as u32);
            for (i, &id) in bans[row].iter().enumerate() {
                self.put_u32(s.bans, row * MAX_BANS + i, id);
            }
            if cache.layers.len() != self.layers {
                return Err(EngineError::Input("a cache of another model".into()));
            }
            for (layer, kv) in cache.layers.iter().enumerate() {
                let (k, v) = kv.buffers().ok_or_else(|| {
                    EngineError::Input("decoding needs a prefilled key/value cache".into())
                })?;
                self.put_u64(s.addresses, (layer * 2) * b + row, address(k)?);
                self.put_u64(s.addresses, (layer * 2 + 1) * b + row, address(v)?);
            }
        }
        self.put_angles(s.cos, cos);
        self.put_angles(s.sin, sin);
        dev.cuda_stream()
            .memcpy_htod(&self.staging, &mut self.buffer)
            .map_err(|e| EngineError::Cuda(e.to_string()))
    }

    /// The tokens the last step chose (None where every token was banned).
    pub fn read_picks(&self, dev: &CudaDevice) -> Result<Vec<Option<u32>>> {
        let picks = dev
            .cuda_stream()
            .clone_dtoh(&self.picks)
            .map_err(|e| EngineError::Cuda(e.to_string()))?;
        Ok(picks
            .into_iter()
            .map(|t| (t != u32::MAX).then_some(t))
            .collect())
    }

    fn base(&self, dev: &CudaDevice) -> u64 {
        let stream = dev.cuda_stream();
        let (address, _sync) = self.buffer.device_ptr(&stream);
        address
    }

    /// Device addresses of the sections, for the kernels.
    pub fn addresses(&self, dev: &CudaDevice) -> InputAddresses {
        let (base, s) = (self.base(dev), self.sections);
        let stream = dev.cuda_stream();
        let (picks, _sync) = self.picks.device_ptr(&stream);
        InputAddresses {
            tokens: base + s.tokens as u64,
            positions: base + s.positions as u64,
            capacities: base + s.capacities as u64,
            ban_counts: base + s.ban_counts as u64,
            bans: base + s.bans as u64,
            cos: base + s.cos as u64,
            sin: base + s.sin as u64,
            addresses: base + s.addresses as u64,
            picks,
            batch: self.batch,
        }
    }

    fn put_u32(&mut self, section: usize, index: usize, value: u32) {
        let at = section + 4 * index;
        self.staging[at..at + 4].copy_from_slice(&value.to_ne_bytes());
    }

    fn put_u64(&mut self, section: usize, index: usize, value: u64) {
        let at = section + 8 * index;
        self.staging[at..at + 8].copy_from_slice(&value.to_ne_bytes());
    }

    /// cos or sin values, cast to the activation dtype as the straightforward path casts them.
    fn put_angles(&mut self, section: usize, values: &[f32]) {
        let n = (self.batch * self.half_dim).min(values.len());
        for (i, &v) in values[..n].iter().enumerate() {
            if self.bf16 {
                let at = section + 2 * i;
                self.staging[at..at + 2].copy_from_slice(&bf16::from_f32(v).to_ne_bytes());
            } else {
                let at = section + 4 * i;
                self.staging[at..at + 4].copy_from_slice(&v.to_ne_bytes());
            }
        }
    }
}

/// Where each input lives on the device.
#[derive(Debug, Clone, Copy)]
pub struct InputAddresses {
    pub tokens: u64,
    pub positions: u64,
    pub capacities: u64,
    pub ban_counts: u64,
    pub bans: u64,
    pub cos: u64,
    pub sin: u64,
    addresses: u64,
    pub picks: u64,
    pub batch: usize,
}

impl InputAddresses {
    /// Addresses of layer `layer`'s arrays of key-buffer and value-buffer addresses (one per row).
    pub fn layer_caches(&self, layer: usize) -> (u64, u64) {
        let stride = (8 * self.batch) as u64;
        let keys = self.addresses + 2 * layer as u64 * stride;
        (keys, keys + stride)
    }
}
