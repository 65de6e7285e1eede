//! A streamed chat completion read as it arrives: server-sent events (`data: {...}` lines, a blank
//! line between events, `data: [DONE]` at the end), each chunk's text delta, finish reason and usage.

use std::io::{BufRead, Read};

use serde::Deserialize;
use serde_json::Value;

/// What one chunk of the stream says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    /// Why the server stopped writing: `stop` (end of sentence), `length` (`max_tokens`), or another.
    Finish(String),
    Usage(Usage),
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct Usage {
    pub prompt_tokens: Option<usize>,
    pub completion_tokens: Option<usize>,
}

/// A stream that cannot be read as chat-completion chunks.
#[derive(Debug)]
pub enum StreamFault {
    Io(std::io::Error),
    /// Not what an OpenAI-compatible server sends, in words.
    Malformed(String),
    /// The server reported an error inside the stream (vLLM does, once it has begun streaming).
    Server(String),
    /// One line longer than the whole reply may be.
    LineTooLong,
}

/// The payload of an event: a chunk, or the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Chunk(String),
    Done,
}

/// Server-sent events from `reader`, no line longer than `line_limit` bytes.
pub struct EventStream<R> {
    reader: R,
    line: Vec<u8>,
    line_limit: usize,
}

impl<R: BufRead> EventStream<R> {
    pub fn new(reader: R, line_limit: usize) -> Self {
        EventStream {
            reader,
            line: Vec::new(),
            line_limit,
        }
    }

    /// The next event's data; `None` once the connection ends. An event cut off by the end of the
    /// connection still counts: the caller judges whether the stream was complete.
    pub fn next_event(&mut self) -> Result<Option<Event>, StreamFault> {
        let mut data: Option<String> = None;
        loop {
            let Some(line) = self.next_line()? else {
                return Ok(data.map(event));
            };
            if line.is_empty() {
                match data.take() {
                    Some(data) => return Ok(Some(event(data))),
                    None => continue,
                }
            }
            // Comments (`: keep-alive`) and the fields a chat stream does not use (event, id, retry).
            let Some(value) = line.strip_prefix("data:") else {
                continue;
            };
            let value = value.strip_prefix(' ').unwrap_or(value);
            match &mut data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => data = Some(value.to_owned()),
            }
        }
    }

    /// One line without its ending (`\n` or `\r\n`); `None` at the end of the connection.
    fn next_line(&mut self) -> Result<Option<String>, StreamFault> {
        self.line.clear();
        let limit = self.line_limit as u64 + 1;
        let read = (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut self.line)
            .map_err(StreamFault::Io)?;
        if read == 0 {
            return Ok(None);
        }
        if self.line.len() > self.line_limit {
            return Err(StreamFault::LineTooLong);
        }
        while matches!(self.line.last(), Some(b'\n' | b'\r')) {
            self.line.pop();
        }
        String::from_utf8(std::mem::take(&mut self.line))
            .map(Some)
            .map_err(|_| StreamFault::Malformed("a line that is not UTF-8".into()))
    }
}

fn event(data: String) -> Event {
    if data.trim() == "[DONE]" {
        Event::Done
    } else {
        Event::Chunk(data)
    }
}

#[derive(Deserialize)]
struct Chunk {
    choices: Option<Vec<Choice>>,
    usage: Option<Usage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    content: Option<String>,
}

/// What a chunk's JSON says: its first choice's text and finish reason, and the usage (which comes in
/// a chunk of its own, with no choices, when `include_usage` was asked for).
pub fn parse_chunk(data: &str) -> Result<Vec<Piece>, StreamFault> {
    let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
        StreamFault::Malformed(format!("a chunk that is not chat-completion JSON ({e})"))
    })?;
    if let Some(error) = chunk.error {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| error.to_string(), str::to_owned);
        return Err(StreamFault::Server(message));
    }
    let mut pieces = Vec::new();
    match (&chunk.choices, chunk.usage) {
        (None, None) => return Err(StreamFault::Malformed("a chunk without choices".into())),
        (_, Some(usage)) => pieces.push(Piece::Usage(usage)),
        (Some(_), None) => {}
    }
    if let Some(choice) = chunk.choices.into_iter().flatten().next() {
        let text = choice.delta.and_then(|d| d.content).unwrap_or_default();
        if !text.is_empty() {
            pieces.insert(0, Piece::Text(text));
        }
        if let Some(reason) = choice.finish_reason {
            pieces.push(Piece::Finish(reason));
        }
    }
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(wire: &str) -> Vec<Event> {
        let mut stream = EventStream::new(wire.as_bytes(), 1024);
        std::iter::from_fn(|| stream.next_event().unwrap()).collect()
    }

    #[test]
    fn events_are_split_on_blank_lines_with_comments_and_other_fields_skipped() {
        let wire = ": keep-alive\r\n\r\ndata: {\"a\":1}\r\n\r\nevent: x\nid: 4\ndata:{\"b\":2}\n\ndata: one\ndata: two\n\ndata: [DONE]\n\n";
        assert_eq!(
            events(wire),
            [
                Event::Chunk("{\"a\":1}".into()),
                Event::Chunk("{\"b\":2}".into()),
                Event::Chunk("one\ntwo".into()),
                Event::Done,
            ]
        );
        assert_eq!(events("data: {\"cut\""), [Event::Chunk("{\"cut\"".into())]);
    }

    #[test]
    fn a_line_longer_than_the_limit_stops_the_stream() {
        let wire = format!("data: {}\n\n", "x".repeat(2000));
        let mut stream = EventStream::new(wire.as_bytes(), 1024);
        assert!(matches!(stream.next_event(), Err(StreamFault::LineTooLong)));
    }

    #[test]
    fn chunks_give_their_text_finish_reason_and_usage() {
        let text = r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"<|ref|>title<|/ref|>"},"finish_reason":null}]}"#;
        assert_eq!(
            parse_chunk(text).unwrap(),
            [Piece::Text("<|ref|>title<|/ref|>".into())]
        );
        let end = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
        assert_eq!(parse_chunk(end).unwrap(), [Piece::Finish("stop".into())]);
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":950,"completion_tokens":77,"total_tokens":1027}}"#;
        assert_eq!(
            parse_chunk(usage).unwrap(),
            [Piece::Usage(Usage {
                prompt_tokens: Some(950),
                completion_tokens: Some(77),
            })]
        );
    }

    #[test]
    fn what_is_not_a_chunk_is_a_fault() {
        assert!(matches!(
            parse_chunk("not json"),
            Err(StreamFault::Malformed(_))
        ));
        assert!(matches!(parse_chunk("{}"), Err(StreamFault::Malformed(_))));
        assert!(matches!(parse_chunk("[1]"), Err(StreamFault::Malformed(_))));
        let error = r#"{"error":{"message":"CUDA out of memory","code":500}}"#;
        assert!(
            matches!(parse_chunk(error), Err(StreamFault::Server(m)) if m == "CUDA out of memory")
        );
    }
}
