//! Why a command failed, each kind with its own exit status so scripts can tell them apart.

use std::process::ExitCode;

pub const EXIT_CODES_HELP: &str = "Exit status:
  0  everything was read and written
  1  an unexpected error
  2  the command line is wrong
  3  a document could not be opened (missing, not a PDF or image, corrupt, empty, encrypted without
     its password or with the wrong one)
  4  model weights are missing, damaged, or of the wrong model
  5  the GPU ran out of memory
  6  some pages failed or looped (what was read is written)
  7  the cache could not be used
  8  the output could not be written
  9  a model download did not finish (network, disk space, interrupted); run it again to resume";

#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("{0:#}")]
    Unexpected(anyhow::Error),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Document(String),
    #[error("{0}")]
    Model(String),
    #[error("the GPU ran out of memory: {0}")]
    OutOfMemory(String),
    #[error("{0}")]
    PagesFailed(String),
    #[error("the cache could not be used: {0}")]
    Cache(String),
    #[error("{0}")]
    Output(String),
    #[error("{0}")]
    Download(String),
}

impl Failure {
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            Failure::Unexpected(_) => 1,
            Failure::Usage(_) => 2,
            Failure::Document(_) => 3,
            Failure::Model(_) => 4,
            Failure::OutOfMemory(_) => 5,
            Failure::PagesFailed(_) => 6,
            Failure::Cache(_) => 7,
            Failure::Output(_) => 8,
            Failure::Download(_) => 9,
        })
    }

    /// A document that cannot be opened, named.
    pub fn document(path: &std::path::Path, error: impl std::fmt::Display) -> Self {
        Failure::Document(format!("{}: {error}", path.display()))
    }

    /// A model error, told apart from running out of GPU memory.
    pub fn model(error: impl std::fmt::Display) -> Self {
        let message = error.to_string();
        if message.to_ascii_lowercase().contains("out of memory") {
            Failure::OutOfMemory(message)
        } else {
            Failure::Model(message)
        }
    }
}
