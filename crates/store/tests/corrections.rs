//! A person's corrections in a real cache file: kept beside the readings, never lost to a re-read, gone with
//! their document, and a cache made before corrections existed gains them without losing its pages.

mod common;

use common::{cache_path, document, page, FINGERPRINT, HASH};
use deepread_store::{Correction, Store, StoreError};
use serde_json::json;
use sqlx::{Connection, SqliteConnection};

fn correction(block_id: u32, markdown: &str) -> Correction {
    Correction {
        document_hash: HASH.to_owned(),
        page_index: 3,
        block_id,
        boxes: json!([[120, 80, 880, 140]]),
        original: format!("the reading's text of block {block_id}"),
        markdown: markdown.to_owned(),
        label: None,
        edited_at_ms: 7_000 + i64::from(block_id),
    }
}

#[tokio::test]
async fn a_correction_is_kept_across_reopening_and_a_second_edit_replaces_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    let store = Store::open(&path).await.unwrap();
    store.upsert_document(&document(HASH, 1_000)).await.unwrap();
    store
        .save_correction(&correction(2, "First edit"))
        .await
        .unwrap();
    store
        .save_correction(&correction(0, "Another block"))
        .await
        .unwrap();
    store
        .save_correction(&correction(2, "Second edit"))
        .await
        .unwrap();
    store.close().await;

    let store = Store::open(&path).await.unwrap();
    let kept = store.corrections(HASH).await.unwrap();
    assert_eq!(
        kept,
        vec![correction(0, "Another block"), correction(2, "Second edit")]
    );
    assert!(store
        .corrections("another document")
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn reading_the_page_again_keeps_its_corrections_and_forgetting_one_keeps_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&cache_path(dir.path())).await.unwrap();
    store.upsert_document(&document(HASH, 1_000)).await.unwrap();
    store
        .save_page(&page(HASH, 3, FINGERPRINT, 100))
        .await
        .unwrap();
    store
        .save_correction(&correction(1, "Fixed"))
        .await
        .unwrap();
    store
        .save_correction(&correction(4, "Also fixed"))
        .await
        .unwrap();
    // A re-read drops the page's result and saves a new one.
    assert!(store.forget_page(HASH, 3, FINGERPRINT).await.unwrap());
    store
        .save_page(&page(HASH, 3, FINGERPRINT, 120))
        .await
        .unwrap();
    assert_eq!(store.corrections(HASH).await.unwrap().len(), 2);

    assert!(store.forget_correction(HASH, 3, 1).await.unwrap());
    assert!(!store.forget_correction(HASH, 3, 1).await.unwrap());
    assert_eq!(
        store.corrections(HASH).await.unwrap(),
        vec![correction(4, "Also fixed")]
    );
}

#[tokio::test]
async fn corrections_go_with_their_document_and_need_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&cache_path(dir.path())).await.unwrap();
    assert!(matches!(
        store.save_correction(&correction(0, "x")).await,
        Err(StoreError::UnknownDocument { .. })
    ));
    store.upsert_document(&document(HASH, 1_000)).await.unwrap();
    store.save_correction(&correction(0, "x")).await.unwrap();
    assert!(store.forget_document(HASH).await.unwrap());
    assert!(store.corrections(HASH).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_cache_from_before_corrections_gains_them_and_keeps_its_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache_path(dir.path());
    let store = Store::open(&path).await.unwrap();
    store.upsert_document(&document(HASH, 1_000)).await.unwrap();
    store
        .save_page(&page(HASH, 3, FINGERPRINT, 100))
        .await
        .unwrap();
    store.close().await;
    // Undo the corrections migrations, as a cache written by the release before them would be.
    let mut conn = SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    for statement in [
        "DROP TABLE corrections",
        "DELETE FROM _sqlx_migrations WHERE version >= 2",
        "PRAGMA user_version = 1",
    ] {
        sqlx::query(statement).execute(&mut conn).await.unwrap();
    }
    conn.close().await.unwrap();

    let store = Store::open(&path).await.unwrap();
    assert!(
        store.set_aside().is_none(),
        "an older cache is upgraded, not set aside"
    );
    assert!(store.page(HASH, 3, FINGERPRINT).await.unwrap().is_some());
    store
        .save_correction(&correction(0, "Fixed"))
        .await
        .unwrap();
    assert_eq!(store.corrections(HASH).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_block_a_person_added_keeps_its_label() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&cache_path(dir.path())).await.unwrap();
    store.upsert_document(&document(HASH, 1_000)).await.unwrap();
    let added = Correction {
        block_id: 1_000_000,
        original: String::new(),
        label: Some("table".into()),
        ..correction(0, "| a | b |")
    };
    store.save_correction(&added).await.unwrap();
    store
        .save_correction(&correction(1, "A fix"))
        .await
        .unwrap();
    let kept = store.corrections(HASH).await.unwrap();
    assert_eq!(kept, vec![correction(1, "A fix"), added]);
}
