//! Several real processes on one cache file: a writer killed mid-stream, and readers beside a writer.
//!
//! The children are this same test binary, re-executed to run one of the ignored `child_*` tests with
//! its instructions in environment variables. They report progress on stdout, one line per event.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Lines};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::{assert_complete, cache_path, document, integrity_check, page, FINGERPRINT, HASH};
use deepread_store::Store;

const ENV_DB: &str = "DEEPREAD_STORE_TEST_DB";
const ENV_PAGES: &str = "DEEPREAD_STORE_TEST_PAGES";
const ENV_PAGE_BYTES: &str = "DEEPREAD_STORE_TEST_PAGE_BYTES";
const ENV_PAUSE_MS: &str = "DEEPREAD_STORE_TEST_PAUSE_MS";

const COMMITTED: &str = "COMMITTED ";
const READY: &str = "READY";
const DISTINCT_COUNTS: &str = "DISTINCT COUNTS ";

/// What a child is told to do.
struct Errand {
    db: PathBuf,
    pages: u32,
    page_bytes: usize,
    pause_ms: u64,
}

impl Errand {
    fn from_env() -> Errand {
        let var =
            |name| std::env::var(name).expect("run by the tests in processes.rs, not by hand");
        Errand {
            db: PathBuf::from(var(ENV_DB)),
            pages: var(ENV_PAGES).parse().unwrap(),
            page_bytes: var(ENV_PAGE_BYTES).parse().unwrap(),
            pause_ms: var(ENV_PAUSE_MS).parse().unwrap(),
        }
    }

    fn spawn(&self, child_test: &str) -> (Child, Lines<BufReader<ChildStdout>>) {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                child_test,
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ENV_DB, &self.db)
            .env(ENV_PAGES, self.pages.to_string())
            .env(ENV_PAGE_BYTES, self.page_bytes.to_string())
            .env(ENV_PAUSE_MS, self.pause_ms.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        (child, lines)
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn cache_with_one_document(path: &Path) {
    let store = Store::open(path).await.unwrap();
    store.upsert_document(&document(HASH, 1)).await.unwrap();
    store.close().await;
}

/// The value after `prefix` on the child's next line that has it; `None` once the child's output ends.
fn next_value(lines: &mut Lines<BufReader<ChildStdout>>, prefix: &str) -> Option<String> {
    lines.map(|line| line.unwrap()).find_map(|line| {
        line.split_once(prefix)
            .map(|(_, value)| value.trim().to_string())
    })
}

/// Checks that the cached pages are exactly pages 0..n, each complete, and returns n.
fn assert_whole_prefix(pages: &[deepread_store::PageResult], page_bytes: usize) -> usize {
    for (position, found) in pages.iter().enumerate() {
        assert_eq!(
            found.page_index as usize, position,
            "a page is missing before this one"
        );
        assert_complete(found, page_bytes);
    }
    pages.len()
}

#[test]
fn a_writer_killed_mid_stream_leaves_every_reported_page_whole() {
    let dir = tempfile::tempdir().unwrap();
    let errand = Errand {
        db: cache_path(dir.path()),
        pages: 100_000,
        // Large pages span many database pages, so the kill is likely to land inside a write.
        page_bytes: 256 * 1024,
        pause_ms: 0,
    };
    let runtime = runtime();
    runtime.block_on(cache_with_one_document(&errand.db));

    let (mut writer, mut lines) = errand.spawn("child_writer");
    let mut reported = Vec::new();
    while reported.len() < 25 {
        let value = next_value(&mut lines, COMMITTED).expect("the writer stopped early");
        reported.push(value.parse::<u32>().unwrap());
    }
    writer.kill().unwrap();
    let status = writer.wait().unwrap();
    assert!(
        !status.success(),
        "the writer should have been killed, not finished"
    );
    assert_eq!(reported, (0..25).collect::<Vec<u32>>());
    let log = common::sidecar(&errand.db, "-wal");
    assert!(
        std::fs::metadata(&log).unwrap().len() > 0,
        "a killed writer leaves its log behind"
    );

    runtime.block_on(async {
        assert_eq!(integrity_check(&errand.db).await, ["ok"]);
        let store = Store::open(&errand.db).await.unwrap();
        assert!(
            store.set_aside().is_none(),
            "a killed writer must not look like damage"
        );
        let pages = store.pages(HASH, FINGERPRINT).await.unwrap();
        let whole = assert_whole_prefix(&pages, errand.page_bytes);
        assert!(
            whole >= reported.len(),
            "only {whole} of {} reported pages",
            reported.len()
        );
        // The cache goes on working where the writer stopped.
        let next = u32::try_from(whole).unwrap();
        store
            .save_page(&page(HASH, next, FINGERPRINT, 10))
            .await
            .unwrap();
        store.close().await;
    });
}

#[test]
fn readers_in_other_processes_see_only_whole_pages_while_one_writes() {
    let dir = tempfile::tempdir().unwrap();
    let errand = Errand {
        db: cache_path(dir.path()),
        pages: 120,
        page_bytes: 16 * 1024,
        pause_ms: 10,
    };
    let runtime = runtime();
    runtime.block_on(cache_with_one_document(&errand.db));

    // Readers first, and the writer only once both read the empty cache, so they overlap for sure.
    let mut readers: Vec<_> = (0..2).map(|_| errand.spawn("child_reader")).collect();
    for (_, lines) in &mut readers {
        assert!(next_value(lines, READY).is_some(), "a reader did not start");
    }
    let (mut writer, writer_lines) = errand.spawn("child_writer");

    for (mut reader, mut lines) in readers {
        let distinct = next_value(&mut lines, DISTINCT_COUNTS).expect("a reader failed");
        assert!(reader.wait().unwrap().success());
        let distinct: usize = distinct.parse().unwrap();
        assert!(
            distinct >= 3,
            "a reader saw only {distinct} states, so it never read mid-write"
        );
    }
    let committed = writer_lines
        .map(|line| line.unwrap())
        .filter(|line| line.contains(COMMITTED))
        .count();
    assert!(writer.wait().unwrap().success(), "the writer failed");
    assert_eq!(committed, errand.pages as usize);

    runtime.block_on(async {
        let store = Store::open(&errand.db).await.unwrap();
        let pages = store.pages(HASH, FINGERPRINT).await.unwrap();
        assert_eq!(
            assert_whole_prefix(&pages, errand.page_bytes),
            errand.pages as usize
        );
        store.close().await;
    });
}

#[tokio::test]
#[ignore = "child process of the other tests in processes.rs"]
async fn child_writer() {
    let errand = Errand::from_env();
    let store = Store::open(&errand.db).await.unwrap();
    for index in 0..errand.pages {
        let result = page(HASH, index, FINGERPRINT, errand.page_bytes);
        store.save_page(&result).await.unwrap();
        // println! flushes at the newline: the parent learns of each page as soon as it is committed.
        println!("{COMMITTED}{index}");
        if errand.pause_ms > 0 {
            tokio::time::sleep(Duration::from_millis(errand.pause_ms)).await;
        }
    }
    store.close().await;
}

#[tokio::test]
#[ignore = "child process of the other tests in processes.rs"]
async fn child_reader() {
    let errand = Errand::from_env();
    let store = Store::open(&errand.db).await.unwrap();
    let total = errand.pages as usize;
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut counts = BTreeSet::new();
    loop {
        // Any error, "database is locked" included, fails this child and so the parent test.
        let pages = store.pages(HASH, FINGERPRINT).await.unwrap();
        let whole = assert_whole_prefix(&pages, errand.page_bytes);
        if let Some(last) = whole.checked_sub(1) {
            let single = store
                .page(HASH, u32::try_from(last).unwrap(), FINGERPRINT)
                .await;
            assert_complete(&single.unwrap().unwrap(), errand.page_bytes);
        }
        if counts.is_empty() {
            println!("{READY}");
        }
        counts.insert(whole);
        if whole == total {
            break;
        }
        assert!(Instant::now() < deadline, "the writer never finished");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    store.close().await;
    println!("{DISTINCT_COUNTS}{}", counts.len());
}
