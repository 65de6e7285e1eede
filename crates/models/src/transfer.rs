//! One file from the hub into `blobs/<etag>`: appended to `<etag>.incomplete` (resuming what is there),
//! retried with a backoff when the connection breaks, checked against its hash, and only then renamed
//! into place. The partial file is never deleted except when its bytes are known to be wrong.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::download::Retries;
use crate::error::DownloadError;
use crate::hub::cache::RepoCache;
use crate::hub::client::{FileMeta, HubClient};
use crate::progress::Reporter;
use crate::verify::Checksum;

/// Bytes read and written at a time; also how often the cancel flag is looked at.
const CHUNK: usize = 64 * 1024;

/// What ended one request's worth of bytes early.
enum Stop {
    /// The connection broke or the server stopped early: worth another request.
    Broken(String),
    Fatal(DownloadError),
}

pub(crate) struct Transfer<'a> {
    pub client: &'a HubClient,
    pub cache: &'a RepoCache,
    pub retries: Retries,
    pub cancel: &'a AtomicBool,
}

impl Transfer<'_> {
    /// Fetches `file` at `commit` into its blob, checked. Bytes that fail the check are thrown away and
    /// the file fetched once more; a second failure is an error and leaves nothing of the file behind.
    pub fn fetch_checked(
        &self,
        commit: &str,
        file: &str,
        meta: &FileMeta,
        reporter: &mut Reporter,
    ) -> Result<PathBuf, DownloadError> {
        let mut checksum = Checksum::for_etag(&meta.etag, meta.size).ok_or_else(|| {
            DownloadError::Unverifiable {
                file: file.to_owned(),
                etag: meta.etag.clone(),
            }
        })?;
        let partial = self.cache.incomplete(&meta.etag);
        for attempt in 1..=2 {
            self.fill(commit, file, meta.size, &partial, &mut checksum, reporter)?;
            if checksum.matches() {
                let blob = self.cache.blob(&meta.etag);
                std::fs::rename(&partial, &blob)
                    .map_err(|source| DownloadError::write(blob.clone(), source))?;
                reporter.finish_file();
                return Ok(blob);
            }
            tracing::warn!(
                file,
                attempt,
                "downloaded bytes fail the hash check; discarded"
            );
            std::fs::remove_file(&partial)
                .map_err(|source| DownloadError::write(partial.clone(), source))?;
            reporter.restart_file();
        }
        Err(DownloadError::Corrupt {
            file: file.to_owned(),
            algorithm: checksum.algorithm(),
        })
    }

    /// Brings the partial file to `size` bytes, feeding `checksum` with all of them (those from an
    /// earlier run included).
    fn fill(
        &self,
        commit: &str,
        file: &str,
        size: u64,
        path: &Path,
        checksum: &mut Checksum,
        reporter: &mut Reporter,
    ) -> Result<(), DownloadError> {
        let mut partial = Partial::open(path, checksum)?;
        reporter.start_file(file, partial.have.min(size), size);
        if partial.have > size {
            // Longer than the file can be: not a prefix of it.
            partial.start_over()?;
            reporter.restart_file();
        }
        partial.hash_existing()?;
        let mut failures = 0;
        while partial.have < size {
            let before = partial.have;
            let detail = match self.receive(commit, file, &mut partial, reporter) {
                Ok(()) if partial.have >= size => break,
                Ok(()) => "the server closed the connection early".to_owned(),
                Err(Stop::Broken(detail)) => detail,
                Err(Stop::Fatal(error)) => return Err(error),
            };
            failures = if partial.have > before {
                1
            } else {
                failures + 1
            };
            self.wait_or_give_up(file, &detail, failures)?;
        }
        Ok(())
    }

    /// One request for the bytes from `partial.have` on, appended as they come.
    fn receive(
        &self,
        commit: &str,
        file: &str,
        partial: &mut Partial,
        reporter: &mut Reporter,
    ) -> Result<(), Stop> {
        self.check_cancel()?;
        let fetched = self
            .client
            .fetch(commit, file, partial.have)
            .map_err(|error| {
                if error.is_retryable() {
                    Stop::Broken(error.to_string())
                } else {
                    Stop::Fatal(error)
                }
            })?;
        if fetched.from_start && partial.have > 0 {
            tracing::info!(
                file,
                "the server ignored the range asked for; starting over"
            );
            partial.start_over().map_err(Stop::Fatal)?;
            reporter.restart_file();
        }
        let mut body = fetched.body;
        let mut buffer = vec![0u8; CHUNK];
        loop {
            self.check_cancel()?;
            let count = match body.read(&mut buffer) {
                Ok(0) => return Ok(()),
                Ok(count) => count,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Stop::Broken(e.to_string())),
            };
            partial.append(&buffer[..count]).map_err(Stop::Fatal)?;
            reporter.advance(count as u64);
        }
    }

    /// Waits before the next request, longer each time; gives up after `retries.attempts` requests
    /// in a row that brought nothing (a slow, flaky line that keeps making progress is not given up on).
    fn wait_or_give_up(
        &self,
        file: &str,
        detail: &str,
        failures: u32,
    ) -> Result<(), DownloadError> {
        if failures > self.retries.attempts {
            return Err(DownloadError::Interrupted {
                file: file.to_owned(),
                attempts: self.retries.attempts,
                detail: detail.to_owned(),
            });
        }
        let wait = self.retries.backoff * 2u32.pow(failures - 1);
        tracing::info!(file, detail, ?wait, "download interrupted; resuming");
        std::thread::sleep(wait);
        Ok(())
    }

    fn check_cancel(&self) -> Result<(), Stop> {
        if self.cancel.load(Ordering::Relaxed) {
            Err(Stop::Fatal(DownloadError::Cancelled))
        } else {
            Ok(())
        }
    }
}

/// The `.incomplete` file being filled, and the running hash of what is in it.
struct Partial<'a> {
    file: File,
    path: &'a Path,
    /// Bytes in the file (and fed to the checksum once `hash_existing` ran).
    have: u64,
    checksum: &'a mut Checksum,
}

impl<'a> Partial<'a> {
    /// Opens (or creates) the partial file, locked so two downloads never interleave in it.
    fn open(path: &'a Path, checksum: &'a mut Checksum) -> Result<Self, DownloadError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|source| DownloadError::write(path.to_owned(), source))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(DownloadError::Busy {
                    path: path.to_owned(),
                })
            }
            Err(TryLockError::Error(source)) => {
                return Err(DownloadError::write(path.to_owned(), source))
            }
        }
        let have = file
            .metadata()
            .map_err(|source| DownloadError::write(path.to_owned(), source))?
            .len();
        checksum.restart();
        Ok(Partial {
            file,
            path,
            have,
            checksum,
        })
    }

    /// Feeds the bytes already on disk (from an earlier run) to the checksum; leaves the file at its end.
    fn hash_existing(&mut self) -> Result<(), DownloadError> {
        self.file
            .seek(SeekFrom::Start(0))
            .map_err(|e| self.error(e))?;
        let mut buffer = vec![0u8; CHUNK];
        let mut left = self.have;
        while left > 0 {
            let want = buffer.len().min(left as usize);
            self.file
                .read_exact(&mut buffer[..want])
                .map_err(|e| self.error(e))?;
            self.checksum.update(&buffer[..want]);
            left -= want as u64;
        }
        self.file
            .seek(SeekFrom::End(0))
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    fn append(&mut self, bytes: &[u8]) -> Result<(), DownloadError> {
        self.file.write_all(bytes).map_err(|e| self.error(e))?;
        self.checksum.update(bytes);
        self.have += bytes.len() as u64;
        Ok(())
    }

    fn start_over(&mut self) -> Result<(), DownloadError> {
        self.file.set_len(0).map_err(|e| self.error(e))?;
        self.file
            .seek(SeekFrom::Start(0))
            .map_err(|e| self.error(e))?;
        self.have = 0;
        self.checksum.restart();
        Ok(())
    }

    fn error(&self, source: std::io::Error) -> DownloadError {
        DownloadError::write(self.path.to_owned(), source)
    }
}
