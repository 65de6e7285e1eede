//! `deepread serve`: the in-process DeepSeek-OCR-2 engine behind the OpenAI chat-completions API, as vLLM
//! and SGLang serve the model, so that DeepRead's remote engine (and any OpenAI client) can read pages on
//! another machine's GPU.
//!
//! Every request's page goes into ONE long-running [`Recognizer::read`] on a thread of its own (see
//! [`bridge`]): the engine's continuous batching reads the pages of all clients together, each in a
//! decode slot of its own, and each page's text streams back to the client that sent it.
//!
//! [`Recognizer::read`]: deepread_core::recognizer::Recognizer::read

mod auth;
mod bridge;
mod error;
mod reply;
mod request;
mod routes;
mod sse;

use std::future::Future;
use std::sync::Arc;

use deepread_core::recognizer::DeepSeekOcr2;
use tokio::net::TcpListener;

pub use bridge::PagesServed;

/// The environment variable holding the API key clients must send (`Authorization: Bearer KEY`).
pub const API_KEY_ENV: &str = "DEEPREAD_SERVE_API_KEY";
/// The name vLLM and SGLang serve the model under by default.
pub const DEFAULT_MODEL_NAME: &str = "deepseek-ai/DeepSeek-OCR-2";
/// Pages that may wait for the engine before requests are turned away with 429.
pub const DEFAULT_QUEUE: usize = 64;
/// A request body larger than this is refused with 413: a page image of 144 dpi is a few MB as PNG.
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// How the server answers.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The model name `/v1/models` lists and requests name.
    pub served_model_name: String,
    /// Pages accepted and not yet taken by the engine (prepared or being prepared); one more is a 429.
    pub queue: usize,
    /// When set, every `/v1` request needs `Authorization: Bearer <key>`.
    pub api_key: Option<String>,
    pub max_body_bytes: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            served_model_name: DEFAULT_MODEL_NAME.to_owned(),
            queue: DEFAULT_QUEUE,
            api_key: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("could not start the reading thread: {0}")]
    ReadThread(#[source] std::io::Error),
    #[error("the HTTP server failed: {0}")]
    Http(#[source] std::io::Error),
}

/// Serves `model` on `listener` until `shutdown` completes. Then it takes no new connection, stops the pages
/// being read (their clients get an error), and returns once every connection has closed and the reading
/// thread has ended.
pub async fn serve(
    listener: TcpListener,
    model: DeepSeekOcr2,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let state = Arc::new(routes::AppState::new(model, options).map_err(ServeError::ReadThread)?);
    let app = routes::router(Arc::clone(&state));
    let closing = Arc::clone(&state);
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            tracing::info!("shutting down: no new pages, the pages being read are stopped");
            closing.reader.close();
        })
        .await;
    state.reader.close();
    let reader = Arc::clone(&state);
    // Joining blocks until the engine has let go of its pages: not on the runtime's threads.
    let _ = tokio::task::spawn_blocking(move || reader.reader.join()).await;
    served.map_err(ServeError::Http)
}
