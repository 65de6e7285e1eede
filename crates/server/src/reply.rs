//! The JSON of a reply, as OpenAI and vLLM write it: `chat.completion.chunk` objects for a stream, one
//! `chat.completion` otherwise.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::bridge::{Finish, FinishReason};

/// What every chunk of one reply repeats.
#[derive(Debug, Clone)]
pub struct Reply {
    id: String,
    created: u64,
    model: String,
}

impl Reply {
    pub fn new(model: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let created = unix_seconds();
        Reply {
            id: format!(
                "chatcmpl-{created:x}{:06x}",
                NEXT.fetch_add(1, Ordering::Relaxed)
            ),
            created,
            model: model.to_owned(),
        }
    }

    /// A stream's chunk with `delta` and, on the last, why the page ended.
    pub fn chunk(&self, delta: Value, finish: Option<FinishReason>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "delta": delta,
                "logprobs": null,
                "finish_reason": finish.map(reason),
            }],
        })
    }

    /// The first chunk: who speaks.
    pub fn role_chunk(&self) -> Value {
        self.chunk(json!({"role": "assistant", "content": ""}), None)
    }

    pub fn text_chunk(&self, text: &str) -> Value {
        self.chunk(json!({"content": text}), None)
    }

    /// The chunk `stream_options.include_usage` asks for, after the last one: no choices, the usage.
    pub fn usage_chunk(&self, finish: &Finish) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": usage(finish),
        })
    }

    /// The whole reply of a request that did not ask for a stream.
    pub fn completion(&self, text: &str, finish: &Finish) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": null,
                "finish_reason": reason(finish.reason),
            }],
            "usage": usage(finish),
        })
    }
}

fn reason(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
    }
}

fn usage(finish: &Finish) -> Value {
    json!({
        "prompt_tokens": finish.prompt_tokens,
        "completion_tokens": finish.completion_tokens,
        "total_tokens": finish.prompt_tokens + finish.completion_tokens,
    })
}

pub fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}
