//! The Hugging Face hub: its HTTP API and its cache layout on disk.

pub(crate) mod cache;
pub(crate) mod client;
mod url;
