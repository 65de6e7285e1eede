//! Errors as OpenAI's API writes them: `{"error": {"message", "type", "code"}}` with the HTTP status that
//! says the same.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// Seconds a client turned away with 429 is asked to wait: about what a page takes on a GPU.
pub const RETRY_AFTER_SECONDS: u64 = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    /// OpenAI's error type: `invalid_request_error`, `authentication_error`, `server_error`…
    pub kind: &'static str,
    /// A short machine-readable name of what went wrong.
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            code,
            message: message.into(),
        }
    }

    pub fn unauthorized() -> Self {
        ApiError {
            status: StatusCode::UNAUTHORIZED,
            kind: "authentication_error",
            code: "invalid_api_key",
            message: "this server needs an API key: send `Authorization: Bearer <key>`".into(),
        }
    }

    pub fn unknown_model(asked: &str, served: &str) -> Self {
        ApiError {
            status: StatusCode::NOT_FOUND,
            kind: "invalid_request_error",
            code: "model_not_found",
            message: format!(
                "the model `{asked}` does not exist here; this server serves `{served}`"
            ),
        }
    }

    pub fn not_found() -> Self {
        ApiError {
            status: StatusCode::NOT_FOUND,
            kind: "invalid_request_error",
            code: "not_found",
            message:
                "no such route: this server answers /health, /v1/models and /v1/chat/completions"
                    .into(),
        }
    }

    pub fn queue_full(queue: usize) -> Self {
        ApiError {
            status: StatusCode::TOO_MANY_REQUESTS,
            kind: "rate_limit_error",
            code: "queue_full",
            message: format!(
                "{queue} pages are already waiting for the engine; try again in {RETRY_AFTER_SECONDS} s"
            ),
        }
    }

    pub fn shutting_down() -> Self {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            kind: "server_error",
            code: "shutting_down",
            message: "the server is shutting down".into(),
        }
    }

    /// The engine failed on the page.
    pub fn page_failed(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "server_error",
            code: "page_failed",
            message: message.into(),
        }
    }

    pub fn too_large(limit: usize) -> Self {
        ApiError {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            kind: "invalid_request_error",
            code: "body_too_large",
            message: format!("the body is larger than this server's limit of {limit} bytes"),
        }
    }

    /// The body as OpenAI's clients parse it (also the payload of an error event in a stream).
    pub fn body(&self) -> serde_json::Value {
        json!({"error": {"message": self.message, "type": self.kind, "code": self.code}})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        let headers = response.headers_mut();
        match self.status {
            StatusCode::TOO_MANY_REQUESTS => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
            }
            StatusCode::UNAUTHORIZED => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            _ => {}
        }
        response
    }
}
