//! How a download fails, as a person sees it: the hub saying no, no server at all, a server that never
//! answers, too little disk, a full disk, and a cancel. Each leaves what can be resumed, and only that.

mod support;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use deepread_models::{available_space, download, DownloadError, Timeouts};
use support::fake_hub::{FakeHub, Faults, WEIGHTS, WEIGHTS_LEN};
use support::{options, repo_dir, tree};

fn partial_of(hub: &FakeHub, cache: &Path) -> PathBuf {
    repo_dir(cache)
        .join("blobs")
        .join(format!("{}.incomplete", hub.file(WEIGHTS).etag()))
}

fn fails(options: &deepread_models::DownloadOptions) -> DownloadError {
    download(options, &AtomicBool::new(false), |_| {}).unwrap_err()
}

#[test]
fn a_missing_revision_or_repository_is_named() {
    let hub = FakeHub::model();
    let cache = tempfile::tempdir().unwrap();
    let mut options = options(&hub.endpoint(), cache.path());
    options.revision = "no-such-branch".into();
    let message = fails(&options).to_string();
    assert!(
        message.starts_with("not found on http://127.0.0.1:"),
        "{message}"
    );
    assert!(
        message.contains("has no revision no-such-branch"),
        "{message}"
    );

    options.revision = "main".into();
    options.repo = "deepseek-ai/No-Such-Model".into();
    let message = fails(&options).to_string();
    assert!(
        message.contains("there is no repository deepseek-ai/No-Such-Model"),
        "{message}"
    );
}

#[test]
fn a_repository_that_needs_a_token_says_to_set_hf_token() {
    let hub = FakeHub::model();
    hub.set_faults(Faults {
        token: Some("hf_good".into()),
        ..Faults::default()
    });
    let cache = tempfile::tempdir().unwrap();
    let mut options = options(&hub.endpoint(), cache.path());

    let error = fails(&options);
    assert!(matches!(error, DownloadError::NeedsToken { .. }), "{error}");
    assert!(
        error.to_string().contains("needs one (set HF_TOKEN"),
        "{error}"
    );

    options.token = Some("hf_wrong".into());
    let error = fails(&options);
    assert!(
        error.to_string().contains("refused the token in HF_TOKEN"),
        "{error}"
    );
    assert!(tree(&repo_dir(cache.path())).is_empty());
}

#[test]
fn the_token_goes_to_the_hub_and_never_to_the_cdn() {
    let hub = FakeHub::model();
    hub.set_faults(Faults {
        token: Some("hf_good".into()),
        ..Faults::default()
    });
    let cache = tempfile::tempdir().unwrap();
    let mut options = options(&hub.endpoint(), cache.path());
    options.token = Some("hf_good".into());

    download(&options, &AtomicBool::new(false), |_| {}).unwrap();

    for seen in hub.seen() {
        let expected = (!seen.path.starts_with("/cdn/")).then(|| "Bearer hf_good".to_owned());
        assert_eq!(
            seen.authorization, expected,
            "{} {}",
            seen.method, seen.path
        );
    }
}

#[test]
fn nothing_listening_is_a_quick_clear_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cache = tempfile::tempdir().unwrap();
    let started = Instant::now();

    let error = fails(&options(&format!("http://127.0.0.1:{port}"), cache.path()));

    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let message = error.to_string();
    assert!(error.is_retryable());
    assert!(
        message.starts_with(&format!("cannot reach http://127.0.0.1:{port}:")),
        "{message}"
    );
    assert!(message.contains("refused"), "{message}");
    assert!(
        message.contains("check the connection, or set HF_ENDPOINT"),
        "{message}"
    );
}

#[test]
fn a_server_that_never_answers_times_out_instead_of_hanging() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    // Accepts connections (the kernel does) and never says a word.
    let _held = std::thread::spawn(move || listener.incoming().flatten().collect::<Vec<_>>());
    let cache = tempfile::tempdir().unwrap();
    let mut options = options(&endpoint, cache.path());
    options.timeouts = Timeouts {
        connect: Duration::from_millis(500),
        read: Duration::from_millis(300),
    };
    let started = Instant::now();

    let error = fails(&options);

    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(error, DownloadError::Timeout { .. }), "{error}");
    assert!(
        error.to_string().contains("did not answer within"),
        "{error}"
    );
}

#[test]
fn too_little_free_space_is_refused_before_any_byte_with_both_figures() {
    let hub = FakeHub::model();
    let cache = tempfile::tempdir().unwrap();
    let mut options = options(&hub.endpoint(), cache.path());
    options.free_space = |_| Ok(1_000);

    let error = fails(&options);

    let message = error.to_string();
    let DownloadError::DiskSpace { needed, .. } = error else {
        panic!("{message}")
    };
    assert!(needed > WEIGHTS_LEN as u64);
    assert!(
        message.contains(&format!("needs {needed} bytes more")),
        "{message}"
    );
    assert!(message.contains("only 1000 bytes available"), "{message}");
    assert!(hub.content_requests(WEIGHTS).is_empty());
    assert!(tree(&repo_dir(cache.path())).is_empty(), "nothing written");
}

/// A real tmpfs, where this process may mount one (root on Linux); unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .ok()?;
        status.success().then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_real_small_disk_is_refused_up_front_and_a_full_one_keeps_only_the_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let Some(_tmpfs) = Tmpfs::mount(dir.path(), "256k") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root on Linux); the seam test covers the check");
        return;
    };
    let hub = FakeHub::model();
    let options = options(&hub.endpoint(), dir.path());

    // The real probe of the real filesystem: 256 KiB cannot hold 384 KiB of weights.
    let real_probe = deepread_models::DownloadOptions {
        free_space: available_space,
        ..options.clone()
    };
    let error = fails(&real_probe);
    let DownloadError::DiskSpace {
        needed, available, ..
    } = error
    else {
        panic!("{error}")
    };
    assert!(available <= 256 * 1024 && needed > available);
    assert!(hub.content_requests(WEIGHTS).is_empty());

    // Told there is room, the writes themselves hit the full disk.
    let error = fails(&options);
    let message = error.to_string();
    assert!(matches!(error, DownloadError::DiskFull { .. }), "{message}");
    assert!(message.contains("the disk is full"), "{message}");
    assert!(
        message.contains("run the download again to resume"),
        "{message}"
    );
    let partial = partial_of(&hub, dir.path());
    let kept = std::fs::metadata(&partial).unwrap().len();
    assert!(kept > 0 && kept < WEIGHTS_LEN as u64, "{kept}");
    let etag = hub.file(WEIGHTS).etag();
    let files = tree(&repo_dir(dir.path()));
    assert!(
        files
            .iter()
            .all(|f| f.ends_with(".incomplete") || (!f.contains(&etag) && !f.ends_with(WEIGHTS))),
        "no whole-looking weights: {files:?}"
    );
}

#[test]
fn cancel_stops_mid_file_keeps_the_partial_file_and_a_later_run_finishes() {
    let hub = FakeHub::model();
    hub.set_faults(Faults {
        slow: Some((WEIGHTS.into(), Duration::from_millis(20))),
        ..Faults::default()
    });
    let cache = tempfile::tempdir().unwrap();
    let options = options(&hub.endpoint(), cache.path());
    let cancel = AtomicBool::new(false);

    let error = download(&options, &cancel, |p| {
        if p.file == WEIGHTS && p.file_done >= 32 * 1024 {
            cancel.store(true, Ordering::Relaxed);
        }
    })
    .unwrap_err();

    assert!(matches!(error, DownloadError::Cancelled), "{error}");
    assert!(
        error.to_string().contains("run it again to resume"),
        "{error}"
    );
    let kept = std::fs::metadata(partial_of(&hub, cache.path()))
        .unwrap()
        .len();
    assert!(kept > 0 && kept < WEIGHTS_LEN as u64, "{kept}");

    hub.set_faults(Faults::default());
    let snapshot = download(&options, &AtomicBool::new(false), |_| {}).unwrap();
    assert_eq!(
        hub.content_requests(WEIGHTS).last().unwrap().as_deref(),
        Some(format!("bytes={kept}-").as_str())
    );
    assert_eq!(
        std::fs::read(snapshot.join(WEIGHTS)).unwrap(),
        hub.file(WEIGHTS).content
    );
}
