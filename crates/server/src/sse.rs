//! A page's events as server-sent events: a role chunk, a chunk per piece of text, the last chunk with its
//! finish reason, the usage chunk when asked for, then `data: [DONE]`. An engine failure ends the stream with
//! an error event (`data: {"error": …}`), as vLLM does once it has begun streaming.
//!
//! The stream owns the page's channel: when the client goes away the server drops the stream, and the read
//! loop stops the page at its next token.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use futures_core::Stream;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::bridge::{Finish, PageEvent};
use crate::error::ApiError;
use crate::reply::Reply;

/// Told when the channel closes without an end: the server shut down before the page was read.
pub const NOT_READ: &str = "the server stopped before the page was read";

/// The response streaming `events`.
pub fn response(
    reply: Reply,
    events: UnboundedReceiver<PageEvent>,
    include_usage: bool,
) -> Response {
    let stream = PageStream {
        pending: VecDeque::from([data(&reply.role_chunk())]),
        reply,
        events,
        include_usage,
        ended: false,
    };
    let mut response = Body::from_stream(stream).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

struct PageStream {
    reply: Reply,
    events: UnboundedReceiver<PageEvent>,
    include_usage: bool,
    /// Events written and not yet sent.
    pending: VecDeque<Bytes>,
    ended: bool,
}

impl PageStream {
    fn write(&mut self, event: Option<PageEvent>) {
        match event {
            Some(PageEvent::Text(text)) => {
                self.pending.push_back(data(&self.reply.text_chunk(&text)))
            }
            Some(PageEvent::Finished(finish)) => self.finish(&finish),
            Some(PageEvent::Failed(message)) => self.fail(ApiError::page_failed(message)),
            None => self.fail(ApiError::page_failed(NOT_READ)),
        }
    }

    fn finish(&mut self, finish: &Finish) {
        let last = self.reply.chunk(serde_json::json!({}), Some(finish.reason));
        self.pending.push_back(data(&last));
        if self.include_usage {
            self.pending
                .push_back(data(&self.reply.usage_chunk(finish)));
        }
        self.end();
    }

    fn fail(&mut self, error: ApiError) {
        tracing::warn!(message = %error.message, "the page's stream ends with an error");
        self.pending.push_back(data(&error.body()));
        self.end();
    }

    fn end(&mut self) {
        self.pending
            .push_back(Bytes::from_static(b"data: [DONE]\n\n"));
        self.ended = true;
    }
}

impl Stream for PageStream {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(bytes) = self.pending.pop_front() {
                return Poll::Ready(Some(Ok(bytes)));
            }
            if self.ended {
                return Poll::Ready(None);
            }
            match self.events.poll_recv(cx) {
                Poll::Ready(event) => self.write(event),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// One event: `data: <json>` and a blank line.
fn data(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

#[cfg(test)]
mod tests {
    use tokio::sync::mpsc::unbounded_channel;

    use super::*;
    use crate::bridge::FinishReason;

    fn lines(events: Vec<PageEvent>, include_usage: bool) -> Vec<String> {
        let (sender, receiver) = unbounded_channel();
        for event in events {
            sender.send(event).unwrap();
        }
        drop(sender);
        let mut stream = PageStream {
            pending: VecDeque::new(),
            reply: Reply::new("m"),
            events: receiver,
            include_usage,
            ended: false,
        };
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut out = Vec::new();
        while let Poll::Ready(Some(Ok(bytes))) = Pin::new(&mut stream).poll_next(&mut cx) {
            out.push(String::from_utf8(bytes.to_vec()).unwrap());
        }
        out
    }

    fn json(event: &str) -> Value {
        serde_json::from_str(event.strip_prefix("data: ").unwrap().trim()).unwrap()
    }

    #[test]
    fn text_then_the_finish_the_usage_and_done() {
        let finish = Finish {
            reason: FinishReason::Length,
            prompt_tokens: 10,
            completion_tokens: 2,
        };
        let events = vec![
            PageEvent::Text("<|ref|>".into()),
            PageEvent::Text("a".into()),
            PageEvent::Finished(finish),
        ];
        let out = lines(events, true);
        assert_eq!(out.len(), 5);
        assert_eq!(json(&out[0])["choices"][0]["delta"]["content"], "<|ref|>");
        assert_eq!(json(&out[1])["object"], "chat.completion.chunk");
        assert_eq!(json(&out[2])["choices"][0]["finish_reason"], "length");
        assert_eq!(json(&out[3])["usage"]["total_tokens"], 12);
        assert_eq!(json(&out[3])["choices"], serde_json::json!([]));
        assert_eq!(out[4], "data: [DONE]\n\n");
        assert_eq!(
            lines(vec![PageEvent::Finished(finish)], false).len(),
            2,
            "no usage unless asked"
        );
    }

    #[test]
    fn a_failure_or_a_closed_channel_ends_with_an_error_event() {
        let out = lines(
            vec![
                PageEvent::Text("x".into()),
                PageEvent::Failed("device lost".into()),
            ],
            true,
        );
        assert_eq!(json(&out[1])["error"]["message"], "device lost");
        assert_eq!(out[2], "data: [DONE]\n\n");
        let out = lines(vec![], true);
        assert_eq!(json(&out[0])["error"]["message"], NOT_READ);
    }
}
