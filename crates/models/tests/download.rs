//! Downloads against a real HTTP server on 127.0.0.1 that speaks the hub's API: the cache layout,
//! resuming after a cut or a restart, and the hash check.

mod support;

use std::path::Path;
use std::sync::atomic::AtomicBool;

use deepread_models::{download, locate_in, DownloadError, Progress, Source, PINNED_REVISION};
use support::fake_hub::{Cut, FakeHub, Faults, HubFile, WEIGHTS, WEIGHTS_LEN};
use support::{env_with_hub_cache, options, repo_dir, tree};

/// The files a download must bring: what the engine reads, not the code, docs or images.
const WANTED: [&str; 3] = ["config.json", "tokenizer.json", WEIGHTS];

fn assert_snapshot_is_whole(hub: &FakeHub, snapshot: &Path) {
    for name in WANTED {
        let served = hub.file(name);
        let link = snapshot.join(name);
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            Path::new("../../blobs").join(served.etag()),
            "{name} is a relative link to its blob"
        );
        assert_eq!(std::fs::read(&link).unwrap(), served.content, "{name}");
    }
}

#[test]
fn a_whole_download_lands_in_the_hf_cache_layout_and_locate_finds_it() {
    let hub = FakeHub::model();
    let cache = tempfile::tempdir().unwrap();
    let mut reports: Vec<Progress> = Vec::new();

    let snapshot = download(
        &options(&hub.endpoint(), cache.path()),
        &AtomicBool::new(false),
        |p| reports.push(p.clone()),
    )
    .unwrap();

    let repo = repo_dir(cache.path());
    assert_eq!(snapshot, repo.join("snapshots").join(PINNED_REVISION));
    assert_snapshot_is_whole(&hub, &snapshot);
    let mut blobs: Vec<String> = WANTED
        .iter()
        .map(|name| format!("blobs/{}", hub.file(name).etag()))
        .collect();
    let mut links: Vec<String> = WANTED
        .iter()
        .map(|name| format!("snapshots/{PINNED_REVISION}/{name}"))
        .collect();
    blobs.append(&mut links);
    blobs.sort();
    // Nothing else: no README, code or images, no partial files, and no ref for a commit id.
    assert_eq!(tree(&repo), blobs);

    let last = reports.last().unwrap();
    let total: usize = WANTED.iter().map(|n| hub.file(n).content.len()).sum();
    assert_eq!((last.done, last.total), (total as u64, total as u64));
    assert!(reports.iter().any(|p| p.file == WEIGHTS));

    let located = locate_in(None, &env_with_hub_cache(cache.path())).unwrap();
    assert_eq!(located.source, Source::HubPinned);
    assert_eq!(located.dir, snapshot);
}

#[test]
fn a_branch_is_recorded_in_refs_and_locate_takes_the_snapshot_it_names() {
    let commit = "1234567890abcdef1234567890abcdef12345678";
    let hub = FakeHub::start(support::fake_hub::model_files(), commit);
    let cache = tempfile::tempdir().unwrap();
    let mut options = options(&hub.endpoint(), cache.path());
    options.revision = "main".into();

    let snapshot = download(&options, &AtomicBool::new(false), |_| {}).unwrap();

    let repo = repo_dir(cache.path());
    assert_eq!(snapshot, repo.join("snapshots").join(commit));
    assert_eq!(
        std::fs::read_to_string(repo.join("refs/main")).unwrap(),
        commit
    );
    assert_snapshot_is_whole(&hub, &snapshot);
    // Files are fetched at the commit the branch stood for, so a moving branch cannot mix revisions.
    assert!(hub
        .seen()
        .iter()
        .filter(|s| s.path.contains("/resolve/"))
        .all(|s| s.path.contains(commit)));
    let located = locate_in(None, &env_with_hub_cache(cache.path())).unwrap();
    assert_eq!((located.source, located.dir), (Source::HubMain, snapshot));
}

#[test]
fn a_second_download_fetches_nothing_again() {
    let hub = FakeHub::model();
    let cache = tempfile::tempdir().unwrap();
    let options = options(&hub.endpoint(), cache.path());
    download(&options, &AtomicBool::new(false), |_| {}).unwrap();
    let before = hub.content_requests(WEIGHTS).len();

    let snapshot = download(&options, &AtomicBool::new(false), |_| {}).unwrap();

    assert_eq!(hub.content_requests(WEIGHTS).len(), before);
    assert_snapshot_is_whole(&hub, &snapshot);
}

#[test]
fn a_connection_cut_mid_file_resumes_with_a_range_request() {
    let hub = FakeHub::model();
    let at = 100_000;
    hub.set_faults(Faults {
        cut: Some(Cut {
            file: WEIGHTS.into(),
            at,
            times: 1,
        }),
        ..Faults::default()
    });
    let cache = tempfile::tempdir().unwrap();

    let snapshot = download(
        &options(&hub.endpoint(), cache.path()),
        &AtomicBool::new(false),
        |_| {},
    )
    .unwrap();

    assert_eq!(
        hub.content_requests(WEIGHTS),
        vec![None, Some(format!("bytes={at}-"))]
    );
    assert_snapshot_is_whole(&hub, &snapshot);
}

#[test]
fn a_connection_that_stays_broken_gives_up_with_a_clear_error_and_keeps_the_bytes() {
    let hub = FakeHub::model();
    hub.set_faults(Faults {
        cut: Some(Cut {
            file: WEIGHTS.into(),
            at: 100_000,
            times: usize::MAX,
        }),
        ..Faults::default()
    });
    let cache = tempfile::tempdir().unwrap();

    let error = download(
        &options(&hub.endpoint(), cache.path()),
        &AtomicBool::new(false),
        |_| {},
    )
    .unwrap_err();

    let message = error.to_string();
    assert!(
        matches!(error, DownloadError::Interrupted { .. }),
        "{message}"
    );
    assert!(message.contains(WEIGHTS), "{message}");
    assert!(
        message.contains("run the download again to resume"),
        "{message}"
    );
    let partial = repo_dir(cache.path())
        .join("blobs")
        .join(format!("{}.incomplete", hub.file(WEIGHTS).etag()));
    assert_eq!(std::fs::metadata(partial).unwrap().len(), 100_000);
    // The first request, then three retries that brought nothing.
    assert_eq!(hub.content_requests(WEIGHTS).len(), 1 + 3);
}

#[test]
fn a_partial_file_from_an_earlier_run_is_continued_not_restarted() {
    let hub = FakeHub::model();
    let cache = tempfile::tempdir().unwrap();
    let weights = hub.file(WEIGHTS);
    let blobs = repo_dir(cache.path()).join("blobs");
    std::fs::create_dir_all(&blobs).unwrap();
    let kept = 200_000;
    std::fs::write(
        blobs.join(format!("{}.incomplete", weights.etag())),
        &weights.content[..kept],
    )
    .unwrap();
    let mut first_report = None;

    let snapshot = download(
        &options(&hub.endpoint(), cache.path()),
        &AtomicBool::new(false),
        |p| {
            first_report.get_or_insert(p.done);
        },
    )
    .unwrap();

    assert_eq!(
        hub.content_requests(WEIGHTS),
        vec![Some(format!("bytes={kept}-"))]
    );
    assert!(
        first_report.unwrap() >= kept as u64,
        "progress starts at the bytes kept"
    );
    assert_snapshot_is_whole(&hub, &snapshot);
}

#[test]
fn a_server_that_ignores_range_makes_the_file_start_over() {
    let hub = FakeHub::model();
    hub.set_faults(Faults {
        ignore_range: true,
        ..Faults::default()
    });
    let cache = tempfile::tempdir().unwrap();
    let weights = hub.file(WEIGHTS);
    let blobs = repo_dir(cache.path()).join("blobs");
    std::fs::create_dir_all(&blobs).unwrap();
    std::fs::write(
        blobs.join(format!("{}.incomplete", weights.etag())),
        &weights.content[..50_000],
    )
    .unwrap();

    let snapshot = download(
        &options(&hub.endpoint(), cache.path()),
        &AtomicBool::new(false),
        |_| {},
    )
    .unwrap();

    assert_eq!(
        hub.content_requests(WEIGHTS),
        vec![Some("bytes=50000-".to_owned())]
    );
    assert_snapshot_is_whole(&hub, &snapshot);
}

#[test]
fn a_wrong_byte_is_caught_and_the_file_fetched_again() {
    let hub = FakeHub::model();
    hub.set_faults(Faults {
        corrupt: Some((WEIGHTS.into(), 1)),
        ..Faults::default()
    });
    let cache = tempfile::tempdir().unwrap();

    let snapshot = download(
        &options(&hub.endpoint(), cache.path()),
        &AtomicBool::new(false),
        |_| {},
    )
    .unwrap();

    assert_eq!(hub.content_requests(WEIGHTS), vec![None, None]);
    assert_snapshot_is_whole(&hub, &snapshot);
}

#[test]
fn a_file_wrong_every_time_is_an_error_naming_it_and_nothing_of_it_is_placed() {
    // config.json is a regular (non-LFS) file: this checks the git blob id as well as the sha256.
    for (name, algorithm) in [("config.json", "git blob sha1"), (WEIGHTS, "sha256")] {
        let hub = FakeHub::model();
        hub.set_faults(Faults {
            corrupt: Some((name.into(), usize::MAX)),
            ..Faults::default()
        });
        let cache = tempfile::tempdir().unwrap();

        let error = download(
            &options(&hub.endpoint(), cache.path()),
            &AtomicBool::new(false),
            |_| {},
        )
        .unwrap_err();

        let message = error.to_string();
        assert!(matches!(error, DownloadError::Corrupt { .. }), "{message}");
        assert!(message.contains(name), "{message}");
        assert!(message.contains(algorithm), "{message}");
        assert_eq!(hub.content_requests(name).len(), 2, "fetched once more");
        let etag = hub.file(name).etag();
        let files = tree(&repo_dir(cache.path()));
        assert!(
            files
                .iter()
                .all(|f| !f.contains(&etag) && !f.ends_with(name)),
            "nothing of {name} kept: {files:?}"
        );
    }
}

#[test]
fn files_in_subfolders_and_odd_names_keep_their_place() {
    let mut files = support::fake_hub::model_files();
    files.push(HubFile {
        name: "processor/preprocessor_config.json".into(),
        content: b"{}".to_vec(),
        lfs: false,
    });
    let hub = FakeHub::start(files, PINNED_REVISION);
    let cache = tempfile::tempdir().unwrap();

    let snapshot = download(
        &options(&hub.endpoint(), cache.path()),
        &AtomicBool::new(false),
        |_| {},
    )
    .unwrap();

    let nested = snapshot.join("processor/preprocessor_config.json");
    assert_eq!(std::fs::read(&nested).unwrap(), b"{}");
    assert!(std::fs::read_link(nested)
        .unwrap()
        .starts_with("../../../blobs"));
    assert_eq!(
        std::fs::metadata(snapshot.join(WEIGHTS)).unwrap().len(),
        WEIGHTS_LEN as u64
    );
}
