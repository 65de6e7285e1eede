//! One page's exchange with the server, on the worker thread that owns it: the request sent (again,
//! after a wait, while the server says it is busy and no text has come yet), the reply streamed back
//! a delta at a time, and the connection dropped as soon as the page is to stop, which is how vLLM and
//! SGLang learn to abort the request.

use std::io::BufReader;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use image::RgbImage;
use ureq::http::Response;
use ureq::tls::{RootCerts, TlsConfig};
use ureq::{Agent, Body, RequestBuilder};

use super::endpoint::Endpoint;
use super::fault::{self, RemoteError};
use super::request::{chat_body, encode_png, Decoding};
use super::stream::{parse_chunk, Event, EventStream, Piece, StreamFault, Usage};
use super::Timeouts;
use crate::recognizer::ReadingMode;

const USER_AGENT: &str = concat!("deepread/", env!("CARGO_PKG_VERSION"));
/// Tries of a page while the server answers 429 or 503, the first included.
pub const MAX_ATTEMPTS: usize = 4;
/// The longest wait a `Retry-After` is followed for; longer is a server too busy to wait on.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(30);
/// The wait before another try when a busy server does not say how long.
const DEFAULT_RETRY_WAIT: Duration = Duration::from_secs(2);
/// How often a waiting worker looks whether its page was stopped.
const STOP_POLL: Duration = Duration::from_millis(50);
/// Bytes of text one token can stand for, generously: DeepSeek's longest tokens are runs of spaces,
/// dashes or digits. More text than `max_tokens` of these is a server ignoring the cap.
const MAX_BYTES_PER_TOKEN: usize = 32;
/// Room for a chunk's JSON around its text.
const CHUNK_OVERHEAD: usize = 64 * 1024;

/// What a worker is told to do with each piece of text: `false` stops the page.
pub type OnText<'a> = dyn FnMut(String) -> bool + 'a;

pub struct Client {
    agent: Agent,
    endpoint: Endpoint,
    model: String,
    mode: ReadingMode,
    decoding: Decoding,
    api_key: Option<String>,
    timeouts: Timeouts,
}

impl Client {
    pub fn new(
        endpoint: Endpoint,
        model: String,
        mode: ReadingMode,
        decoding: Decoding,
        api_key: Option<String>,
        timeouts: Timeouts,
    ) -> Self {
        let agent = agent(&timeouts);
        Client {
            agent,
            endpoint,
            model,
            mode,
            decoding,
            api_key,
            timeouts,
        }
    }

    /// Reads one page, passing its text to `on_text` as it arrives. `Ok(None)`: the page was stopped
    /// (by `stop`, or `on_text`), and the connection is closed. The image is let go once encoded,
    /// not held while the page streams.
    pub fn read_page(
        &self,
        image: RgbImage,
        stop: &AtomicBool,
        on_text: &mut OnText<'_>,
    ) -> Result<Option<Usage>, RemoteError> {
        let png = encode_png(&image).map_err(|e| RemoteError::Encode {
            endpoint: self.endpoint.to_string(),
            detail: e.to_string(),
        })?;
        drop(image);
        let body = chat_body(&self.model, self.mode, &png, &self.decoding);
        drop(png);
        let mut attempt = 0;
        loop {
            attempt += 1;
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let mut response = self.post(&body)?;
            let status = response.status().as_u16();
            match status {
                200..=299 => return self.stream(response, stop, on_text),
                429 | 503 if attempt < MAX_ATTEMPTS => {
                    let wait = fault::retry_after(&response)
                        .unwrap_or(DEFAULT_RETRY_WAIT)
                        .min(MAX_RETRY_WAIT);
                    drop(response);
                    tracing::info!(
                        endpoint = %self.endpoint, status, attempt, ?wait,
                        "the server is busy; trying the page again"
                    );
                    if !wait_unless_stopped(wait, stop) {
                        return Ok(None);
                    }
                }
                429 | 503 => {
                    return Err(RemoteError::Busy {
                        endpoint: self.endpoint.to_string(),
                        status,
                        attempts: attempt,
                    })
                }
                _ => return Err(fault::status(self.endpoint.as_str(), &mut response)),
            }
        }
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn post(&self, body: &[u8]) -> Result<Response<Body>, RemoteError> {
        let request = self
            .agent
            .post(self.endpoint.chat_completions())
            .header("Content-Type", "application/json")
            .header("Accept", "text/event-stream");
        with_key(request, self.api_key.as_deref())
            .send(body)
            .map_err(|e| fault::transport(self.endpoint.as_str(), e, &self.timeouts))
    }

    /// The reply's text to `on_text` until the stream ends; a stream that ends without saying so (no
    /// `[DONE]`, no finish reason) was cut.
    fn stream(
        &self,
        response: Response<Body>,
        stop: &AtomicBool,
        on_text: &mut OnText<'_>,
    ) -> Result<Option<Usage>, RemoteError> {
        self.check_is_stream(&response)?;
        let limit = self.decoding.max_tokens.saturating_mul(MAX_BYTES_PER_TOKEN);
        let reader = BufReader::new(response.into_body().into_reader());
        let mut events = EventStream::new(reader, limit.saturating_add(CHUNK_OVERHEAD));
        let mut written = 0;
        let mut finish = None;
        let mut usage = Usage::default();
        let mut done = false;
        let started = Instant::now();
        loop {
            let event = events.next_event().map_err(|f| self.stream_fault(f))?;
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let data = match event {
                Some(Event::Chunk(data)) => data,
                Some(Event::Done) => {
                    done = true;
                    break;
                }
                None => break,
            };
            for piece in parse_chunk(&data).map_err(|f| self.stream_fault(f))? {
                match piece {
                    Piece::Text(text) => {
                        written += text.len();
                        if written > limit {
                            return Err(self.oversized());
                        }
                        if !on_text(text) {
                            return Ok(None);
                        }
                    }
                    Piece::Finish(reason) => finish = Some(reason),
                    Piece::Usage(given) => usage = given,
                }
            }
        }
        tracing::debug!(
            endpoint = %self.endpoint, ?finish, ?usage, elapsed = ?started.elapsed(),
            "page streamed"
        );
        self.check_end(finish.as_deref(), done)?;
        Ok(Some(usage))
    }

    /// A server that ignored `stream: true` answers with one JSON document, which would otherwise read
    /// as a stream cut off before its first event.
    fn check_is_stream(&self, response: &Response<Body>) -> Result<(), RemoteError> {
        let kind = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("text/event-stream");
        if kind
            .trim()
            .to_ascii_lowercase()
            .starts_with("text/event-stream")
        {
            return Ok(());
        }
        Err(RemoteError::Malformed {
            endpoint: self.endpoint.to_string(),
            detail: format!("the reply is {kind}, not text/event-stream"),
        })
    }

    /// A reply ends by saying so: `[DONE]`, or a finish reason of `stop` (the end of the page) or
    /// `length` (the token budget spent). Without either, the connection broke.
    fn check_end(&self, finish: Option<&str>, done: bool) -> Result<(), RemoteError> {
        match finish {
            Some("stop" | "length") => Ok(()),
            Some(other) => Err(RemoteError::Server {
                endpoint: self.endpoint.to_string(),
                message: format!("the reply ended with finish reason `{other}`"),
            }),
            None if done => Ok(()),
            None => Err(RemoteError::Cut {
                endpoint: self.endpoint.to_string(),
                detail: "the stream ended without [DONE] or a finish reason".into(),
            }),
        }
    }

    fn oversized(&self) -> RemoteError {
        RemoteError::Oversized {
            endpoint: self.endpoint.to_string(),
            limit: self.decoding.max_tokens.saturating_mul(MAX_BYTES_PER_TOKEN),
            max_tokens: self.decoding.max_tokens,
        }
    }

    fn stream_fault(&self, fault: StreamFault) -> RemoteError {
        let endpoint = self.endpoint.to_string();
        match fault {
            StreamFault::Io(e) => fault::broken_stream(&endpoint, e, &self.timeouts),
            StreamFault::Malformed(detail) => RemoteError::Malformed { endpoint, detail },
            StreamFault::Server(message) => RemoteError::Server { endpoint, message },
            StreamFault::LineTooLong => self.oversized(),
        }
    }
}

/// The HTTP client every request to a server goes through: statuses left for us to put in words,
/// no redirects, the system's certificate roots, and `timeouts` at each step.
pub(super) fn agent(timeouts: &Timeouts) -> Agent {
    Agent::config_builder()
        // Statuses become sentences here; a redirected POST would lose its body.
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_resolve(Some(timeouts.connect))
        .timeout_connect(Some(timeouts.connect))
        .timeout_per_write(Some(timeouts.idle))
        .timeout_recv_response(Some(timeouts.idle))
        .timeout_per_read(Some(timeouts.idle))
        .tls_config(
            TlsConfig::builder()
                .root_certs(RootCerts::PlatformVerifier)
                .build(),
        )
        .user_agent(USER_AGENT)
        .build()
        .into()
}

/// `Authorization: Bearer …` when there is a key to send.
pub(super) fn with_key<B>(request: RequestBuilder<B>, api_key: Option<&str>) -> RequestBuilder<B> {
    match api_key {
        Some(key) => request.header("Authorization", format!("Bearer {key}")),
        None => request,
    }
}

/// Sleeps `wait`, or less if the page is stopped meanwhile; whether to go on.
fn wait_unless_stopped(wait: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + wait;
    while Instant::now() < until {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(STOP_POLL.min(until.saturating_duration_since(Instant::now())));
    }
    !stop.load(Ordering::Relaxed)
}
