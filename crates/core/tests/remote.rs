//! The remote recognizer against a real HTTP server on 127.0.0.1 (tests/support: a fake
//! OpenAI-compatible server that can misbehave), through the real pipeline, a real PDF and a real
//! cache file: what it sends, what it streams back, and every way a server can fail a page.

mod common;
#[path = "remote/probe.rs"]
mod probe;
mod support;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use deepread_core::pipeline::{read_document, Cache, CancelToken, ReadOptions};
use deepread_core::recognizer::remote::{Timeouts, MAX_ATTEMPTS};
use deepread_core::recognizer::{
    ReadingMode, Recognizer, RemoteError, RemoteRecognizer, RemoteSettings, RENDER_DPI,
};
use deepread_core::PageEvent;
use deepread_pdf::{bind_pdfium, Document, RenderSize};
use deepread_store::Store;
use image::RgbImage;
use serde_json::json;
use support::{closed_port, pieces, FakeServer, Reply, Wire};

const KOREAN_4_PAGES: &str = "pdfs/non_english/docling__normal_4pages_korean.pdf";
const MODEL: &str = "deepseek-ai/DeepSeek-OCR-2";
const LAYOUT_PROMPT: &str = "<|grounding|>Convert the document to markdown.";
const STEP: Duration = Duration::from_millis(15);

/// A document, its pages as the pipeline renders them for the model, and a cache file of its own.
struct Fixture {
    _dir: tempfile::TempDir,
    _runtime: tokio::runtime::Runtime,
    cache: Cache,
    doc: Arc<Document>,
    pages: Vec<RgbImage>,
}

fn fixture() -> Fixture {
    let pdfium = std::env::var_os("DEEPREAD_PDFIUM")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.deps/pdfium/libpdfium.so")
        });
    bind_pdfium(Some(&pdfium)).unwrap();
    let doc = Document::open(&common::fixtures_dir().join(KOREAN_4_PAGES), None).unwrap();
    let pages = (0..doc.page_count())
        .map(|page| doc.render_page(page, RenderSize::Dpi(RENDER_DPI)).unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = runtime
        .block_on(Store::open(&dir.path().join("cache.sqlite3")))
        .unwrap();
    let cache = Cache::new(store, runtime.handle().clone());
    Fixture {
        _dir: dir,
        _runtime: runtime,
        cache,
        doc: Arc::new(doc),
        pages,
    }
}

/// What the model writes for `page`: grounding tags, Markdown, and letters of more than one byte.
fn page_text(page: usize) -> String {
    format!(
        "<|ref|>title<|/ref|><|det|>[[60, 40, 940, 90]]<|/det|>\n# Page {page}: 제목\n\n\
         <|ref|>text<|/ref|><|det|>[[60, 120, 940, 400]]<|/det|>\nBody of page {page}, $x^2$ — 한국어.\n\n"
    )
}

/// The page's text streamed three characters a chunk, as a server streams tokens.
fn good_reply(page: usize) -> Reply {
    Reply::text(&pieces(&page_text(page), 3), STEP)
}

fn settings(url: &str) -> RemoteSettings {
    RemoteSettings {
        concurrency: 4,
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            idle: Duration::from_secs(5),
        },
        ..RemoteSettings::new(url, MODEL)
    }
}

fn remote(settings: RemoteSettings) -> RemoteRecognizer {
    RemoteRecognizer::new(settings).unwrap()
}

fn read(fixture: &Fixture, recognizer: &dyn Recognizer, cancel: &CancelToken) -> Vec<PageEvent> {
    let mut events = Vec::new();
    read_document(
        &fixture.doc,
        recognizer,
        Some(&fixture.cache),
        &ReadOptions::default(),
        cancel,
        &mut |e| events.push(e),
    );
    events
}

/// The page's text as it was streamed, delta by delta.
fn streamed(events: &[PageEvent], page: usize) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            PageEvent::Delta { page: p, text, .. } if *p == page => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// How the page ended: its last event.
fn last(events: &[PageEvent], page: usize) -> &PageEvent {
    events
        .iter()
        .rev()
        .find(|e| e.page() == Some(page))
        .expect("an event for the page")
}

fn failure(events: &[PageEvent], page: usize) -> String {
    match last(events, page) {
        PageEvent::Failed { error, .. } => error.clone(),
        other => panic!("page {page} did not fail: {other:?}"),
    }
}

fn assert_done(events: &[PageEvent], page: usize) {
    assert!(
        matches!(last(events, page), PageEvent::Done { .. }),
        "page {page}: {:?}",
        last(events, page)
    );
}

fn cached(fixture: &Fixture, recognizer: &dyn Recognizer, page: usize) -> bool {
    let hash = fixture.doc.content_hash();
    let found = fixture.cache.lookup(hash, page, recognizer.fingerprint());
    found.unwrap().is_some()
}

#[test]
fn pages_stream_in_parallel_with_their_text_and_grounding_tags_intact() {
    let fixture = fixture();
    let server = FakeServer::start(fixture.pages.clone(), |seen| good_reply(seen.page.unwrap()));
    let recognizer = remote(settings(&server.url));
    let events = read(&fixture, &recognizer, &CancelToken::new());

    assert!(server.rejected().is_empty(), "{:?}", server.rejected());
    assert!(server.most_at_once() >= 2, "{}", server.most_at_once());
    for page in 0..fixture.pages.len() {
        assert_eq!(streamed(&events, page), page_text(page), "page {page}");
        let PageEvent::Done { blocks, stats, .. } = last(&events, page) else {
            panic!("page {page}: {:?}", last(&events, page));
        };
        let labels: Vec<&str> = blocks.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(labels, ["title", "text"], "page {page}");
        assert_eq!(blocks[0].markdown, format!("# Page {page}: 제목"));
        assert_eq!(blocks[0].boxes.len(), 1);
        assert_eq!(stats.prompt_tokens, 1000, "the server's usage");
        assert_eq!(stats.generated_tokens, pieces(&page_text(page), 3).len());
        assert!(cached(&fixture, &recognizer, page), "page {page} cached");
    }
    let seen = server.seen();
    assert_eq!(seen.len(), fixture.pages.len(), "one request a page");
    for request in &seen {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.prompt, LAYOUT_PROMPT);
        assert_eq!(request.authorization, None, "no key, no header");
        let body = &request.body;
        assert_eq!(body["model"], MODEL);
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["temperature"], 0);
        assert_eq!(body["max_tokens"], 8192);
        assert_eq!(body["skip_special_tokens"], false);
        assert_eq!(
            body["vllm_xargs"],
            json!({"ngram_size": 20, "window_size": 90, "whitelist_token_ids": [128821, 128822]})
        );
    }
}

#[test]
fn the_plain_mode_sends_its_own_prompt_and_the_api_key() {
    let fixture = fixture();
    let server = FakeServer::start(fixture.pages.clone(), |_| {
        Reply::text(&["Just ", "text."], STEP)
    });
    let recognizer = remote(RemoteSettings {
        mode: ReadingMode::Plain,
        api_key: Some("sk-test-key".into()),
        ..settings(&server.url)
    });
    let events = read(&fixture, &recognizer, &CancelToken::new());
    assert_done(&events, 0);
    let seen = server.seen();
    assert!(!seen.is_empty());
    for request in seen {
        assert_eq!(request.prompt, "Free OCR.");
        assert_eq!(request.authorization.as_deref(), Some("Bearer sk-test-key"));
    }
}

#[test]
fn a_refused_connection_fails_every_page_naming_the_server() {
    let fixture = fixture();
    let url = format!("http://127.0.0.1:{}/v1", closed_port());
    let recognizer = remote(settings(&url));
    let events = read(&fixture, &recognizer, &CancelToken::new());
    for page in 0..fixture.pages.len() {
        let error = failure(&events, page);
        assert!(error.contains(&url), "{error}");
        assert!(error.contains("refused the connection"), "{error}");
        assert!(!cached(&fixture, &recognizer, page));
    }
}

#[test]
fn a_server_that_dies_mid_reply_fails_that_page_only_and_it_is_read_again_next_time() {
    let fixture = fixture();
    let healthy = Arc::new(AtomicBool::new(false));
    let well = Arc::clone(&healthy);
    let server = FakeServer::start(fixture.pages.clone(), move |seen| match seen.page {
        Some(1) if !well.load(Ordering::SeqCst) => Reply::Stream {
            wire: vec![Wire::Text("<|ref|>title<|/ref|>".into()), Wire::Die],
            pause: STEP,
        },
        page => good_reply(page.unwrap()),
    });
    let recognizer = remote(settings(&server.url));
    let events = read(&fixture, &recognizer, &CancelToken::new());
    let error = failure(&events, 1);
    assert!(error.contains(&server.url), "{error}");
    assert!(error.contains("broke off the reply"), "{error}");
    for page in [0, 2, 3] {
        assert_done(&events, page);
    }
    assert!(
        !cached(&fixture, &recognizer, 1),
        "a failed page is no answer"
    );
    assert!(cached(&fixture, &recognizer, 0));

    // The server is well again: the failed page alone is read, the others come from the cache.
    healthy.store(true, Ordering::SeqCst);
    let events = read(&fixture, &recognizer, &CancelToken::new());
    assert!(started(&events, 1), "the failed page is read again");
    assert_eq!(streamed(&events, 1), page_text(1));
    for page in [0, 2, 3] {
        assert!(!started(&events, page), "page {page} came from the cache");
        assert_done(&events, page);
    }
    assert_eq!(server.seen().len(), 4 + 1);
}

fn started(events: &[PageEvent], page: usize) -> bool {
    events
        .iter()
        .any(|e| matches!(e, PageEvent::Started { page: p } if *p == page))
}

#[test]
fn a_busy_server_is_waited_for_as_it_asks_and_the_page_read_once() {
    let fixture = fixture();
    let server = FakeServer::start(fixture.pages.clone(), |seen| {
        match (seen.page, seen.attempt) {
            (Some(0), 1) => Reply::Status {
                status: 429,
                headers: vec![("Retry-After".into(), "1".into())],
                body: json!({"error": {"message": "too many requests"}}).to_string(),
            },
            (page, _) => good_reply(page.unwrap()),
        }
    });
    let recognizer = remote(settings(&server.url));
    let events = read(&fixture, &recognizer, &CancelToken::new());
    assert_done(&events, 0);
    assert_eq!(streamed(&events, 0), page_text(0), "no text twice");
    let tries: Vec<Instant> = server
        .seen()
        .iter()
        .filter(|s| s.page == Some(0))
        .map(|s| s.at)
        .collect();
    assert_eq!(tries.len(), 2);
    let waited = tries[1] - tries[0];
    assert!(waited >= Duration::from_secs(1), "waited {waited:?}");
    assert!(waited < Duration::from_secs(5), "waited {waited:?}");
}

#[test]
fn a_server_busy_every_time_fails_the_page_after_the_attempts() {
    let fixture = fixture();
    let server = FakeServer::start(fixture.pages.clone(), |seen| match seen.page {
        Some(2) => Reply::Status {
            status: 503,
            headers: vec![("Retry-After".into(), "0".into())],
            body: "overloaded".into(),
        },
        page => good_reply(page.unwrap()),
    });
    let recognizer = remote(settings(&server.url));
    let events = read(&fixture, &recognizer, &CancelToken::new());
    let error = failure(&events, 2);
    assert!(error.contains(&server.url), "{error}");
    assert!(
        error.contains(&format!("busy (503) after {MAX_ATTEMPTS} attempts")),
        "{error}"
    );
    let tries = server.seen().iter().filter(|s| s.page == Some(2)).count();
    assert_eq!(tries, MAX_ATTEMPTS);
    for page in [0, 1, 3] {
        assert_done(&events, page);
    }
}

#[test]
fn an_error_status_fails_the_page_with_the_servers_own_words() {
    let fixture = fixture();
    let server = FakeServer::start(fixture.pages.clone(), |seen| match seen.page {
        Some(0) => Reply::status(
            401,
            r#"{"error":{"message":"Invalid API key","type":"invalid_request_error"}}"#,
        ),
        Some(1) => Reply::status(
            404,
            r#"{"object":"error","message":"The model `deepseek-ai/DeepSeek-OCR-2` does not exist.","code":404}"#,
        ),
        Some(2) => Reply::status(400, "  max_tokens is too large\n"),
        page => good_reply(page.unwrap()),
    });
    let recognizer = remote(RemoteSettings {
        api_key: Some("sk-wrong".into()),
        ..settings(&server.url)
    });
    let events = read(&fixture, &recognizer, &CancelToken::new());
    let expected = [
        (0, "answered 401", "Invalid API key"),
        (
            1,
            "answered 404",
            "The model `deepseek-ai/DeepSeek-OCR-2` does not exist.",
        ),
        (2, "answered 400", ": max_tokens is too large"),
    ];
    for (page, status, words) in expected {
        let error = failure(&events, page);
        assert!(error.contains(&server.url), "{error}");
        assert!(error.contains(status) && error.contains(words), "{error}");
        assert!(
            !error.contains("sk-wrong"),
            "the key is never shown: {error}"
        );
    }
    assert_done(&events, 3);
}

#[test]
fn a_server_that_goes_quiet_times_out() {
    let fixture = fixture();
    let server = FakeServer::start(fixture.pages.clone(), |seen| match seen.page {
        Some(0) => Reply::Stream {
            wire: vec![
                Wire::Text("<|ref|>text<|/ref|>".into()),
                Wire::Stall(Duration::from_secs(10)),
            ],
            pause: STEP,
        },
        page => good_reply(page.unwrap()),
    });
    let recognizer = remote(RemoteSettings {
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            idle: Duration::from_millis(500),
        },
        ..settings(&server.url)
    });
    let begun = Instant::now();
    let events = read(&fixture, &recognizer, &CancelToken::new());
    let error = failure(&events, 0);
    assert!(error.contains(&server.url), "{error}");
    assert!(
        error.contains("did not send anything within 0.5 s"),
        "{error}"
    );
    assert!(
        begun.elapsed() < Duration::from_secs(8),
        "{:?}",
        begun.elapsed()
    );
    for page in 1..4 {
        assert_done(&events, page);
    }
}

#[test]
fn a_stream_of_what_is_not_chat_completion_chunks_fails_the_page() {
    let fixture = fixture();
    let server = FakeServer::start(fixture.pages.clone(), |seen| {
        let bad = match seen.page.unwrap() {
            0 => "this is not json",
            1 => r#"{"id":"x","object":"chat.completion.chunk"}"#,
            2 => r#"{"error":{"message":"the engine died","code":500}}"#,
            // A server that ignored `stream: true`.
            _ => return Reply::status(200, r##"{"choices":[{"message":{"content":"# A"}}]}"##),
        };
        Reply::Stream {
            wire: vec![Wire::Text("# A".into()), Wire::Raw(bad.into()), Wire::Done],
            pause: STEP,
        }
    });
    let recognizer = remote(settings(&server.url));
    let events = read(&fixture, &recognizer, &CancelToken::new());
    let expected = [
        (
            0,
            "not a chat-completions stream: a chunk that is not chat-completion JSON",
        ),
        (1, "not a chat-completions stream: a chunk without choices"),
        (
            2,
            "reported an error while writing the page: the engine died",
        ),
        (3, "the reply is application/json, not text/event-stream"),
    ];
    for (page, words) in expected {
        let error = failure(&events, page);
        assert!(
            error.contains(&server.url) && error.contains(words),
            "{error}"
        );
        assert!(!cached(&fixture, &recognizer, page));
    }
}

#[test]
fn a_reply_longer_than_max_tokens_can_hold_fails_the_page() {
    let fixture = fixture();
    let server = FakeServer::start(fixture.pages.clone(), |seen| match seen.page {
        Some(0) => {
            let many = vec!["0123456789"; 200];
            Reply::text(&many, Duration::ZERO)
        }
        _ => Reply::text(&["short"], STEP),
    });
    // 16 tokens: at most 512 bytes of text.
    let recognizer = remote(RemoteSettings {
        max_tokens: 16,
        ..settings(&server.url)
    });
    let events = read(&fixture, &recognizer, &CancelToken::new());
    let error = failure(&events, 0);
    assert!(error.contains(&server.url), "{error}");
    assert!(error.contains("more than 512 bytes of text"), "{error}");
    assert!(
        streamed(&events, 0).len() <= 512,
        "no more than the limit reached the pipeline"
    );
    assert_eq!(server.seen()[0].body["max_tokens"], 16);
    assert_done(&events, 1);
}

#[test]
fn a_page_the_user_stops_closes_its_connection_at_once_and_the_others_go_on() {
    let fixture = fixture();
    let server = FakeServer::start(fixture.pages.clone(), |seen| match seen.page {
        Some(0) => Reply::Endless {
            text: "more ".into(),
            pause: Duration::from_millis(5),
        },
        // Long enough that the reading is still on when page 0 is stopped.
        page => Reply::text(
            &pieces(&page_text(page.unwrap()), 3),
            Duration::from_millis(40),
        ),
    });
    let recognizer = remote(settings(&server.url));
    let cancel = CancelToken::new();
    let mut events = Vec::new();
    let mut stopped_at = None;
    read_document(
        &fixture.doc,
        &recognizer,
        Some(&fixture.cache),
        &ReadOptions::default(),
        &cancel,
        &mut |e| {
            // The Stop button on page 0 once it has written a little.
            if matches!(e, PageEvent::Delta { page: 0, .. }) && stopped_at.is_none() {
                cancel.cancel_page(0);
                stopped_at = Some(Instant::now());
            }
            events.push(e);
        },
    );
    let read_ended = Instant::now();
    let closed = server.closed_at(Some(0), Duration::from_secs(5));
    let (stopped, closed) = (stopped_at.expect("page 0 wrote"), closed.expect("closed"));
    assert!(
        closed < read_ended,
        "closed while the other pages were still read"
    );
    assert!(
        closed - stopped < Duration::from_secs(1),
        "{:?}",
        closed - stopped
    );
    assert_eq!(failure(&events, 0), "stopped");
    assert!(!cached(&fixture, &recognizer, 0));
    for page in 1..4 {
        assert_done(&events, page);
    }
}

#[test]
fn a_looping_page_is_stopped_by_the_sentinel_and_its_connection_closed() {
    let fixture = fixture();
    let server = FakeServer::start(fixture.pages.clone(), |seen| match seen.page {
        Some(3) => Reply::Endless {
            text: "<|ref|>text<|/ref|><|det|>[[100, 200, 300, 400]]<|/det|>\nThe same line.\n\n"
                .into(),
            pause: Duration::from_millis(2),
        },
        page => good_reply(page.unwrap()),
    });
    let recognizer = remote(settings(&server.url));
    let events = read(&fixture, &recognizer, &CancelToken::new());
    assert!(
        matches!(last(&events, 3), PageEvent::Looped { .. }),
        "{:?}",
        last(&events, 3)
    );
    assert!(server.saw_closed(Some(3), Duration::from_secs(5)));
    for page in 0..3 {
        assert_done(&events, page);
    }
}

#[test]
fn a_stopped_reading_ends_every_page_in_flight_at_once() {
    let fixture = fixture();
    let server = FakeServer::start(fixture.pages.clone(), |_| Reply::Endless {
        text: "more ".into(),
        pause: Duration::from_millis(5),
    });
    let recognizer = remote(settings(&server.url));
    let cancel = CancelToken::new();
    let mut events = Vec::new();
    let mut cancelled_at = None;
    read_document(
        &fixture.doc,
        &recognizer,
        Some(&fixture.cache),
        &ReadOptions::default(),
        &cancel,
        &mut |e| {
            if matches!(e, PageEvent::Delta { .. }) && cancelled_at.is_none() {
                cancel.cancel();
                cancelled_at = Some(Instant::now());
            }
            events.push(e);
        },
    );
    let took = cancelled_at.expect("text came").elapsed();
    assert!(
        took < Duration::from_secs(2),
        "the reading ended {took:?} after the stop"
    );
    for page in 0..fixture.pages.len() {
        if started(&events, page) {
            assert_eq!(failure(&events, page), "stopped");
        }
    }
    // Pages whose request had gone out; the others never connected.
    let sent: Vec<usize> = server.seen().iter().filter_map(|s| s.page).collect();
    assert!(!sent.is_empty());
    for page in sent {
        assert!(
            server.saw_closed(Some(page), Duration::from_secs(5)),
            "page {page}"
        );
    }
}

#[test]
fn plain_http_to_another_machine_is_refused_unless_allowed() {
    let refused = RemoteRecognizer::new(RemoteSettings::new("http://192.168.1.20:8000/v1", MODEL));
    let error = refused.err().expect("refused");
    assert!(matches!(error, RemoteError::PlainHttp { .. }), "{error}");
    assert!(
        error.to_string().contains("http://192.168.1.20:8000/v1"),
        "{error}"
    );
    assert!(error.to_string().contains("unencrypted"), "{error}");

    let allowed = RemoteRecognizer::new(RemoteSettings {
        allow_plain_http: true,
        ..RemoteSettings::new("http://192.168.1.20:8000/v1", MODEL)
    });
    assert!(allowed.is_ok());
    assert!(
        RemoteRecognizer::new(RemoteSettings::new("https://gpu.example.com/v1", MODEL)).is_ok()
    );
}
