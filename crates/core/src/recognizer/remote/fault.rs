//! What goes wrong between DeepRead and a remote server, each told in a sentence that names the
//! server, and the server's own words where it sent some.

use std::io::ErrorKind;
use std::time::{Duration, SystemTime};

use serde_json::Value;
use ureq::http::Response;
use ureq::Body;

use super::Timeouts;

/// The most of an error reply's text that is read and shown: enough for any server's sentence.
const ERROR_TEXT_LIMIT: u64 = 16 * 1024;
const ERROR_TEXT_SHOWN: usize = 300;

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("{endpoint} is not a server address: {reason}")]
    BadEndpoint { endpoint: String, reason: String },
    #[error(
        "{endpoint} is plain http to another machine: every page and its text would cross the \
         network unencrypted; use https, or allow plain http explicitly"
    )]
    PlainHttp { endpoint: String },
    #[error("no model name to ask {endpoint} for (the name the server serves, such as deepseek-ai/DeepSeek-OCR-2)")]
    NoModel { endpoint: String },
    #[error("{endpoint} refused the connection (is the server running, on that port?)")]
    Refused { endpoint: String },
    #[error("{endpoint} could not be reached: {detail}")]
    Unreachable { endpoint: String, detail: String },
    #[error("{endpoint} did not {what} within {} s", .after.as_secs_f32())]
    Timeout {
        endpoint: String,
        what: &'static str,
        after: Duration,
    },
    #[error("{endpoint} answered {status}{hint}: {message}")]
    Http {
        endpoint: String,
        status: u16,
        hint: &'static str,
        message: String,
    },
    #[error("{endpoint} was still busy ({status}) after {attempts} attempts")]
    Busy {
        endpoint: String,
        status: u16,
        attempts: usize,
    },
    #[error("{endpoint} broke off the reply before its end ({detail}); did the server stop?")]
    Cut { endpoint: String, detail: String },
    #[error("{endpoint} sent what is not a chat-completions stream: {detail}")]
    Malformed { endpoint: String, detail: String },
    #[error("{endpoint} did not answer GET /models with a list of models: {detail}")]
    NotModelList { endpoint: String, detail: String },
    #[error("{endpoint} reported an error while writing the page: {message}")]
    Server { endpoint: String, message: String },
    #[error(
        "{endpoint} sent more than {limit} bytes of text for one page, more than {max_tokens} tokens \
         can hold (does the server ignore max_tokens?)"
    )]
    Oversized {
        endpoint: String,
        limit: usize,
        max_tokens: usize,
    },
    #[error("the page image could not be encoded for {endpoint}: {detail}")]
    Encode { endpoint: String, detail: String },
}

/// A failure before the reply began (connecting, sending, waiting for its headers), in words that
/// name the server.
pub fn transport(endpoint: &str, error: ureq::Error, timeouts: &Timeouts) -> RemoteError {
    let endpoint = endpoint.to_owned();
    match error {
        ureq::Error::Timeout(kind) => timeout(endpoint, kind, timeouts),
        ureq::Error::Io(e) if e.kind() == ErrorKind::ConnectionRefused => {
            RemoteError::Refused { endpoint }
        }
        ureq::Error::Io(e) => match unwrap_ureq(e) {
            Ok(inner) => transport(&endpoint, inner, timeouts),
            Err(e) => RemoteError::Unreachable {
                endpoint,
                detail: e.to_string(),
            },
        },
        ureq::Error::HostNotFound => RemoteError::Unreachable {
            endpoint,
            detail: "its name does not resolve".into(),
        },
        other => RemoteError::Unreachable {
            endpoint,
            detail: other.to_string(),
        },
    }
}

/// A failure while the reply streamed in: the server went quiet too long, or the connection broke.
pub fn broken_stream(endpoint: &str, error: std::io::Error, timeouts: &Timeouts) -> RemoteError {
    let endpoint = endpoint.to_owned();
    if matches!(error.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) {
        return timeout(endpoint, ureq::Timeout::PerRead, timeouts);
    }
    match unwrap_ureq(error) {
        Ok(ureq::Error::Timeout(kind)) => timeout(endpoint, kind, timeouts),
        Ok(other) => RemoteError::Cut {
            endpoint,
            detail: other.to_string(),
        },
        Err(e) => RemoteError::Cut {
            endpoint,
            detail: e.to_string(),
        },
    }
}

fn timeout(endpoint: String, kind: ureq::Timeout, timeouts: &Timeouts) -> RemoteError {
    let (what, after) = match kind {
        ureq::Timeout::Resolve | ureq::Timeout::Connect => {
            ("accept a connection", timeouts.connect)
        }
        _ => ("send anything", timeouts.idle),
    };
    RemoteError::Timeout {
        endpoint,
        what,
        after,
    }
}

/// ureq's body reader wraps its own errors (a read timeout among them) in io errors.
fn unwrap_ureq(error: std::io::Error) -> Result<ureq::Error, std::io::Error> {
    if !error
        .get_ref()
        .is_some_and(|inner| inner.is::<ureq::Error>())
    {
        return Err(error);
    }
    match error
        .into_inner()
        .map(|inner| inner.downcast::<ureq::Error>())
    {
        Some(Ok(inner)) => Ok(*inner),
        Some(Err(other)) => Err(std::io::Error::other(other)),
        None => Err(std::io::Error::other("unknown")),
    }
}

/// A reply that is not 2xx, with the server's message read from its body.
pub fn status(endpoint: &str, response: &mut Response<Body>) -> RemoteError {
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .with_config()
        .limit(ERROR_TEXT_LIMIT)
        .read_to_string()
        .unwrap_or_default();
    RemoteError::Http {
        endpoint: endpoint.to_owned(),
        status,
        hint: hint(status),
        message: server_message(&body),
    }
}

fn hint(status: u16) -> &'static str {
    match status {
        401 | 403 => " (the server wants an API key, or refused the one given)",
        404 => " (is the model name right, and the URL the API's base, such as …/v1?)",
        _ => "",
    }
}

/// The sentence an OpenAI-compatible server puts in an error body: `{"error": {"message"}}` (OpenAI,
/// vLLM), `{"message"}` (older vLLM, SGLang), `{"detail"}` (FastAPI), else the text itself, trimmed.
pub fn server_message(body: &str) -> String {
    let json: Option<Value> = serde_json::from_str(body).ok();
    let said = json.as_ref().and_then(|json| {
        [
            json.pointer("/error/message"),
            json.get("error").filter(|e| e.is_string()),
            json.get("message"),
            json.get("detail"),
        ]
        .into_iter()
        .flatten()
        .find_map(|v| {
            v.as_str()
                .map(str::to_owned)
                .or_else(|| (!v.is_null()).then(|| v.to_string()))
        })
    });
    let text = said.unwrap_or_else(|| body.to_owned());
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.char_indices().nth(ERROR_TEXT_SHOWN) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None if text.is_empty() => "(no message)".to_owned(),
        None => text,
    }
}

/// A `Retry-After` as the wait it asks for: delay-seconds, or an HTTP date (RFC 9110 §10.2.3), which a date
/// already past makes no wait at all.
pub fn retry_after(response: &Response<Body>) -> Option<Duration> {
    let value = response.headers().get("retry-after")?.to_str().ok()?;
    retry_wait(value.trim(), SystemTime::now())
}

fn retry_wait(value: &str, now: SystemTime) -> Option<Duration> {
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_read_as_seconds_or_as_a_date() {
        // RFC 9110's own example date, 1994-11-06 08:49:37 UTC, is 784111777 s after the epoch.
        let date = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        let example = "Sun, 06 Nov 1994 08:49:37 GMT";
        let before = date - Duration::from_secs(90);
        assert_eq!(retry_wait("120", date), Some(Duration::from_secs(120)));
        assert_eq!(retry_wait(example, before), Some(Duration::from_secs(90)));
        assert_eq!(
            retry_wait(example, date + Duration::from_secs(5)),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_wait("soon", date), None);
        assert_eq!(retry_wait("-3", date), None);
    }

    #[test]
    fn the_servers_own_sentence_is_found_in_each_error_shape() {
        let cases = [
            (
                r#"{"error":{"message":"The model `x` does not exist.","type":"NotFoundError","code":404}}"#,
                "The model `x` does not exist.",
            ),
            (
                r#"{"object":"error","message":"bad key","type":"Unauthorized","code":401}"#,
                "bad key",
            ),
            (r#"{"detail":"Not Found"}"#, "Not Found"),
            (r#"{"error":"Unauthorized"}"#, "Unauthorized"),
            ("  upstream\n connect error  ", "upstream connect error"),
            ("", "(no message)"),
        ];
        for (body, said) in cases {
            assert_eq!(server_message(body), said, "{body}");
        }
        let long = "x".repeat(5000);
        assert_eq!(server_message(&long).chars().count(), ERROR_TEXT_SHOWN + 1);
    }
}
