//! `download`: the model's files from the Hugging Face hub into the hub cache, laid out as
//! huggingface_hub lays them out, so each tool finds what the other fetched.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::env::Env;
use crate::error::DownloadError;
use crate::hub::cache::{is_commit, is_safe_relative, RepoCache};
use crate::hub::client::{FileMeta, HubClient};
use crate::progress::{Progress, Reporter};
use crate::space::{available_space, ensure_space};
use crate::transfer::Transfer;
use crate::verify::Checksum;
use crate::{PINNED_REVISION, REPO};

/// How long to wait on the network before saying so, instead of hanging.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Resolving the host and connecting (TLS included).
    pub connect: Duration,
    /// Any one read: headers, or the next bytes of a file.
    pub read: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            read: Duration::from_secs(30),
        }
    }
}

/// How a broken connection is retried within one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retries {
    /// Requests in a row that bring no bytes before giving up.
    pub attempts: u32,
    /// The first wait; each further one doubles it.
    pub backoff: Duration,
}

impl Default for Retries {
    fn default() -> Self {
        Retries {
            attempts: 4,
            backoff: Duration::from_millis(500),
        }
    }
}

/// What to download, from where, into which cache.
#[derive(Debug, Clone)]
pub struct DownloadOptions {
    /// The hub, e.g. `https://huggingface.co` or a mirror.
    pub endpoint: String,
    /// Sent as `Authorization: Bearer`, to the hub only (never to its CDN).
    pub token: Option<String>,
    /// The hub cache folder (the one holding `models--…` folders).
    pub hub_cache: PathBuf,
    pub repo: String,
    /// A commit, branch or tag.
    pub revision: String,
    pub timeouts: Timeouts,
    pub retries: Retries,
    /// Free bytes on the filesystem of a path: [`available_space`], or a stand-in in tests.
    pub free_space: fn(&Path) -> io::Result<u64>,
}

impl DownloadOptions {
    /// DeepSeek-OCR-2 at the pinned revision, from `endpoint` into `hub_cache`, without a token.
    pub fn new(endpoint: impl Into<String>, hub_cache: impl Into<PathBuf>) -> Self {
        DownloadOptions {
            endpoint: endpoint.into(),
            token: None,
            hub_cache: hub_cache.into(),
            repo: REPO.to_owned(),
            revision: PINNED_REVISION.to_owned(),
            timeouts: Timeouts::default(),
            retries: Retries::default(),
            free_space: available_space,
        }
    }

    /// The endpoint, token and hub cache the environment names (`HF_ENDPOINT`, `HF_TOKEN`, `HF_HOME`…).
    pub fn from_env(env: &Env) -> Result<Self, DownloadError> {
        let hub_cache = env.hub_cache.clone().ok_or(DownloadError::NoCacheDir)?;
        Ok(DownloadOptions {
            token: env.token.clone(),
            ..DownloadOptions::new(env.endpoint.clone(), hub_cache)
        })
    }
}

/// Downloads the model's `*.json` and `*.safetensors` files (what the engine reads; code, docs and
/// images are left out) and returns the snapshot folder holding them, which [`crate::locate`] finds.
///
/// Files already in the cache are kept; partial ones are resumed. `cancel` is looked at between
/// chunks: setting it stops with [`DownloadError::Cancelled`] and keeps the partial file for later.
pub fn download(
    options: &DownloadOptions,
    cancel: &AtomicBool,
    mut progress: impl FnMut(&Progress),
) -> Result<PathBuf, DownloadError> {
    let client = HubClient::new(
        &options.endpoint,
        options.token.clone(),
        &options.repo,
        options.timeouts,
    );
    let cache = RepoCache::new(&options.hub_cache, &options.repo);
    let listing = client.list(&options.revision)?;
    let commit = listing.commit;
    if !is_commit(&commit) {
        return Err(bad_listing(&client, &options.revision, "no commit id"));
    }
    let files = wanted_files(&listing.files, options)?;
    let plan = files
        .into_iter()
        .map(|file| {
            let meta = checked_meta(&client, &commit, &file)?;
            Ok((file, meta))
        })
        .collect::<Result<Vec<_>, DownloadError>>()?;

    let blobs = cache.blobs();
    std::fs::create_dir_all(&blobs).map_err(|e| DownloadError::write(blobs.clone(), e))?;
    let tally = Tally::of(&cache, &plan);
    tracing::info!(
        repo = options.repo,
        revision = options.revision,
        commit,
        files = plan.len(),
        total = tally.total,
        needed = tally.needed,
        "downloading"
    );
    ensure_space(&blobs, tally.needed, options.free_space)?;

    let mut reporter = Reporter::new(&mut progress, tally.done, tally.total);
    reporter.begin();
    let transfer = Transfer {
        client: &client,
        cache: &cache,
        retries: options.retries,
        cancel,
    };
    for (file, meta) in &plan {
        if !blob_is_whole(&cache, meta)? {
            transfer.fetch_checked(&commit, file, meta, &mut reporter)?;
        }
        let link = cache.link(&commit, file, &meta.etag);
        link.map_err(|e| DownloadError::write(cache.snapshot(&commit).join(file), e))?;
    }
    record_ref(&cache, &options.revision, &commit)?;
    Ok(cache.snapshot(&commit))
}

/// The files the engine needs, small ones first; a revision without weights is an error.
fn wanted_files(
    listed: &[String],
    options: &DownloadOptions,
) -> Result<Vec<String>, DownloadError> {
    let mut files: Vec<String> = listed
        .iter()
        .filter(|file| file.ends_with(".json") || file.ends_with(".safetensors"))
        .filter(|file| {
            let safe = is_safe_relative(file);
            if !safe {
                tracing::warn!(file, "skipping a file name that leaves the model folder");
            }
            safe
        })
        .cloned()
        .collect();
    files.sort_by_key(|file| (file.ends_with(".safetensors"), file.clone()));
    if !files.iter().any(|file| file.ends_with(".safetensors")) {
        return Err(DownloadError::NoWeights {
            repo: options.repo.clone(),
            revision: options.revision.clone(),
        });
    }
    Ok(files)
}

/// A file's metadata, refused before any download when its etag is not a hash we can check (the etag
/// also names the blob on disk, so it must be plain hex).
fn checked_meta(client: &HubClient, commit: &str, file: &str) -> Result<FileMeta, DownloadError> {
    let meta = client.file_meta(commit, file)?;
    match Checksum::for_etag(&meta.etag, meta.size) {
        Some(_) => Ok(meta),
        None => Err(DownloadError::Unverifiable {
            file: file.to_owned(),
            etag: meta.etag,
        }),
    }
}

fn bad_listing(client: &HubClient, revision: &str, detail: &str) -> DownloadError {
    DownloadError::BadAnswer {
        host: client.host(),
        url: format!("the file list of {revision}"),
        detail: detail.to_owned(),
    }
}

/// Bytes of the download: in all, already on disk (whole blobs and partial files), and still to come.
struct Tally {
    total: u64,
    done: u64,
    needed: u64,
}

impl Tally {
    fn of(cache: &RepoCache, plan: &[(String, FileMeta)]) -> Self {
        let mut tally = Tally {
            total: 0,
            done: 0,
            needed: 0,
        };
        for (_, meta) in plan {
            let on_disk = if file_len(&cache.blob(&meta.etag)) == Some(meta.size) {
                meta.size
            } else {
                file_len(&cache.incomplete(&meta.etag)).map_or(0, |len| len.min(meta.size))
            };
            tally.total += meta.size;
            tally.done += on_disk;
            tally.needed += meta.size - on_disk;
        }
        tally
    }
}

/// A blob already there counts when its size is right: only checked bytes are ever renamed into
/// `blobs/`, by us or by huggingface_hub, and re-hashing gigabytes on every run would be slow. A
/// blob of the wrong size is not this file and is removed.
fn blob_is_whole(cache: &RepoCache, meta: &FileMeta) -> Result<bool, DownloadError> {
    let blob = cache.blob(&meta.etag);
    match file_len(&blob) {
        Some(len) if len == meta.size => Ok(true),
        Some(_) => {
            std::fs::remove_file(&blob).map_err(|e| DownloadError::write(blob, e))?;
            Ok(false)
        }
        None => Ok(false),
    }
}

/// `refs/<branch>` for a branch or tag, as huggingface_hub writes it; nothing for a commit id.
fn record_ref(cache: &RepoCache, revision: &str, commit: &str) -> Result<(), DownloadError> {
    if revision == commit || !is_safe_relative(revision) {
        return Ok(());
    }
    cache
        .write_ref(revision, commit)
        .map_err(|e| DownloadError::write(cache.root().join("refs").join(revision), e))
}

fn file_len(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|meta| meta.len())
}
