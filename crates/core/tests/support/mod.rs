//! A small OpenAI-compatible server on 127.0.0.1 for the remote recognizer's tests: a real socket, a
//! thread per connection, and replies scripted per page, good or bad (busy, erroring, cut off, stalled,
//! malformed, endless). It decodes each request, finds which page its PNG is (pixel for pixel), and
//! records what it was sent and how the connection went.

#![allow(dead_code)] // each test file uses its own part

mod http;

use std::collections::HashMap;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use image::RgbImage;
use serde_json::{json, Value};

use self::http::{
    read_request, write_chunk, write_last_chunk, write_stream_head, write_whole, RawRequest,
};

/// One piece of a streamed reply, written in order.
#[derive(Debug, Clone)]
pub enum Wire {
    /// A chunk whose delta is this text.
    Text(String),
    /// A chunk with this finish reason.
    Finish(&'static str),
    /// The usage chunk: prompt and completion tokens.
    Usage(usize, usize),
    /// `data: [DONE]`.
    Done,
    /// An event with this data as it is.
    Raw(String),
    /// The connection closed at once, the body unfinished.
    Die,
    /// Nothing more for this long, then the connection closed.
    Stall(Duration),
}

#[derive(Debug, Clone)]
pub enum Reply {
    /// A streamed reply, `pause` between pieces.
    Stream { wire: Vec<Wire>, pause: Duration },
    /// A reply that is not a stream: an error status, say.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// The same text again and again until the client closes the connection.
    Endless { text: String, pause: Duration },
}

impl Reply {
    /// A complete reply: `pieces` as deltas, then `stop`, the usage (a token a piece) and `[DONE]`.
    pub fn text(pieces: &[&str], pause: Duration) -> Reply {
        let mut wire: Vec<Wire> = pieces.iter().map(|p| Wire::Text((*p).to_owned())).collect();
        wire.extend([
            Wire::Finish("stop"),
            Wire::Usage(1000, pieces.len()),
            Wire::Done,
        ]);
        Reply::Stream { wire, pause }
    }

    /// The answer to `GET /v1/models` of a server serving `ids`, in OpenAI's shape.
    pub fn models(ids: &[&str]) -> Reply {
        let data: Vec<Value> = ids
            .iter()
            .map(|id| json!({"id": id, "object": "model", "owned_by": "fake"}))
            .collect();
        Reply::status(200, &json!({"object": "list", "data": data}).to_string())
    }

    pub fn status(status: u16, body: &str) -> Reply {
        Reply::Status {
            status,
            headers: Vec::new(),
            body: body.to_owned(),
        }
    }
}

/// What the server was sent, one request.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Which of the server's pages the image is (`None`: it has none to compare with).
    pub page: Option<usize>,
    /// 1 for the first request for this page, 2 for the next…
    pub attempt: usize,
    pub at: Instant,
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
    /// The text part of the message.
    pub prompt: String,
    pub image_size: (u32, u32),
}

type Script = dyn Fn(&Seen) -> Reply + Send + Sync;

struct State {
    pages: Vec<RgbImage>,
    script: Box<Script>,
    seen: Mutex<Vec<Seen>>,
    attempts: Mutex<HashMap<Option<usize>, usize>>,
    open: AtomicUsize,
    most_open: AtomicUsize,
    /// Pages whose connection the client closed while the reply was still being written, and when
    /// the server found out.
    closed_by_client: Mutex<Vec<(Option<usize>, Instant)>>,
    /// What `GET /v1/models` answers (by default, that DeepSeek-OCR-2 is served).
    models: Mutex<Reply>,
    /// The `Authorization` header of each `GET /v1/models`.
    models_asked: Mutex<Vec<Option<String>>>,
    /// Requests refused because their image was not a PNG of one of the pages.
    rejected: Mutex<Vec<String>>,
    shut: AtomicBool,
}

pub struct FakeServer {
    /// The API base, `http://127.0.0.1:PORT/v1`.
    pub url: String,
    address: std::net::SocketAddr,
    state: Arc<State>,
}

impl FakeServer {
    /// Serves `pages` (the images requests must carry, or none to take any PNG), answering each
    /// request as `script` says.
    pub fn start(
        pages: Vec<RgbImage>,
        script: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port on 127.0.0.1");
        let address = listener.local_addr().expect("its address");
        let state = Arc::new(State {
            pages,
            script: Box::new(script),
            seen: Mutex::default(),
            attempts: Mutex::default(),
            open: AtomicUsize::new(0),
            most_open: AtomicUsize::new(0),
            closed_by_client: Mutex::default(),
            models: Mutex::new(Reply::models(&["deepseek-ai/DeepSeek-OCR-2"])),
            models_asked: Mutex::default(),
            rejected: Mutex::default(),
            shut: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accepting.shut.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let state = Arc::clone(&accepting);
                std::thread::spawn(move || serve(&state, stream));
            }
        });
        FakeServer {
            url: format!("http://{address}/v1"),
            address,
            state,
        }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    /// The most requests the server was answering at the same time.
    pub fn most_at_once(&self) -> usize {
        self.state.most_open.load(Ordering::SeqCst)
    }

    pub fn closed_by_client(&self) -> Vec<(Option<usize>, Instant)> {
        self.state.closed_by_client.lock().unwrap().clone()
    }

    /// Makes `GET /v1/models` answer `reply` from now on.
    pub fn answer_models(&self, reply: Reply) {
        *self.state.models.lock().unwrap() = reply;
    }

    /// The `Authorization` header of each `GET /v1/models` so far.
    pub fn models_asked(&self) -> Vec<Option<String>> {
        self.state.models_asked.lock().unwrap().clone()
    }

    pub fn rejected(&self) -> Vec<String> {
        self.state.rejected.lock().unwrap().clone()
    }

    /// Waits up to `within` for the client to close `page`'s connection; when the server saw it.
    pub fn closed_at(&self, page: Option<usize>, within: Duration) -> Option<Instant> {
        let until = Instant::now() + within;
        while Instant::now() < until {
            let closed = self.closed_by_client();
            if let Some((_, at)) = closed.iter().find(|(p, _)| *p == page) {
                return Some(*at);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// Whether the client closed `page`'s connection, waiting up to `within` for it.
    pub fn saw_closed(&self, page: Option<usize>, within: Duration) -> bool {
        self.closed_at(page, within).is_some()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.state.shut.store(true, Ordering::Relaxed);
        // Wakes the accepting thread so that it sees the flag.
        let _ = TcpStream::connect(self.address);
    }
}

/// Answers one connection: one request, one reply (a list of models, or a page read).
fn serve(state: &State, mut stream: TcpStream) {
    let Ok(raw) = read_request(&stream) else {
        return;
    };
    if state.shut.load(Ordering::Relaxed) {
        return;
    }
    if raw.method == "GET" && raw.path.ends_with("/models") {
        let authorization = raw.header("authorization").map(str::to_owned);
        state.models_asked.lock().unwrap().push(authorization);
        let reply = state.models.lock().unwrap().clone();
        write_reply(state, &mut stream, None, reply);
        return;
    }
    let open = state.open.fetch_add(1, Ordering::SeqCst) + 1;
    state.most_open.fetch_max(open, Ordering::SeqCst);
    match understand(state, &raw) {
        Ok(seen) => {
            let reply = (state.script)(&seen);
            let page = seen.page;
            state.seen.lock().unwrap().push(seen);
            write_reply(state, &mut stream, page, reply);
        }
        Err(why) => {
            state.rejected.lock().unwrap().push(why.clone());
            let body = json!({"error": {"message": why}}).to_string();
            let _ = write_whole(&mut stream, 400, &[], &body);
        }
    }
    state.open.fetch_sub(1, Ordering::SeqCst);
}

/// The request as a chat completion of one page; why not, when it is not one.
fn understand(state: &State, raw: &RawRequest) -> Result<Seen, String> {
    if raw.method != "POST" || !raw.path.ends_with("/chat/completions") {
        return Err(format!("unexpected {} {}", raw.method, raw.path));
    }
    let body: Value = serde_json::from_slice(&raw.body).map_err(|e| format!("body: {e}"))?;
    let content = &body["messages"][0]["content"];
    let url = content[0]["image_url"]["url"]
        .as_str()
        .ok_or("no image_url first in the message")?;
    let data = url
        .strip_prefix("data:image/png;base64,")
        .ok_or("the image is not an inline PNG")?;
    let png = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| format!("base64: {e}"))?;
    let image = image::load_from_memory_with_format(&png, image::ImageFormat::Png)
        .map_err(|e| format!("not a PNG: {e}"))?
        .to_rgb8();
    let page = match state.pages.is_empty() {
        true => None,
        false => Some(
            state
                .pages
                .iter()
                .position(|p| *p == image)
                .ok_or("the image is none of the pages, pixel for pixel")?,
        ),
    };
    let prompt = content[1]["text"]
        .as_str()
        .ok_or("no text after the image")?;
    let attempt = {
        let mut attempts = state.attempts.lock().unwrap();
        let count = attempts.entry(page).or_default();
        *count += 1;
        *count
    };
    Ok(Seen {
        page,
        attempt,
        at: Instant::now(),
        path: raw.path.clone(),
        authorization: raw.header("authorization").map(str::to_owned),
        prompt: prompt.to_owned(),
        image_size: image.dimensions(),
        body,
    })
}

fn write_reply(state: &State, stream: &mut TcpStream, page: Option<usize>, reply: Reply) {
    match reply {
        Reply::Status {
            status,
            headers,
            body,
        } => {
            let _ = write_whole(stream, status, &headers, &body);
        }
        Reply::Stream { wire, pause } => {
            let _ = write_stream(stream, &wire, pause);
        }
        Reply::Endless { text, pause } => {
            if write_endless(stream, &text, pause).is_err() {
                let closed = (page, Instant::now());
                state.closed_by_client.lock().unwrap().push(closed);
            }
        }
    }
}

fn write_stream(stream: &mut TcpStream, wire: &[Wire], pause: Duration) -> std::io::Result<()> {
    write_stream_head(stream)?;
    for piece in wire {
        let data = match piece {
            Wire::Text(text) => delta(text),
            Wire::Finish(reason) => json!({
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "finish_reason": reason}],
            })
            .to_string(),
            Wire::Usage(prompt, completion) => json!({
                "object": "chat.completion.chunk",
                "choices": [],
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                          "total_tokens": prompt + completion},
            })
            .to_string(),
            Wire::Done => "[DONE]".to_owned(),
            Wire::Raw(data) => data.clone(),
            Wire::Die => return stream.shutdown(std::net::Shutdown::Both),
            Wire::Stall(time) => {
                std::thread::sleep(*time);
                return stream.shutdown(std::net::Shutdown::Both);
            }
        };
        write_chunk(stream, &event(&data))?;
        std::thread::sleep(pause);
    }
    write_last_chunk(stream)
}

/// Writes until writing fails: the client closed the connection.
fn write_endless(stream: &mut TcpStream, text: &str, pause: Duration) -> std::io::Result<()> {
    write_stream_head(stream)?;
    loop {
        write_chunk(stream, &event(&delta(text)))?;
        std::thread::sleep(pause);
    }
}

fn delta(text: &str) -> String {
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}],
    })
    .to_string()
}

fn event(data: &str) -> Vec<u8> {
    format!("data: {data}\n\n").into_bytes()
}

/// `text` cut into pieces of about `size` characters, as a server streams tokens.
pub fn pieces(text: &str, size: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.char_indices().nth(size).map_or(rest.len(), |(i, _)| i);
        pieces.push(&rest[..end]);
        rest = &rest[end..];
    }
    pieces
}

/// A port on 127.0.0.1 where nothing listens.
pub fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    listener.local_addr().expect("its address").port()
}

/// A server as fast as this one can be, for the remote client's benchmark
/// (examples/remote_client.rs): `answer` picks each request's reply from its raw body (nothing is
/// decoded), the reply's events are made beforehand ([`stream_events`]), and each goes out in one
/// write on a connection with TCP_NODELAY, with no pause, as uvicorn writes vLLM's. A request
/// `answer` knows nothing of gets a 400.
pub struct FastServer {
    /// The API base, `http://127.0.0.1:PORT/v1`.
    pub url: String,
    address: std::net::SocketAddr,
    shut: Arc<AtomicBool>,
}

/// A reply's events, ready to write (`data: …` and the blank line).
pub type Events = Arc<Vec<Vec<u8>>>;

type Answer = dyn Fn(&[u8]) -> Option<Events> + Send + Sync;

impl FastServer {
    pub fn start(answer: impl Fn(&[u8]) -> Option<Events> + Send + Sync + 'static) -> FastServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port on 127.0.0.1");
        let address = listener.local_addr().expect("its address");
        let shut = Arc::new(AtomicBool::new(false));
        let answer: Arc<Answer> = Arc::new(answer);
        let accepting = Arc::clone(&shut);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accepting.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let answer = Arc::clone(&answer);
                std::thread::spawn(move || serve_fast(&*answer, stream));
            }
        });
        FastServer {
            url: format!("http://{address}/v1"),
            address,
            shut,
        }
    }
}

impl Drop for FastServer {
    fn drop(&mut self) {
        self.shut.store(true, Ordering::Relaxed);
        // Wakes the accepting thread so that it sees the flag.
        let _ = TcpStream::connect(self.address);
    }
}

fn serve_fast(answer: &Answer, mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let Ok(raw) = read_request(&stream) else {
        return;
    };
    let Some(events) = answer(&raw.body) else {
        let body = json!({"error": {"message": "a request for no page this server has"}});
        let _ = write_whole(&mut stream, 400, &[], &body.to_string());
        return;
    };
    let _ = write_stream_head(&mut stream).and_then(|()| {
        for data in events.iter() {
            http::write_chunk_at_once(&mut stream, data)?;
        }
        write_last_chunk(&mut stream)
    });
}

/// A complete reply's events as [`Reply::text`] streams them: `pieces` as deltas, then `stop`, the
/// usage (a token a piece) and `[DONE]`.
pub fn stream_events(pieces: &[&str]) -> Vec<Vec<u8>> {
    let finish = json!({
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    });
    let usage = json!({
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {"prompt_tokens": 1000, "completion_tokens": pieces.len(),
                  "total_tokens": 1000 + pieces.len()},
    });
    pieces
        .iter()
        .map(|text| delta(text))
        .chain([finish.to_string(), usage.to_string(), "[DONE]".to_owned()])
        .map(|data| event(&data))
        .collect()
}
