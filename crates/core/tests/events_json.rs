//! The JSON the TypeScript side receives: a `type` tag and camelCase fields (architecture.md).

use deepread_core::{Block, BoxNorm, LoopReason, PageEvent, PageStats};
use serde_json::json;

#[test]
fn block_events_serialise_with_a_type_tag_and_camel_case_fields() {
    let event = PageEvent::BlockOpened {
        page: 2,
        block_id: 5,
        label: "title".into(),
        boxes: vec![BoxNorm::from_model(60, 163, 597, 265)],
        warning: None,
    };
    assert_eq!(
        serde_json::to_value(&event).unwrap(),
        json!({"type": "blockOpened", "page": 2, "blockId": 5, "label": "title",
               "boxes": [{"x1": 60, "y1": 163, "x2": 597, "y2": 265}], "warning": null})
    );
}

#[test]
fn done_and_looped_events_carry_the_page_and_round_trip() {
    let block = Block {
        id: 0,
        label: "text".into(),
        boxes: vec![],
        markdown: "x".into(),
        warning: Some("unclosed <|det|>".into()),
    };
    let done = PageEvent::Done {
        page: 0,
        markdown: "x".into(),
        blocks: vec![block.clone()],
        stats: PageStats {
            prompt_tokens: 10,
            generated_tokens: 2,
            vision_ms: 1,
            prefill_ms: 2,
            decode_ms: 3,
            tokens_per_s: 4.5,
            recognizer: "deepseek-ocr-2".into(),
        },
    };
    let value = serde_json::to_value(&done).unwrap();
    assert_eq!(value["type"], "done");
    assert_eq!(value["stats"]["tokensPerS"], 4.5);
    assert_eq!(value["stats"]["promptTokens"], 10);
    let back: PageEvent = serde_json::from_value(value).unwrap();
    assert_eq!(back, done);

    let PageEvent::Done { stats, .. } = &done else {
        unreachable!()
    };
    let looped = PageEvent::Looped {
        page: 3,
        markdown: String::new(),
        blocks: vec![block],
        reason: LoopReason::RepeatedBlockText { count: 4 },
        stats: stats.clone(),
    };
    let value = serde_json::to_value(&looped).unwrap();
    assert_eq!(
        value["reason"],
        json!({"kind": "repeatedBlockText", "count": 4})
    );
    assert_eq!(value["stats"]["generatedTokens"], 2);
    assert_eq!(looped.page(), Some(3));
}

#[test]
fn fewer_pages_at_once_is_an_event_of_the_reading_not_of_a_page() {
    let event = PageEvent::FewerPagesAtOnce { pages_at_once: 12 };
    assert_eq!(
        serde_json::to_value(&event).unwrap(),
        json!({"type": "fewerPagesAtOnce", "pagesAtOnce": 12})
    );
    assert_eq!(event.page(), None);
}

#[test]
fn boxes_from_the_model_are_clamped_and_ordered() {
    assert_eq!(
        BoxNorm::from_model(1200, -5, 465, 302),
        BoxNorm {
            x1: 465,
            y1: 0,
            x2: 999,
            y2: 302
        }
    );
}
