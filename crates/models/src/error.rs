//! Why a download stopped, each in one sentence a person can act on.

use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    #[error("cannot reach {host}: {detail} — check the connection, or set HF_ENDPOINT")]
    Unreachable { host: String, detail: String },

    #[error("{host} did not answer within {} s — check the connection, or set HF_ENDPOINT", .after.as_secs())]
    Timeout { host: String, after: Duration },

    #[error("the hub refused {repo} without a token: it needs one (set HF_TOKEN, or log in with `hf auth login`)")]
    NeedsToken { repo: String },

    #[error("the hub refused the token in HF_TOKEN (or the token file) for {repo}: check that it is valid and has access")]
    TokenRefused { repo: String },

    #[error("access to {repo} is forbidden for this token: accept the model's terms on the hub, or set an HF_TOKEN that has access")]
    Forbidden { repo: String },

    #[error("not found on {host}: {what}")]
    NotFound { host: String, what: String },

    #[error("{host} answered HTTP {status} for {url}; try again later")]
    Http {
        host: String,
        status: u16,
        url: String,
    },

    #[error("{host} sent an answer DeepRead cannot use for {url}: {detail}")]
    BadAnswer {
        host: String,
        url: String,
        detail: String,
    },

    #[error("{repo} at {revision} has no *.safetensors weights to download")]
    NoWeights { repo: String, revision: String },

    #[error("the connection broke while downloading {file} and {attempts} retries failed ({detail}); run the download again to resume")]
    Interrupted {
        file: String,
        attempts: u32,
        detail: String,
    },

    #[error("{file} arrived damaged twice (its {algorithm} does not match the hub's); nothing of it was kept — try again later")]
    Corrupt {
        file: String,
        algorithm: &'static str,
    },

    #[error("the hub gives {file} a hash DeepRead cannot check ({etag}), so it was not used")]
    Unverifiable { file: String, etag: String },

    #[error("not enough free disk space in {}: the model needs {} more, only {} available", .dir.display(), bytes(*.needed), bytes(*.available))]
    DiskSpace {
        dir: PathBuf,
        needed: u64,
        available: u64,
    },

    #[error("the disk is full writing {}; free some space and run the download again to resume", .path.display())]
    DiskFull { path: PathBuf },

    #[error("cannot write {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("another download is writing {} right now; wait for it to finish", .path.display())]
    Busy { path: PathBuf },

    #[error("no folder for the Hugging Face cache: no home folder, and neither HF_HUB_CACHE nor HF_HOME is set")]
    NoCacheDir,

    #[error("download cancelled; run it again to resume where it stopped")]
    Cancelled,
}

impl DownloadError {
    /// Whether running the download again later may succeed with nothing changed but the
    /// network, the disk or patience (as opposed to a token, a name or the hub's files).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            DownloadError::Unreachable { .. }
                | DownloadError::Timeout { .. }
                | DownloadError::Http { .. }
                | DownloadError::Interrupted { .. }
                | DownloadError::DiskSpace { .. }
                | DownloadError::DiskFull { .. }
                | DownloadError::Busy { .. }
                | DownloadError::Cancelled
        )
    }

    /// A failed write, told apart from a full disk (which keeps the partial file for a later resume).
    pub(crate) fn write(path: PathBuf, source: std::io::Error) -> Self {
        use std::io::ErrorKind;
        if matches!(
            source.kind(),
            ErrorKind::StorageFull | ErrorKind::QuotaExceeded
        ) {
            DownloadError::DiskFull { path }
        } else {
            DownloadError::Io { path, source }
        }
    }
}

/// A byte count as a person reads it, exact bytes beside it when they matter.
pub(crate) fn bytes(count: u64) -> String {
    const GB: f64 = 1e9;
    const MB: f64 = 1e6;
    let value = count as f64;
    if value >= GB {
        format!("{:.2} GB ({count} bytes)", value / GB)
    } else if value >= MB {
        format!("{:.1} MB ({count} bytes)", value / MB)
    } else {
        format!("{count} bytes")
    }
}
