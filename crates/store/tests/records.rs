//! Documents and pages written to a real cache file and read back.

mod common;

use common::{cache_path, document, page, FINGERPRINT, HASH};
use deepread_store::{PageStatus, Store, StoreError};
use serde_json::json;

#[tokio::test]
async fn a_document_survives_closing_and_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    let store = Store::open(&path).await.unwrap();
    let record = document(HASH, 1_000);
    store.upsert_document(&record).await.unwrap();
    store.close().await;

    let store = Store::open(&path).await.unwrap();
    assert!(store.set_aside().is_none());
    assert_eq!(store.document(HASH).await.unwrap(), Some(record));
    assert_eq!(store.document("unknown").await.unwrap(), None);
}

#[tokio::test]
async fn upserting_again_moves_the_document_and_keeps_its_first_opening() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&cache_path(dir.path())).await.unwrap();
    store.upsert_document(&document(HASH, 1_000)).await.unwrap();
    let mut moved = document(HASH, 5_000);
    moved.path = "/elsewhere/renamed.pdf".into();
    moved.title = None;
    store.upsert_document(&moved).await.unwrap();

    let found = store.document(HASH).await.unwrap().unwrap();
    assert_eq!(found.path, moved.path);
    assert_eq!(found.title, None);
    assert_eq!(found.first_opened_at_ms, 1_000);
    assert_eq!(found.last_opened_at_ms, 5_000);
}

#[tokio::test]
async fn recent_documents_come_newest_first_and_touching_moves_one_up() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&cache_path(dir.path())).await.unwrap();
    for (hash, at) in [("aaa", 3_000), ("bbb", 1_000), ("ccc", 2_000)] {
        store.upsert_document(&document(hash, at)).await.unwrap();
    }
    let hashes = |docs: Vec<deepread_store::DocumentRecord>| {
        docs.into_iter().map(|d| d.hash).collect::<Vec<_>>()
    };
    assert_eq!(
        hashes(store.recent_documents(10).await.unwrap()),
        ["aaa", "ccc", "bbb"]
    );
    assert_eq!(
        hashes(store.recent_documents(2).await.unwrap()),
        ["aaa", "ccc"]
    );

    store.touch_document("bbb").await.unwrap();
    assert_eq!(
        hashes(store.recent_documents(10).await.unwrap()),
        ["bbb", "aaa", "ccc"]
    );
    let touched = store.document("bbb").await.unwrap().unwrap();
    assert!(touched.last_opened_at_ms > 3_000);
    assert_eq!(touched.first_opened_at_ms, 1_000);
}

#[tokio::test]
async fn touching_an_unknown_document_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&cache_path(dir.path())).await.unwrap();
    let error = store.touch_document("nope").await.unwrap_err();
    assert!(matches!(error, StoreError::UnknownDocument { ref hash } if hash == "nope"));
}

#[tokio::test]
async fn pages_round_trip_in_page_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    let store = Store::open(&path).await.unwrap();
    store.upsert_document(&document(HASH, 1)).await.unwrap();
    let mut failed = page(HASH, 1, FINGERPRINT, 100);
    failed.status = PageStatus::Failed;
    failed.error = Some("out of GPU memory".to_string());
    failed.markdown = String::new();
    failed.stats = json!(null);
    for saved in [
        page(HASH, 2, FINGERPRINT, 5_000),
        failed.clone(),
        page(HASH, 0, FINGERPRINT, 10),
    ] {
        store.save_page(&saved).await.unwrap();
    }
    store.close().await;

    let store = Store::open(&path).await.unwrap();
    assert_eq!(
        store.page(HASH, 1, FINGERPRINT).await.unwrap(),
        Some(failed)
    );
    let all = store.pages(HASH, FINGERPRINT).await.unwrap();
    let indices: Vec<u32> = all.iter().map(|p| p.page_index).collect();
    assert_eq!(indices, [0, 1, 2]);
    assert_eq!(all[2], page(HASH, 2, FINGERPRINT, 5_000));
    assert_eq!(store.page(HASH, 7, FINGERPRINT).await.unwrap(), None);
}

#[tokio::test]
async fn saving_a_page_again_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&cache_path(dir.path())).await.unwrap();
    store.upsert_document(&document(HASH, 1)).await.unwrap();
    let mut looped = page(HASH, 0, FINGERPRINT, 10);
    looped.status = PageStatus::Looped;
    store.save_page(&looped).await.unwrap();
    let redone = page(HASH, 0, FINGERPRINT, 20);
    store.save_page(&redone).await.unwrap();
    assert_eq!(store.pages(HASH, FINGERPRINT).await.unwrap(), vec![redone]);
}

#[tokio::test]
async fn the_fingerprint_keeps_readings_apart() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&cache_path(dir.path())).await.unwrap();
    store.upsert_document(&document(HASH, 1)).await.unwrap();
    let gundam = page(HASH, 0, FINGERPRINT, 10);
    let mut text_layer = page(HASH, 0, "text-layer/v1", 30);
    text_layer.recognizer = "text layer".to_string();
    store.save_page(&gundam).await.unwrap();
    store.save_page(&text_layer).await.unwrap();

    assert_eq!(
        store.page(HASH, 0, FINGERPRINT).await.unwrap(),
        Some(gundam.clone())
    );
    assert_eq!(
        store.page(HASH, 0, "text-layer/v1").await.unwrap(),
        Some(text_layer)
    );
    assert_eq!(store.page(HASH, 0, "other").await.unwrap(), None);
    assert_eq!(store.pages(HASH, FINGERPRINT).await.unwrap(), vec![gundam]);
}

#[tokio::test]
async fn forgetting_a_page_lets_it_be_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&cache_path(dir.path())).await.unwrap();
    store.upsert_document(&document(HASH, 1)).await.unwrap();
    let mut failed = page(HASH, 3, FINGERPRINT, 10);
    failed.status = PageStatus::Failed;
    store.save_page(&failed).await.unwrap();
    store
        .save_page(&page(HASH, 3, "text-layer/v1", 10))
        .await
        .unwrap();

    assert!(store.forget_page(HASH, 3, FINGERPRINT).await.unwrap());
    assert!(!store.forget_page(HASH, 3, FINGERPRINT).await.unwrap());
    assert_eq!(store.page(HASH, 3, FINGERPRINT).await.unwrap(), None);
    // Only that reading goes; the other recognizer's result stays.
    assert!(store
        .page(HASH, 3, "text-layer/v1")
        .await
        .unwrap()
        .is_some());

    let retried = page(HASH, 3, FINGERPRINT, 10);
    store.save_page(&retried).await.unwrap();
    assert_eq!(
        store.page(HASH, 3, FINGERPRINT).await.unwrap(),
        Some(retried)
    );
}

#[tokio::test]
async fn forgetting_a_document_forgets_its_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    let store = Store::open(&path).await.unwrap();
    store.upsert_document(&document(HASH, 1)).await.unwrap();
    store.upsert_document(&document("kept", 2)).await.unwrap();
    store
        .save_page(&page(HASH, 0, FINGERPRINT, 10))
        .await
        .unwrap();
    store
        .save_page(&page("kept", 0, FINGERPRINT, 10))
        .await
        .unwrap();

    assert!(store.forget_document(HASH).await.unwrap());
    assert!(!store.forget_document(HASH).await.unwrap());
    assert_eq!(store.document(HASH).await.unwrap(), None);
    assert!(store.pages(HASH, FINGERPRINT).await.unwrap().is_empty());
    assert_eq!(store.pages("kept", FINGERPRINT).await.unwrap().len(), 1);

    let mut conn = common::raw_connection(&path).await;
    let orphans: i64 =
        sqlx::query_scalar("SELECT count(*) FROM page_results WHERE document_hash = ?")
            .bind(HASH)
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(orphans, 0);
}

#[tokio::test]
async fn a_page_of_an_unknown_document_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&cache_path(dir.path())).await.unwrap();
    let error = store
        .save_page(&page("ghost", 0, FINGERPRINT, 10))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::UnknownDocument { ref hash } if hash == "ghost"));
}

#[tokio::test]
async fn the_cache_is_in_wal_mode_with_the_version_marker() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    let store = Store::open(&path).await.unwrap();
    let mut conn = common::raw_connection(&path).await;
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let marker: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    assert_eq!(marker, deepread_store::schema_version());
    assert!(marker >= 1);
    drop(conn);
    store.close().await;
}

#[tokio::test]
async fn a_damaged_row_is_reported_not_returned() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    let store = Store::open(&path).await.unwrap();
    store.upsert_document(&document(HASH, 1)).await.unwrap();
    store
        .save_page(&page(HASH, 0, FINGERPRINT, 10))
        .await
        .unwrap();
    let mut conn = common::raw_connection(&path).await;
    sqlx::query("UPDATE page_results SET blocks_json = '[{\"id\":' WHERE page_index = 0")
        .execute(&mut conn)
        .await
        .unwrap();

    let error = store.page(HASH, 0, FINGERPRINT).await.unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::DamagedRow {
                column: "blocks",
                ..
            }
        ),
        "{error}"
    );
    assert!(store.pages(HASH, FINGERPRINT).await.is_err());
    // Forgetting the page is the way out, and works.
    assert!(store.forget_page(HASH, 0, FINGERPRINT).await.unwrap());
    assert!(store.pages(HASH, FINGERPRINT).await.unwrap().is_empty());
}

#[cfg(unix)]
#[tokio::test]
async fn a_path_that_is_not_utf8_is_refused_with_its_name() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&cache_path(dir.path())).await.unwrap();
    let mut record = document(HASH, 1);
    record.path = std::ffi::OsStr::from_bytes(b"/tmp/caf\xe9.pdf").into();
    let error = store.upsert_document(&record).await.unwrap_err();
    assert!(matches!(error, StoreError::PathNotUtf8(ref path) if *path == record.path));
    assert_eq!(store.document(HASH).await.unwrap(), None);
}
