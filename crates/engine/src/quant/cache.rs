//! Where int8 matrices come from: a GGUF file written by an earlier load of the same checkpoint, or
//! quantization now. A cache that is missing, cut short, or made from other weights is quantized again and
//! rewritten; it never fails a load.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::{self, Content, Value};
use candle_core::quantized::QTensor;
use candle_core::{DType, Device, Tensor};

use super::{Int8Matrix, INT8};
use crate::error::{EngineError, Result};

/// The GGUF key naming the checkpoint a cache was made from.
const SOURCE_KEY: &str = "deepread.int8.source";

/// The int8 matrices of one model: read from the cache where it has them, quantized otherwise. The cache
/// keeps candle's Q8_0 blocks; the matrices handed out are in our row layout ([`Int8Matrix`]).
pub struct Int8Weights {
    device: Device,
    source: String,
    path: Option<PathBuf>,
    cached: Option<(Content, BufReader<File>)>,
    /// Every matrix handed out (an expert as its view of the stack), in order, for [`Int8Weights::save`].
    tensors: Vec<(String, Int8Matrix)>,
    quantized: usize,
}

impl Int8Weights {
    /// Matrices for a model on `device` made from the checkpoint `source` (see [`checkpoint_source`]), read
    /// from the GGUF file `cache` where it was made from the same checkpoint.
    pub fn open(cache: Option<&Path>, source: &str, device: &Device) -> Self {
        let cached = cache.and_then(|path| read_cache(path, source));
        Self {
            device: device.clone(),
            source: source.to_string(),
            path: cache.map(Path::to_path_buf),
            cached,
            tensors: Vec::new(),
            quantized: 0,
        }
    }

    /// Whether `dense`'s rows split into whole Q8_0 blocks.
    pub fn fits(&self, dense: &Tensor) -> Result<bool> {
        Ok(dense.dims().last().copied().unwrap_or(0) % INT8.block_size() == 0)
    }

    /// The int8 form of `dense` (its last dim is the one summed over), named `name` in the cache.
    pub fn matrix(&mut self, name: &str, dense: &Tensor) -> Result<Int8Matrix> {
        let q = self.q8_0(name, dense)?;
        let matrix = Int8Matrix::from_q8_0(&[&q], &self.device)?;
        self.tensors.push((name.to_string(), matrix.clone()));
        Ok(matrix)
    }

    /// The int8 form of a stack `dense` (E, N, K) as one stack, matrix e named `names(e)` in the cache.
    pub fn stack(&mut self, dense: &Tensor, names: impl Fn(usize) -> String) -> Result<Int8Matrix> {
        let blocks = (0..dense.dim(0)?)
            .map(|e| self.q8_0(&names(e), &dense.get(e)?))
            .collect::<Result<Vec<_>>>()?;
        let stack = Int8Matrix::from_q8_0(&blocks.iter().collect::<Vec<_>>(), &self.device)?;
        for e in 0..blocks.len() {
            self.tensors.push((names(e), stack.get(e)?));
        }
        Ok(stack)
    }

    /// `dense` in Q8_0 blocks on the CPU: from the cache, or quantized now (by candle, on the CPU).
    fn q8_0(&mut self, name: &str, dense: &Tensor) -> Result<QTensor> {
        if let Some(q) = self.read(name, dense) {
            return Ok(q);
        }
        self.quantized += 1;
        // A tensor of its own: candle quantizes a tensor's whole storage, whatever its layout, and a view's
        // trip to the CPU would copy its whole storage too. The cast makes one, except from f32.
        let own = match dense.dtype() {
            DType::F32 => dense.force_contiguous()?,
            _ => dense.to_dtype(DType::F32)?,
        };
        Ok(QTensor::quantize(&own.to_device(&Device::Cpu)?, INT8)?)
    }

    /// How many matrices were quantized now rather than read from the cache.
    pub fn quantized(&self) -> usize {
        self.quantized
    }

    /// Writes the cache when a matrix was quantized now (to a side file first, then renamed over the old
    /// one, so that a process killed mid-write leaves the old cache or none). Returns whether it wrote.
    pub fn save(&self) -> Result<bool> {
        let Some(path) = self.path.as_deref().filter(|_| self.quantized > 0) else {
            return Ok(false);
        };
        let part = path.with_extension("gguf.part");
        let io = |source| EngineError::Io {
            path: part.clone(),
            source,
        };
        let mut out = BufWriter::new(File::create(&part).map_err(io)?);
        let source = Value::String(self.source.clone());
        let blocks = self
            .tensors
            .iter()
            .map(|(_, matrix)| matrix.to_q8_0())
            .collect::<Result<Vec<_>>>()?;
        let tensors: Vec<(&str, &QTensor)> = self
            .tensors
            .iter()
            .zip(&blocks)
            .map(|((name, _), q)| (name.as_str(), q))
            .collect();
        gguf_file::write(&mut out, &[(SOURCE_KEY, &source)], &tensors)?;
        out.into_inner()
            .map_err(|e| io(e.into_error()))?
            .sync_all()
            .map_err(io)?;
        std::fs::rename(&part, path).map_err(io)?;
        tracing::info!(path = %path.display(), matrices = tensors.len(), "int8 weights cached");
        Ok(true)
    }

    /// `name` from the cache, when it is there whole and has `dense`'s shape.
    fn read(&mut self, name: &str, dense: &Tensor) -> Option<QTensor> {
        let (content, file) = self.cached.as_mut()?;
        content.tensor_infos.get(name)?;
        match content.tensor(file, name, &Device::Cpu) {
            Ok(q) if q.shape() == dense.shape() && q.dtype() == INT8 => Some(q),
            Ok(q) => {
                tracing::warn!(name, shape = ?q.shape(), "int8 cache holds another shape; quantizing again");
                None
            }
            Err(error) => {
                tracing::warn!(name, %error, "int8 cache unreadable; quantizing again");
                None
            }
        }
    }
}

/// The cache at `path`, if it opens and was made from `source`.
fn read_cache(path: &Path, source: &str) -> Option<(Content, BufReader<File>)> {
    let mut file = BufReader::new(File::open(path).ok()?);
    let content = match Content::read(&mut file) {
        Ok(content) => content,
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "int8 cache unreadable; quantizing again");
            return None;
        }
    };
    match content.metadata.get(SOURCE_KEY) {
        Some(Value::String(made_from)) if made_from == source => Some((content, file)),
        _ => {
            tracing::info!(path = %path.display(), "int8 cache made from other weights; quantizing again");
            None
        }
    }
}

/// What identifies a checkpoint directory's weights for the cache: each file's name, size and modification
/// time (hashing 6 GB at every load would cost more than quantizing).
pub fn checkpoint_source(dir: &Path) -> Result<String> {
    let io = |source| EngineError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut parts = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let weights = name.ends_with(".safetensors") || name.ends_with(".gguf");
        if !(weights || name == "config.json") || name == super::INT8_CACHE {
            continue;
        }
        // Followed: a Hugging Face snapshot's files are links to its blobs.
        let meta = std::fs::metadata(entry.path()).map_err(io)?;
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        parts.push(format!("{name}:{}:{modified}", meta.len()));
    }
    parts.sort();
    Ok(parts.join(";"))
}
