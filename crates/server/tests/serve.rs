//! `deepread serve`'s library end to end: a real HTTP server on 127.0.0.1, the real engine reading a tiny
//! DeepSeek-OCR-2 with random weights and the real vocabulary, and the in-process engine as the oracle of
//! every text the server writes.

mod support;

use deepread_core::recognizer::ReadingMode;
use deepread_server::ServeOptions;
use serde_json::json;
use support::*;

fn page_image(index: usize) -> (Vec<u8>, image::RgbImage) {
    let bytes = std::fs::read(page_jpeg(index)).expect("the fixture reads");
    let image = image::load_from_memory(&bytes)
        .expect("the fixture decodes")
        .to_rgb8();
    (bytes, image)
}

#[test]
fn a_streamed_page_is_the_text_the_in_process_engine_writes() {
    let server = TestServer::start(ServeOptions::default());
    let (jpeg, image) = page_image(0);
    let max_tokens = 24;
    let body = chat_body(&data_url("image/jpeg", &jpeg), LAYOUT, max_tokens, true);

    let answer = post_json(&server.url("/v1/chat/completions"), &body, None);

    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.header("content-type"), Some("text/event-stream"));
    let streamed = read_events(&answer.body);
    let expected = expected(&image, ReadingMode::Layout, max_tokens);
    assert!(!expected.text.is_empty());
    assert_eq!(streamed.text, expected.text);
    assert_eq!(
        streamed.chunks[0]["choices"][0]["delta"]["role"],
        "assistant"
    );
    assert_eq!(streamed.chunks[0]["object"], "chat.completion.chunk");
    assert!(
        streamed.chunks.len() > 3,
        "the text came in pieces, as generated"
    );
    let reason = if expected.tokens < max_tokens {
        "stop"
    } else {
        "length"
    };
    assert_eq!(streamed.finish_reason.as_deref(), Some(reason));
    let usage = streamed.usage.expect("the usage chunk asked for");
    assert_eq!(usage["completion_tokens"], expected.tokens);
    assert_eq!(usage["prompt_tokens"], expected.prompt_tokens);
    assert_eq!(
        usage["total_tokens"],
        expected.tokens + expected.prompt_tokens
    );
    assert!(streamed.done, "the stream ends with [DONE]");
    assert_eq!(streamed.error, None);
}

#[test]
fn a_whole_reply_in_plain_mode_is_the_in_process_text() {
    let server = TestServer::start(ServeOptions::default());
    let (_, image) = page_image(1);
    let max_tokens = 16;
    // SGLang's example writes the image placeholder in the text: it is read as the same prompt.
    let prompt = "<image>\nFree OCR.";
    let body = chat_body(
        &data_url("image/png", &png(&image)),
        prompt,
        max_tokens,
        false,
    );

    let answer = post_json(&server.url("/v1/chat/completions"), &body, None);

    assert_eq!(answer.status, 200, "{}", answer.body);
    let reply = answer.json();
    let expected = expected(&image, ReadingMode::Plain, max_tokens);
    assert_eq!(reply["object"], "chat.completion");
    assert_eq!(reply["model"], "deepseek-ai/DeepSeek-OCR-2");
    assert_eq!(reply["choices"][0]["message"]["role"], "assistant");
    assert_eq!(
        reply["choices"][0]["message"]["content"],
        expected.text.as_str()
    );
    assert_eq!(reply["usage"]["completion_tokens"], expected.tokens);
    assert_eq!(reply["usage"]["prompt_tokens"], expected.prompt_tokens);
    let layout = support::expected(&image, ReadingMode::Layout, max_tokens);
    assert_ne!(
        layout.text, expected.text,
        "the prompt changes what the model writes"
    );
}

#[test]
fn concurrent_clients_are_read_together_each_getting_its_own_page() {
    let server = TestServer::start(ServeOptions::default());
    // On 2 cores a page's vision takes about 2 s and a token 25 ms: 160 tokens keep the first page
    // decoding while the next one joins it.
    let max_tokens = 160;
    let pages: Vec<_> = (0..4).map(page_image).collect();
    // Both modes in the one read loop.
    let mode = |index: usize| {
        if index.is_multiple_of(2) {
            ReadingMode::Layout
        } else {
            ReadingMode::Plain
        }
    };
    let url = server.url("/v1/chat/completions");

    let answers: Vec<Streamed> = std::thread::scope(|scope| {
        let clients: Vec<_> = pages
            .iter()
            .enumerate()
            .map(|(index, (jpeg, _))| {
                let prompt = if mode(index) == ReadingMode::Layout {
                    LAYOUT
                } else {
                    PLAIN
                };
                let body = chat_body(&data_url("image/jpeg", jpeg), prompt, max_tokens, true);
                let url = &url;
                scope.spawn(move || {
                    let answer = post_json(url, &body, None);
                    assert_eq!(answer.status, 200, "{}", answer.body);
                    read_events(&answer.body)
                })
            })
            .collect();
        clients
            .into_iter()
            .map(|c| c.join().expect("a client"))
            .collect()
    });

    let asked: Vec<_> = pages
        .iter()
        .enumerate()
        .map(|(i, (_, image))| (image, mode(i)))
        .collect();
    let expected = expected_together(&asked, max_tokens);
    for (index, streamed) in answers.iter().enumerate() {
        assert_eq!(streamed.text, expected[index], "page {index}");
        assert_eq!(
            streamed.finish_reason.as_deref(),
            Some("length"),
            "page {index}"
        );
    }
    let texts: std::collections::HashSet<_> = answers.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(texts.len(), 4, "every client got its own page");
    let pages = server.pages();
    assert_eq!(pages.done, 4);
    assert_eq!(
        pages.most_reading, 4,
        "the engine held every client's page at once: {pages:?}"
    );
    assert!(
        pages.most_decoding >= 2,
        "pages of several clients decoded in the same steps: {pages:?}"
    );
}

#[test]
fn a_client_that_goes_away_has_its_page_stopped() {
    let server = TestServer::start(ServeOptions::default());
    let (jpeg, image) = page_image(2);
    // The engine's whole cap: minutes of tokens on the CPU, unless the page is stopped.
    let body = chat_body(&data_url("image/jpeg", &jpeg), LAYOUT, 8192, true);

    let mut stream = OpenStream::send(server.address, &body);
    assert_eq!(stream.status, 200, "{}", stream.head);
    stream.read_text_chunks(3);
    drop(stream);

    let pages = server.wait_for_pages("the page to stop", |p| p.stopped == 1 && p.reading == 0);
    assert_eq!(
        (pages.done, pages.decoding, pages.failed),
        (0, 0, 0),
        "{pages:?}"
    );

    // The engine goes on with the next client.
    let max_tokens = 8;
    let body = chat_body(&data_url("image/jpeg", &jpeg), LAYOUT, max_tokens, true);
    let answer = post_json(&server.url("/v1/chat/completions"), &body, None);
    assert_eq!(
        read_events(&answer.body).text,
        expected(&image, ReadingMode::Layout, max_tokens).text
    );
    assert_eq!(server.pages().done, 1);
}

#[test]
fn a_full_queue_turns_requests_away_with_429_and_retry_after() {
    let server = TestServer::start(ServeOptions {
        queue: 1,
        ..ServeOptions::default()
    });
    let (jpeg, _) = page_image(3);
    let body = chat_body(&data_url("image/jpeg", &jpeg), PLAIN, 8192, true);

    // Pages that never end fill the slots, the pages the engine sees ahead of them, then the queue.
    let mut accepted = Vec::new();
    let refused = loop {
        let stream = OpenStream::send(server.address, &body);
        if stream.status != 200 {
            break stream;
        }
        accepted.push(stream);
        assert!(
            accepted.len() <= 16,
            "16 pages accepted with a queue of one"
        );
    };

    assert_eq!(refused.status, 429, "{}", refused.head);
    let head = refused.head.to_ascii_lowercase();
    assert!(head.contains("retry-after: 2\r\n"), "{head}");
    let error = refused.read_rest();
    assert!(error.contains("\"code\":\"queue_full\""), "{error}");
    assert!(!accepted.is_empty(), "the queue holds one page");
    assert_eq!(server.pages().rejected, 1);

    // Their clients gone, the pages being read stop and those still waiting are dropped unread.
    let count = accepted.len();
    drop(accepted);
    let pages = server.wait_for_pages("every page to stop", |p| p.stopped == count);
    assert_eq!(
        (pages.waiting, pages.reading, pages.done),
        (0, 0, 0),
        "{pages:?}"
    );
}

#[test]
fn bad_requests_get_openai_errors_naming_what_is_wrong() {
    let server = TestServer::start(ServeOptions {
        max_body_bytes: 4 << 20,
        ..ServeOptions::default()
    });
    let url = server.url("/v1/chat/completions");
    let (jpeg, _) = page_image(0);
    let image_url = data_url("image/jpeg", &jpeg);

    let prompt = post_json(
        &url,
        &chat_body(&image_url, "Describe this image.", 8, true),
        None,
    );
    assert_eq!(prompt.status, 400);
    let error = &prompt.json()["error"];
    assert_eq!(error["type"], "invalid_request_error");
    assert_eq!(error["code"], "unsupported_prompt");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(LAYOUT) && message.contains(PLAIN),
        "{message}"
    );

    let mut other_model = chat_body(&image_url, LAYOUT, 8, false);
    other_model["model"] = json!("gpt-4o");
    let answer = post_json(&url, &other_model, None);
    assert_eq!(
        (answer.status, answer.json()["error"]["code"].clone()),
        (404, json!("model_not_found"))
    );

    let fetched = chat_body("https://example.com/page.png", LAYOUT, 8, false);
    let answer = post_json(&url, &fetched, None);
    assert_eq!(answer.status, 400);
    assert!(answer.body.contains("fetches no URL"), "{}", answer.body);

    let not_an_image = chat_body(
        &data_url("image/png", b"GIF89a not a page"),
        LAYOUT,
        8,
        false,
    );
    assert_eq!(post_json(&url, &not_an_image, None).status, 400);

    // Refused on its Content-Length, before a byte of it is read.
    let huge = OpenStream::send_bytes(server.address, b"", 8 << 20);
    assert_eq!(huge.status, 413, "{}", huge.head);
    assert!(huge.read_rest().contains("body_too_large"));

    assert_eq!(post(&url, b"{\"messages\": 3", None).status, 400);
    let (status, body) = get(&server.url("/v2/nothing"), None);
    assert_eq!(status, 404);
    assert!(body.contains("\"error\""), "{body}");
    assert_eq!(
        server.pages().done + server.pages().failed,
        0,
        "nothing reached the engine"
    );
}

#[test]
fn an_api_key_is_asked_of_every_v1_request_when_set() {
    let key = "office-key-1";
    let server = TestServer::start(ServeOptions {
        api_key: Some(key.to_owned()),
        ..ServeOptions::default()
    });
    let models = server.url("/v1/models");

    let (status, body) = get(&server.url("/health"), None);
    assert_eq!(status, 200, "the health check needs no key: {body}");
    let (status, body) = get(&models, None);
    assert_eq!(status, 401);
    assert!(body.contains("invalid_api_key"), "{body}");
    assert_eq!(get(&models, Some("office-key-2")).0, 401);
    assert_eq!(get(&models, Some("office-key-")).0, 401);

    let (jpeg, _) = page_image(0);
    let body = chat_body(&data_url("image/jpeg", &jpeg), LAYOUT, 4, false);
    let answer = post_json(&server.url("/v1/chat/completions"), &body, None);
    assert_eq!(answer.status, 401);
    assert_eq!(answer.header("www-authenticate"), Some("Bearer"));
    assert_eq!(server.pages().done, 0, "a refused request reads nothing");

    let (status, body) = get(&models, Some(key));
    assert_eq!(status, 200, "{body}");
    let answer = post_json(
        &server.url("/v1/chat/completions"),
        &request_for_listed_model(&body),
        Some(key),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(server.pages().done, 1);
}

/// A request for the model `/v1/models` named.
fn request_for_listed_model(models: &str) -> serde_json::Value {
    let models: serde_json::Value = serde_json::from_str(models).expect("JSON");
    let (jpeg, _) = page_image(0);
    let mut body = chat_body(&data_url("image/jpeg", &jpeg), LAYOUT, 4, false);
    body["model"] = models["data"][0]["id"].clone();
    body
}

#[test]
fn models_and_health_describe_the_server() {
    let server = TestServer::start(ServeOptions {
        served_model_name: "ocr".into(),
        ..ServeOptions::default()
    });
    let (status, body) = get(&server.url("/v1/models"), None);
    assert_eq!(status, 200);
    let models: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "ocr");
    assert_eq!(models["data"][0]["object"], "model");
    assert_eq!(models["data"][0]["max_model_len"], 8192);

    let (status, body) = get(&server.url("/health"), None);
    assert_eq!(status, 200);
    let health: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(health["status"], "ok");
    assert_eq!(health["queue"], 64);
    assert_eq!(server.pages(), deepread_server::PagesServed::default());

    let (jpeg, _) = page_image(0);
    let mut body = chat_body(&data_url("image/jpeg", &jpeg), PLAIN, 4, false);
    body["model"] = json!("ocr");
    assert_eq!(
        post_json(&server.url("/v1/chat/completions"), &body, None).status,
        200
    );
    body.as_object_mut().map(|b| b.remove("model"));
    assert_eq!(
        post_json(&server.url("/v1/chat/completions"), &body, None).status,
        200,
        "a request without a model name is for the one served"
    );
}
