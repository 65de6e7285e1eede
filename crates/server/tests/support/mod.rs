//! What the server's tests share: a tiny DeepSeek-OCR-2 with random weights and the real vocabulary (made
//! once per build, loaded once per test binary), a real server on 127.0.0.1, HTTP and SSE helpers, and the
//! oracle: the in-process engine reading the same image with the same prompt and token cap.

#![allow(dead_code)] // each test uses its own part

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use base64::Engine as _;
use candle_core::{DType, Device};
use deepread_core::recognizer::{DeepSeekOcr2, ReadingMode, Resolution};
use deepread_engine::synthetic::{
    write_random_checkpoint, SynthesisOptions, TINY_FULL_VOCAB_CONFIG_JSON,
};
use deepread_engine::{Flow, GenerateOptions, Ocr, TextEvent};
use deepread_server::{serve, PagesServed, ServeOptions};
use image::RgbImage;
use serde_json::{json, Value};

pub const LAYOUT: &str = "<|grounding|>Convert the document to markdown.";
pub const PLAIN: &str = "Free OCR.";

/// ../shared/fixtures, or where `DEEPREAD_FIXTURES` says.
pub fn fixtures() -> PathBuf {
    std::env::var_os("DEEPREAD_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures"))
}

/// Page photos of the shared fixtures, each a different page.
pub fn page_jpeg(index: usize) -> PathBuf {
    let names = [
        "grounding/with_source/halllo_taxi_receipt/input.jpg",
        "pdfs/omnidocbench_demo_images/notes_1ba14cb325bc448f7201b20502ecf2b5_15.jpg",
        "pdfs/omnidocbench_demo_images/newspaper_5e266dfd9c498cab274e12a7b4a75755_4.jpg",
        "pdfs/omnidocbench_demo_images/yanbaopptmerge_SE05.pdf_7.jpg",
    ];
    let path = fixtures().join(names[index]);
    assert!(path.is_file(), "fixture {} is missing", path.display());
    path
}

/// The tiny checkpoint, written once into the build's test folder (the same seed writes the same bytes).
pub fn model_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-tiny-model");
        if !dir.join("model.safetensors").is_file() {
            let options = SynthesisOptions {
                dtype: DType::BF16,
                seed: 7,
            };
            write_random_checkpoint(
                TINY_FULL_VOCAB_CONFIG_JSON,
                &fixtures().join("tokenizer"),
                &dir,
                options,
            )
            .expect("the tiny checkpoint is written");
        }
        dir
    })
}

/// Slots of every test server: room for the concurrency test's four pages.
pub const SLOTS: usize = 4;

/// The model as `deepread serve` loads it, once: every server of the tests shares its weights.
pub fn model() -> DeepSeekOcr2 {
    static MODEL: OnceLock<DeepSeekOcr2> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            DeepSeekOcr2::load(model_dir(), ReadingMode::Layout, Some(SLOTS))
                .expect("the tiny model loads")
        })
        .with_reading(ReadingMode::Layout, Resolution::BaseWithTiles)
}

/// The oracle: the in-process engine on the CPU (where the tests run, so where the server reads too).
pub fn oracle() -> &'static Ocr {
    static OCR: OnceLock<Ocr> = OnceLock::new();
    OCR.get_or_init(|| Ocr::load(model_dir(), &Device::Cpu, DType::F32).expect("the oracle loads"))
}

/// What the in-process engine writes for `image` with `prompt`'s mode and `max_tokens`: the text and the
/// tokens it generated, and the prompt's length.
pub struct Expected {
    pub text: String,
    pub tokens: usize,
    pub prompt_tokens: usize,
}

pub fn expected(image: &RgbImage, mode: ReadingMode, max_tokens: usize) -> Expected {
    let ocr = oracle();
    let input = ocr
        .prepare(image, mode.preset().text())
        .expect("the oracle prepares the page");
    let options = GenerateOptions {
        max_new_tokens: max_tokens,
        ..GenerateOptions::default()
    };
    let mut text = String::new();
    let outputs = ocr
        .read(std::slice::from_ref(&input), &options, |event| {
            if let TextEvent::Text { text: piece, .. } = event {
                text.push_str(&piece);
            }
            Flow::Continue
        })
        .expect("the oracle reads the page");
    Expected {
        text,
        tokens: outputs[0].tokens.len(),
        prompt_tokens: input.prompt_ids.len(),
    }
}

/// What the in-process engine writes for several pages read together (the engine's pages are read as if
/// alone, whatever runs beside them), each with its mode.
pub fn expected_together(pages: &[(&RgbImage, ReadingMode)], max_tokens: usize) -> Vec<String> {
    let ocr = oracle();
    let inputs: Vec<_> = pages
        .iter()
        .map(|(image, mode)| {
            ocr.prepare(image, mode.preset().text())
                .expect("the oracle prepares the page")
        })
        .collect();
    let options = GenerateOptions {
        max_new_tokens: max_tokens,
        ..GenerateOptions::default()
    };
    let mut texts = vec![String::new(); pages.len()];
    ocr.read(&inputs, &options, |event| {
        if let TextEvent::Text { page, text, .. } = event {
            texts[page].push_str(&text);
        }
        Flow::Continue
    })
    .expect("the oracle reads the pages");
    texts
}

/// A server on 127.0.0.1 (any free port), stopped and joined when dropped.
pub struct TestServer {
    pub address: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    pub fn start(options: ServeOptions) -> TestServer {
        let model = model();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (bound, address) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("a port");
                bound
                    .send(listener.local_addr().expect("an address"))
                    .expect("the test waits");
                let shutdown = async move {
                    let _ = stopped.await;
                };
                serve(listener, model, options, shutdown)
                    .await
                    .expect("the server runs");
            });
        });
        let address = address.recv().expect("the server is listening");
        TestServer {
            address,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    pub fn pages(&self) -> PagesServed {
        let (status, body) = get(&self.url("/health"), None);
        assert_eq!(status, 200, "{body}");
        let health: Value = serde_json::from_str(&body).expect("health is JSON");
        serde_json::from_value(health["pages"].clone()).expect("health counts pages")
    }

    /// Waits (at most a minute) until the page counts satisfy `done`, and returns them.
    pub fn wait_for_pages(&self, what: &str, done: impl Fn(&PagesServed) -> bool) -> PagesServed {
        let started = Instant::now();
        loop {
            let pages = self.pages();
            if done(&pages) {
                return pages;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "waited a minute for {what}: {pages:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub fn data_url(media_type: &str, bytes: &[u8]) -> String {
    format!(
        "data:{media_type};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

pub fn png(image: &RgbImage) -> Vec<u8> {
    let mut png = std::io::Cursor::new(Vec::new());
    image
        .write_to(&mut png, image::ImageFormat::Png)
        .expect("PNG encodes");
    png.into_inner()
}

/// A chat-completions body as DeepRead's remote engine and vLLM's examples send it.
pub fn chat_body(image_url: &str, prompt: &str, max_tokens: usize, stream: bool) -> Value {
    json!({
        "model": "deepseek-ai/DeepSeek-OCR-2",
        "messages": [{
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": image_url}},
                {"type": "text", "text": prompt},
            ],
        }],
        "stream": stream,
        "stream_options": {"include_usage": true},
        "temperature": 0,
        "max_tokens": max_tokens,
        "skip_special_tokens": false,
        "vllm_xargs": {"ngram_size": 20, "window_size": 90, "whitelist_token_ids": [128821, 128822]},
    })
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

/// A response: its status, its headers (names in lower case) and its body.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

pub fn post(url: &str, body: &[u8], key: Option<&str>) -> Answer {
    let mut request = agent().post(url).content_type("application/json");
    if let Some(key) = key {
        request = request.header("Authorization", format!("Bearer {key}"));
    }
    let mut response = request.send(body).expect("the server answers");
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_string()
        .expect("a body");
    Answer {
        status,
        headers,
        body,
    }
}

pub fn post_json(url: &str, body: &Value, key: Option<&str>) -> Answer {
    post(url, &serde_json::to_vec(body).expect("JSON"), key)
}

pub fn get(url: &str, key: Option<&str>) -> (u16, String) {
    let mut request = agent().get(url);
    if let Some(key) = key {
        request = request.header("Authorization", format!("Bearer {key}"));
    }
    let mut response = request.call().expect("the server answers");
    let status = response.status().as_u16();
    (
        status,
        response.body_mut().read_to_string().expect("a body"),
    )
}

/// A streamed reply, read to its end.
#[derive(Debug, Default)]
pub struct Streamed {
    pub chunks: Vec<Value>,
    pub text: String,
    pub finish_reason: Option<String>,
    pub usage: Option<Value>,
    pub error: Option<String>,
    pub done: bool,
}

/// Reads server-sent events until `[DONE]` or the end of the body.
pub fn read_events(body: &str) -> Streamed {
    let mut streamed = Streamed::default();
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            assert!(line.is_empty(), "an SSE line that is not data: {line:?}");
            continue;
        };
        if data == "[DONE]" {
            streamed.done = true;
            continue;
        }
        let chunk: Value = serde_json::from_str(data).expect("a JSON chunk");
        if let Some(message) = chunk["error"]["message"].as_str() {
            streamed.error = Some(message.to_owned());
        }
        if let Some(choice) = chunk["choices"].get(0) {
            streamed
                .text
                .push_str(choice["delta"]["content"].as_str().unwrap_or(""));
            if let Some(reason) = choice["finish_reason"].as_str() {
                streamed.finish_reason = Some(reason.to_owned());
            }
        }
        if chunk["usage"].is_object() {
            streamed.usage = Some(chunk["usage"].clone());
        }
        streamed.chunks.push(chunk);
    }
    streamed
}

/// A streamed request on a raw connection, left open: the status line is read, the rest waits.
pub struct OpenStream {
    pub status: u16,
    pub head: String,
    reader: BufReader<TcpStream>,
}

impl OpenStream {
    pub fn send(address: SocketAddr, body: &Value) -> OpenStream {
        let body = serde_json::to_vec(body).expect("JSON");
        OpenStream::send_bytes(address, &body, body.len())
    }

    /// Sends `body` under a `Content-Length` of `length` (more than `body` holds: the rest never comes).
    pub fn send_bytes(address: SocketAddr, body: &[u8], length: usize) -> OpenStream {
        let mut stream = TcpStream::connect(address).expect("a connection");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("a timeout");
        let head = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
             Connection: close\r\nContent-Length: {length}\r\n\r\n"
        );
        stream
            .write_all(head.as_bytes())
            .expect("the request is sent");
        stream.write_all(body).expect("the body is sent");
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("the response head");
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push_str(&line);
        }
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("a status line");
        OpenStream {
            status,
            head,
            reader,
        }
    }

    /// Reads the body until `count` text chunks have come (chunked encoding lines are skipped over).
    pub fn read_text_chunks(&mut self, count: usize) {
        let mut seen = 0;
        while seen < count {
            let mut line = String::new();
            let read = self
                .reader
                .read_line(&mut line)
                .expect("the stream goes on");
            assert!(read > 0, "the stream ended before {count} text chunks");
            if line.starts_with("data: ")
                && line.contains("\"content\":\"")
                && !line.contains("\"content\":\"\"")
            {
                seen += 1;
            }
        }
    }

    /// The rest of the body, as sent (chunk sizes included).
    pub fn read_rest(mut self) -> String {
        let mut rest = String::new();
        let _ = self.reader.read_to_string(&mut rest);
        rest
    }
}
