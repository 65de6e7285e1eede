//! DeepSeek-OCR-2's weights: where they are on this machine ([`locate`]) and how they get there
//! ([`download`], from the Hugging Face hub into its standard cache, with resume and hash checks).
//!
//! Everything read from the environment goes through [`Env`], so callers and tests can pass their own.

mod download;
mod env;
mod error;
mod hub;
mod locate;
mod progress;
mod space;
mod transfer;
mod verify;

pub use download::{download, DownloadOptions, Retries, Timeouts};
pub use env::{Env, DEFAULT_ENDPOINT};
pub use error::DownloadError;
pub use hub::cache::{repo_folder, snapshot_dir};
pub use locate::{
    candidates, locate, locate_in, Located, ModelFiles, NotFound, Place, Source, INT8_CACHE,
};
pub use progress::{Progress, RateMeter};
pub use space::available_space;

/// The model repository on the Hugging Face hub.
pub const REPO: &str = "deepseek-ai/DeepSeek-OCR-2";

/// The commit of [`REPO`] the engine was checked against (docs/parity.md); downloads fetch it unless
/// told otherwise, so every machine reads with the same weights.
pub const PINNED_REVISION: &str = "aaa02f3811945a91062062994c5c4a3f4c0af2b0";

/// The model's folder name under the platform data folder.
pub const MODEL_FOLDER: &str = "DeepSeek-OCR-2";
