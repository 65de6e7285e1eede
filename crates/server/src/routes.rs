//! The routes: `/health` (no key needed), `/v1/models`, and `/v1/chat/completions`, which prepares the
//! request's page on a blocking worker, queues it for the read loop and answers with its text, streamed or
//! whole.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{middleware, Json, Router};
use deepread_core::recognizer::{DeepSeekOcr2, PageInput, ReadingMode, Recognizer, Resolution};
use deepread_engine::GenerateOptions;
use deepread_pdf::{PageSize, PageText};
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::auth::{require_key, ApiKey};
use crate::bridge::{PageEvent, Reader};
use crate::error::ApiError;
use crate::reply::{unix_seconds, Reply};
use crate::request::{decode_page, parse_chat};
use crate::{sse, ServeOptions};

pub struct AppState {
    pub reader: Reader,
    pub api_key: Option<ApiKey>,
    options: ServeOptions,
    /// The model in each reading mode, sharing its weights: they prepare pages with the mode's prompt.
    layout: Arc<DeepSeekOcr2>,
    plain: Arc<DeepSeekOcr2>,
    /// The most tokens the engine writes for a page.
    cap: usize,
    started: u64,
}

impl AppState {
    /// Starts the read loop on `model`. Reading does not depend on the mode (`DeepSeekOcr2::read` runs the
    /// same engine, schedule and decoding whatever its prompt; the prompt is in each page's prepared input),
    /// so one loop reads the pages of both modes together.
    pub fn new(model: DeepSeekOcr2, options: ServeOptions) -> std::io::Result<Self> {
        let layout = Arc::new(model.with_reading(ReadingMode::Layout, Resolution::BaseWithTiles));
        let plain = Arc::new(model.with_reading(ReadingMode::Plain, Resolution::BaseWithTiles));
        Ok(AppState {
            reader: Reader::start(model, options.queue)?,
            api_key: options.api_key.as_deref().map(ApiKey::new),
            options,
            layout,
            plain,
            cap: GenerateOptions::default().max_new_tokens,
            started: unix_seconds(),
        })
    }

    pub fn max_body_bytes(&self) -> usize {
        self.options.max_body_bytes
    }

    fn recognizer(&self, mode: ReadingMode) -> Arc<DeepSeekOcr2> {
        match mode {
            ReadingMode::Layout => Arc::clone(&self.layout),
            ReadingMode::Plain => Arc::clone(&self.plain),
        }
    }
}

pub fn router(state: Arc<AppState>) -> Router {
    let api = Router::new()
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat))
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(&state),
            require_key,
        ));
    Router::new()
        .route("/health", get(health))
        .merge(api)
        .fallback(|| async { ApiError::not_found() })
        .with_state(state)
}

async fn health(State(state): State<Arc<AppState>>) -> Json<Value> {
    let status = if state.reader.is_closing() {
        "shutting down"
    } else {
        "ok"
    };
    Json(json!({
        "status": status,
        "model": state.options.served_model_name,
        "queue": state.options.queue,
        "max_tokens": state.cap,
        "pages": state.reader.pages(),
    }))
}

async fn models(State(state): State<Arc<AppState>>) -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{
            "id": state.options.served_model_name,
            "object": "model",
            "created": state.started,
            "owned_by": "deepread",
            "max_model_len": state.cap,
        }],
    }))
}

async fn chat(State(state): State<Arc<AppState>>, request: Request) -> Response {
    match answer_chat(state, request).await {
        Ok(response) => response,
        Err(error) => {
            tracing::info!(status = %error.status, code = error.code, message = %error.message, "request refused");
            error.into_response()
        }
    }
}

/// A page ready for the read loop, and how to answer.
struct Prepared {
    input: PageInput,
    stream: bool,
    include_usage: bool,
    max_tokens: usize,
}

async fn answer_chat(state: Arc<AppState>, request: Request) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let body = read_body(&parts.headers, body, state.options.max_body_bytes).await?;
    if state.reader.is_closing() {
        return Err(ApiError::shutting_down());
    }
    let ticket = state
        .reader
        .admit()
        .map_err(|_| ApiError::queue_full(state.options.queue))?;
    let page = {
        let state = Arc::clone(&state);
        // Parsing a body of megabytes, decoding the image and the model's preprocessing: CPU work, off the
        // runtime's threads and off the read loop's.
        tokio::task::spawn_blocking(move || prepare(&state, &body))
            .await
            .map_err(|e| ApiError::page_failed(format!("preparing the page failed: {e}")))??
    };
    let events = state
        .reader
        .submit(ticket, page.input, page.max_tokens)
        .map_err(|_| ApiError::shutting_down())?;
    let reply = Reply::new(&state.options.served_model_name);
    match page.stream {
        true => Ok(sse::response(reply, events, page.include_usage)),
        false => whole_reply(reply, events).await,
    }
}

/// The whole body, at most `limit` bytes. A body that says it is larger is refused before a byte of it is
/// read.
async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|length| length.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(ApiError::too_large(limit));
    }
    axum::body::to_bytes(body, limit)
        .await
        .map_err(|e| match declared {
            // Within its declared length, the body was cut off.
            Some(_) => ApiError::bad_request(
                "unreadable_body",
                format!("the body could not be read: {e}"),
            ),
            None => ApiError::too_large(limit),
        })
}

/// The request's page, decoded and prepared by the model in the request's mode.
fn prepare(state: &AppState, body: &[u8]) -> Result<Prepared, ApiError> {
    let request = parse_chat(body, &state.options.served_model_name, state.cap)?;
    let image = decode_page(request.image)?;
    let mut input = PageInput {
        page: 0,
        size: PageSize {
            width_pt: image.width() as f32,
            height_pt: image.height() as f32,
        },
        image: Some(image),
        text: PageText::default(),
        model_input: None,
    };
    state
        .recognizer(request.mode)
        .prepare(&mut input)
        .map_err(|e| {
            ApiError::bad_request(
                "invalid_image",
                format!("the page could not be prepared: {e}"),
            )
        })?;
    // The model input holds what the engine needs; the pixels need not wait in the queue.
    input.image = None;
    Ok(Prepared {
        input,
        stream: request.stream,
        include_usage: request.include_usage,
        max_tokens: request.max_tokens,
    })
}

/// Waits for the whole page: one `chat.completion`, or the engine's error as a 500.
async fn whole_reply(
    reply: Reply,
    mut events: UnboundedReceiver<PageEvent>,
) -> Result<Response, ApiError> {
    let mut text = String::new();
    loop {
        match events.recv().await {
            Some(PageEvent::Text(piece)) => text.push_str(&piece),
            Some(PageEvent::Finished(finish)) => {
                return Ok(Json(reply.completion(&text, &finish)).into_response())
            }
            Some(PageEvent::Failed(message)) => return Err(ApiError::page_failed(message)),
            None => return Err(ApiError::page_failed(sse::NOT_READ)),
        }
    }
}
