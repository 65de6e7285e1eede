//! Unusable cache files are moved aside with their bytes intact, and a working cache takes their place.

mod common;

use std::path::Path;

use common::{cache_path, document, page, raw_connection, FINGERPRINT, HASH};
use deepread_store::{schema_version, SetAsideReason, Store};
use sqlx::Connection;

/// Bytes no SQLite file starts with (xorshift, so the test needs no random-number crate).
fn noise(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Opens the cache at `path`, expecting the old file to be set aside with `original` bytes and a
/// working, empty cache in its place. Returns the reason given.
async fn assert_set_aside(path: &Path, original: &[u8], name_part: &str) -> SetAsideReason {
    let store = Store::open(path).await.unwrap();
    let set_aside = store
        .set_aside()
        .cloned()
        .expect("the file should be set aside");
    let file_name = set_aside
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        file_name.starts_with(&format!("cache.sqlite3.{name_part}-")),
        "{file_name}"
    );
    assert_eq!(set_aside.path.parent(), path.parent());
    assert_eq!(std::fs::read(&set_aside.path).unwrap(), original);

    assert_eq!(store.document(HASH).await.unwrap(), None);
    store.upsert_document(&document(HASH, 1)).await.unwrap();
    store
        .save_page(&page(HASH, 0, FINGERPRINT, 100))
        .await
        .unwrap();
    assert_eq!(store.pages(HASH, FINGERPRINT).await.unwrap().len(), 1);
    store.close().await;

    // The fresh cache is a sound one: opening it again sets nothing aside.
    let reopened = Store::open(path).await.unwrap();
    assert!(reopened.set_aside().is_none());
    assert!(reopened.document(HASH).await.unwrap().is_some());
    reopened.close().await;
    set_aside.reason
}

/// A real cache with a document and enough pages to span many database pages, closed cleanly so the
/// main file holds everything.
async fn filled_cache(path: &Path) {
    let store = Store::open(path).await.unwrap();
    store.upsert_document(&document(HASH, 1)).await.unwrap();
    for index in 0..40 {
        store
            .save_page(&page(HASH, index, FINGERPRINT, 8_000))
            .await
            .unwrap();
    }
    store.close().await;
    let log = std::fs::metadata(common::sidecar(path, "-wal")).map_or(0, |meta| meta.len());
    assert_eq!(log, 0, "the main file should hold everything");
}

#[tokio::test]
async fn a_file_of_random_bytes_is_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let original = noise(64 * 1024);
    std::fs::write(&path, &original).unwrap();

    let reason = assert_set_aside(&path, &original, "corrupt").await;
    assert!(matches!(reason, SetAsideReason::Corrupt { ref detail } if !detail.is_empty()));
}

#[tokio::test]
async fn a_truncated_cache_is_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    filled_cache(&path).await;
    let mut original = std::fs::read(&path).unwrap();
    original.truncate(original.len() * 2 / 5);
    std::fs::write(&path, &original).unwrap();

    let reason = assert_set_aside(&path, &original, "corrupt").await;
    assert!(
        matches!(reason, SetAsideReason::Corrupt { .. }),
        "{reason:?}"
    );
}

#[tokio::test]
async fn the_write_ahead_log_moves_with_the_damaged_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let original = noise(8 * 1024);
    let log = noise(3 * 1024 + 7);
    std::fs::write(&path, &original).unwrap();
    std::fs::write(common::sidecar(&path, "-wal"), &log).unwrap();

    let store = Store::open(&path).await.unwrap();
    let set_aside = store.set_aside().cloned().unwrap();
    assert_eq!(std::fs::read(&set_aside.path).unwrap(), original);
    assert_eq!(
        std::fs::read(common::sidecar(&set_aside.path, "-wal")).unwrap(),
        log
    );
    store.upsert_document(&document(HASH, 1)).await.unwrap();
    store.close().await;
}

#[tokio::test]
async fn a_cache_with_a_migration_from_a_newer_deepread_is_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    filled_cache(&path).await;
    let future = schema_version() + 1;
    let mut conn = raw_connection(&path).await;
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (?, 'from a newer DeepRead', 1, x'00', 0)",
    )
    .bind(future)
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    let original = std::fs::read(&path).unwrap();

    let reason = assert_set_aside(&path, &original, "newer").await;
    assert_eq!(
        reason,
        SetAsideReason::Newer {
            found: future,
            known: schema_version()
        }
    );
}

#[tokio::test]
async fn a_cache_with_a_newer_version_marker_is_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    filled_cache(&path).await;
    let mut conn = raw_connection(&path).await;
    sqlx::query("PRAGMA user_version = 99")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    let original = std::fs::read(&path).unwrap();

    let reason = assert_set_aside(&path, &original, "newer").await;
    assert_eq!(
        reason,
        SetAsideReason::Newer {
            found: 99,
            known: schema_version()
        }
    );
}

#[tokio::test]
async fn another_programs_database_is_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut conn =
        sqlx::SqliteConnection::connect(&format!("sqlite://{}?mode=rwc", path.display()))
            .await
            .unwrap();
    sqlx::query("CREATE TABLE notes (body TEXT)")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    let original = std::fs::read(&path).unwrap();

    let reason = assert_set_aside(&path, &original, "foreign").await;
    assert_eq!(reason, SetAsideReason::Foreign);
}

#[tokio::test]
async fn a_sound_cache_and_an_empty_file_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    filled_cache(&path).await;
    let store = Store::open(&path).await.unwrap();
    assert!(store.set_aside().is_none());
    assert_eq!(store.pages(HASH, FINGERPRINT).await.unwrap().len(), 40);
    store.close().await;

    let empty = dir.path().join("empty.sqlite3");
    std::fs::write(&empty, b"").unwrap();
    let store = Store::open(&empty).await.unwrap();
    assert!(store.set_aside().is_none());
    store.upsert_document(&document(HASH, 1)).await.unwrap();
    store.close().await;
    for folder in [dir.path(), path.parent().unwrap()] {
        for entry in std::fs::read_dir(folder).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(!name.contains(".sqlite3."), "{name} was set aside");
        }
    }
}

#[tokio::test]
async fn setting_aside_twice_keeps_both_old_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let first = noise(4096);
    std::fs::write(&path, &first).unwrap();
    let store = Store::open(&path).await.unwrap();
    let first_aside = store.set_aside().cloned().unwrap();
    store.close().await;

    let second = noise(8192);
    std::fs::write(&path, &second).unwrap();
    let store = Store::open(&path).await.unwrap();
    let second_aside = store.set_aside().cloned().unwrap();
    assert_ne!(first_aside.path, second_aside.path);
    assert_eq!(std::fs::read(&first_aside.path).unwrap(), first);
    assert_eq!(std::fs::read(&second_aside.path).unwrap(), second);
    store.close().await;
}
