//! The optional API key: `Authorization: Bearer <key>` on every `/v1` request. Keys are compared as SHA-256
//! digests in constant time, so neither the time taken nor the key's length tells a guesser anything.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::routes::AppState;

/// The key's digest, kept instead of the key.
#[derive(Clone)]
pub struct ApiKey([u8; 32]);

impl ApiKey {
    pub fn new(key: &str) -> Self {
        ApiKey(Sha256::digest(key.as_bytes()).into())
    }

    fn admits(&self, given: &str) -> bool {
        let given: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        self.0.ct_eq(&given).into()
    }
}

/// Lets the request through when no key is set, or when it carries the key.
pub async fn require_key(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    match &state.api_key {
        Some(key) if !bearer(request.headers()).is_some_and(|given| key.admits(given)) => {
            tracing::info!(path = %request.uri().path(), "refused: no valid API key");
            // Read the body first (as far as the size limit): a connection closed on an unread page image
            // is reset, and the client would see a broken pipe instead of this answer.
            let _ = axum::body::to_bytes(request.into_body(), state.max_body_bytes()).await;
            ApiError::unauthorized().into_response()
        }
        _ => next.run(request).await,
    }
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in any case, as HTTP has it).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn only_the_key_itself_is_admitted() {
        let key = ApiKey::new("s3cret");
        assert!(key.admits("s3cret"));
        assert!(!key.admits("s3cre"));
        assert!(!key.admits("s3cret "));
        assert!(!key.admits(""));
    }

    #[test]
    fn the_token_is_read_from_a_bearer_header_only() {
        assert_eq!(bearer(&headers("Bearer abc")), Some("abc"));
        assert_eq!(bearer(&headers("bearer  abc ")), Some("abc"));
        assert_eq!(bearer(&headers("Basic abc")), None);
        assert_eq!(bearer(&headers("abc")), None);
        assert_eq!(bearer(&HeaderMap::new()), None);
    }
}
