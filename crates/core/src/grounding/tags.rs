//! The special strings the model writes around its layout blocks.

/// Opens a block's label.
pub const REF: &str = "<|ref|>";
/// Closes a block's label.
pub const REF_END: &str = "<|/ref|>";
/// Opens a block's box list.
pub const DET: &str = "<|det|>";
/// Closes a block's box list.
pub const DET_END: &str = "<|/det|>";
/// The end-of-sentence token as decoded text (full-width bars, as in the tokenizer).
pub const END_OF_SENTENCE: &str = "<｜end▁of▁sentence｜>";

/// A special string found in the model's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    Ref,
    RefEnd,
    Det,
    DetEnd,
    EndOfSentence,
}

impl Tag {
    const ALL: [Tag; 5] = [
        Tag::Ref,
        Tag::RefEnd,
        Tag::Det,
        Tag::DetEnd,
        Tag::EndOfSentence,
    ];

    pub fn text(self) -> &'static str {
        match self {
            Tag::Ref => REF,
            Tag::RefEnd => REF_END,
            Tag::Det => DET,
            Tag::DetEnd => DET_END,
            Tag::EndOfSentence => END_OF_SENTENCE,
        }
    }
}

/// What the text at a `<` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagMatch {
    /// A whole tag starts here.
    Tag(Tag),
    /// The text ends before a tag could be told apart: wait for more.
    Partial,
    /// Ordinary text (e.g. HTML such as `<td>`).
    NotTag,
}

/// Classifies the text starting at a `<`. `more_may_come` is false once the output has ended,
/// when an unfinished tag is just text.
pub fn tag_at(text: &str, more_may_come: bool) -> TagMatch {
    let mut partial = false;
    for tag in Tag::ALL {
        let t = tag.text();
        if text.starts_with(t) {
            return TagMatch::Tag(tag);
        }
        if text.len() < t.len() && t.as_bytes().starts_with(text.as_bytes()) {
            partial = true;
        }
    }
    if partial && more_may_come {
        TagMatch::Partial
    } else {
        TagMatch::NotTag
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_tags_are_recognised() {
        assert_eq!(tag_at("<|ref|>title", true), TagMatch::Tag(Tag::Ref));
        assert_eq!(tag_at("<|/det|>\n", true), TagMatch::Tag(Tag::DetEnd));
        assert_eq!(
            tag_at("<｜end▁of▁sentence｜>", true),
            TagMatch::Tag(Tag::EndOfSentence)
        );
    }

    #[test]
    fn a_cut_tag_waits_only_while_more_may_come() {
        assert_eq!(tag_at("<|/d", true), TagMatch::Partial);
        assert_eq!(tag_at("<", true), TagMatch::Partial);
        // Deltas are whole characters, so the end-of-sentence string is cut between them.
        assert_eq!(tag_at("<｜end▁of", true), TagMatch::Partial);
        assert_eq!(tag_at("<|/d", false), TagMatch::NotTag);
    }

    #[test]
    fn html_is_not_a_tag() {
        assert_eq!(tag_at("<td>1</td>", true), TagMatch::NotTag);
        assert_eq!(tag_at("<|grounding|>", true), TagMatch::NotTag);
    }
}
