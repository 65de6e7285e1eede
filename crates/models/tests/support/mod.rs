//! What the download tests share: the fake hub, and options pointing a download at it.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

pub mod fake_hub;

use std::path::{Path, PathBuf};
use std::time::Duration;

use deepread_models::{DownloadOptions, Env, Retries, Timeouts};

/// A download from `endpoint` into `hub_cache`, with short waits so failing tests fail fast.
pub fn options(endpoint: &str, hub_cache: &Path) -> DownloadOptions {
    DownloadOptions {
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            read: Duration::from_secs(5),
        },
        retries: Retries {
            attempts: 3,
            backoff: Duration::from_millis(5),
        },
        // Plenty of room unless a test says otherwise; the real probe is tested on a real tmpfs.
        free_space: |_| Ok(u64::MAX),
        ..DownloadOptions::new(endpoint, hub_cache)
    }
}

/// An environment with only a hub cache (no DEEPREAD_MODEL, no data folder): what `locate` sees after
/// a download into `hub_cache`.
pub fn env_with_hub_cache(hub_cache: &Path) -> Env {
    Env {
        model_var: None,
        hub_cache: Some(hub_cache.to_path_buf()),
        data_dir: None,
        endpoint: String::new(),
        token: None,
    }
}

/// `<hub cache>/models--deepseek-ai--DeepSeek-OCR-2`.
pub fn repo_dir(hub_cache: &Path) -> PathBuf {
    hub_cache.join(deepread_models::repo_folder(deepread_models::REPO))
}

/// Every file name under a folder, recursively, relative to it (links not followed), sorted.
pub fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            walk(root, &path, out);
        } else {
            out.push(path.strip_prefix(root).unwrap().display().to_string());
        }
    }
}
