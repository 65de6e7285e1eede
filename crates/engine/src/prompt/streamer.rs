//! Generated ids → text deltas for streaming.
//!
//! Byte-level BPE can split one character's UTF-8 bytes over several tokens, and decoding such a partial
//! run yields U+FFFD. The streamer holds tokens back until their text ends on a whole character, then
//! emits it and starts afresh: the byte-level decoder maps tokens to bytes independently, so decoding
//! whole-character runs one after another gives exactly the decode of all ids at once.

use super::{PromptError, Tokenizer};

const REPLACEMENT: char = '\u{FFFD}';

pub struct TextStreamer<'a> {
    tokenizer: &'a Tokenizer,
    /// Ids whose text is not emitted yet because it ends inside a character.
    pending: Vec<u32>,
}

impl<'a> TextStreamer<'a> {
    pub fn new(tokenizer: &'a Tokenizer) -> Self {
        Self {
            tokenizer,
            pending: Vec::new(),
        }
    }

    /// Feed one generated id; returns the new text (empty while a character is incomplete).
    pub fn push(&mut self, id: u32) -> Result<String, PromptError> {
        self.pending.push(id);
        let text = self.tokenizer.decode(&self.pending)?;
        if text.ends_with(REPLACEMENT) {
            return Ok(String::new());
        }
        self.pending.clear();
        Ok(text)
    }

    /// End of generation: whatever is held back, with U+FFFD for bytes that never formed a character.
    pub fn finish(&mut self) -> Result<String, PromptError> {
        let text = self.tokenizer.decode(&self.pending)?;
        self.pending.clear();
        Ok(text)
    }
}
