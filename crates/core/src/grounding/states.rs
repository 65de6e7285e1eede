//! One step of the parser in each syntactic state. A step either classifies some text and
//! returns true, or finds that it needs more text and returns false.

use super::boxes::parse_boxes;
use super::parser::{Parser, Pending, State, UNLABELLED};
use super::segment::SegmentKind;
use super::tags::{tag_at, Tag, TagMatch};

/// Longest label read before the `<|ref|>` is taken as unclosed (real labels are short words).
const LABEL_MAX: usize = 64;
/// Longest text kept as a label when its `<|/ref|>` never came.
const PLAUSIBLE_LABEL_MAX: usize = 32;
/// Longest box list read before the `<|det|>` is taken as unclosed (40 boxes fit).
const BOXES_MAX: usize = 1024;

/// Characters a box list is written with; an unclosed list keeps only its prefix of these.
fn is_box_list_byte(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b'[' | b']' | b',' | b' ' | b'.' | b'+' | b'-')
}

fn is_plausible_label(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= PLAUSIBLE_LABEL_MAX
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The largest char boundary of `text` at or before `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Where a short field (label or box list) stops: at the first `<` or newline, or at `cap` bytes.
enum FieldEnd {
    /// A `<` or newline at this offset into the field.
    At(usize),
    /// Nothing within `cap` bytes: the field overflows.
    Overflow,
    /// The text ends before the field does.
    Open,
}

fn field_end(rest: &str, cap: usize) -> FieldEnd {
    match rest.find(['<', '\n']) {
        Some(i) if i <= cap => FieldEnd::At(i),
        Some(_) => FieldEnd::Overflow,
        None if rest.len() > cap => FieldEnd::Overflow,
        None => FieldEnd::Open,
    }
}

impl Parser {
    pub(crate) fn step(&mut self, more_may_come: bool) -> bool {
        match self.state {
            State::Content => self.step_content(more_may_come),
            State::Label => self.step_label(more_may_come),
            State::AfterLabel => self.step_after_label(more_may_come),
            State::Boxes => self.step_boxes(more_may_come),
            State::AfterBoxes => self.step_after_boxes(more_may_come),
        }
    }

    fn step_content(&mut self, more_may_come: bool) -> bool {
        let from = self.scan_from.max(self.pos);
        let Some(offset) = self.raw[from..].find('<') else {
            if more_may_come {
                self.hold_trailing_newlines(from, self.raw.len());
            } else {
                self.content_then_separator(self.raw.len());
            }
            return false;
        };
        let at = from + offset;
        match tag_at(&self.raw[at..], more_may_come) {
            TagMatch::NotTag => {
                self.content_until(at + 1);
                true
            }
            TagMatch::Partial => {
                self.hold_trailing_newlines(from, at);
                false
            }
            TagMatch::Tag(tag) => {
                self.content_tag(at, tag);
                true
            }
        }
    }

    /// Classifies content up to `end` but holds back its trailing newlines, which may yet end
    /// the block; remembers that they need no rescan (`raw[pos..from]` holds only newlines).
    fn hold_trailing_newlines(&mut self, from: usize, end: usize) {
        let fresh = self.raw[from..end].trim_end_matches('\n');
        let body_end = if fresh.is_empty() {
            self.pos
        } else {
            from + fresh.len()
        };
        self.content_until(body_end);
        self.scan_from = end;
    }

    /// A tag met while reading content.
    fn content_tag(&mut self, at: usize, tag: Tag) {
        let end = at + tag.text().len();
        match tag {
            Tag::Ref | Tag::Det => {
                self.content_then_separator(at);
                self.close_open_block();
                let mut pending = Pending {
                    raw_start: at,
                    ..Pending::default()
                };
                if tag == Tag::Det {
                    pending.label = Some(UNLABELLED.to_owned());
                    pending.warnings.push("<|det|> without <|ref|>".to_owned());
                }
                self.pending = Some(pending);
                let id = self.pending_id();
                self.mark(SegmentKind::Tag(tag), end, Some(id));
                self.state = if tag == Tag::Ref {
                    State::Label
                } else {
                    State::Boxes
                };
            }
            Tag::EndOfSentence => {
                self.content_then_separator(at);
                let block = self.open_id();
                self.mark(SegmentKind::Tag(tag), end, block);
                self.close_open_block();
            }
            Tag::RefEnd | Tag::DetEnd => {
                // A closing tag with nothing to close: drop it, keep the block going.
                self.content_until(at);
                self.warn_open_block(format!("stray {}", tag.text()));
                let block = self.open_id();
                self.mark(SegmentKind::Tag(tag), end, block);
            }
        }
    }

    fn step_label(&mut self, more_may_come: bool) -> bool {
        let rest = &self.raw[self.pos..];
        let stop = match field_end(rest, LABEL_MAX) {
            FieldEnd::Open if more_may_come => return false,
            FieldEnd::Open => rest.len(),
            FieldEnd::Overflow => floor_boundary(rest, LABEL_MAX),
            FieldEnd::At(i) => {
                match tag_at(&rest[i..], more_may_come) {
                    TagMatch::Partial => return false,
                    TagMatch::Tag(Tag::RefEnd) => {
                        let label = rest[..i].to_owned();
                        let id = self.pending_id();
                        self.mark(SegmentKind::Label, self.pos + i, Some(id));
                        self.mark(
                            SegmentKind::Tag(Tag::RefEnd),
                            self.pos + Tag::RefEnd.text().len(),
                            Some(id),
                        );
                        if let Some(p) = self.pending.as_mut() {
                            p.label = Some(label);
                        }
                        self.state = State::AfterLabel;
                        return true;
                    }
                    // A newline, another tag or plain `<`: the label was never closed.
                    _ => i,
                }
            }
        };
        self.abort_label(self.pos + stop);
        true
    }

    /// The `<|/ref|>` never came: a short word is still taken as the label, anything else is
    /// content of an unlabelled block.
    fn abort_label(&mut self, end: usize) {
        let candidate = &self.raw[self.pos..end];
        let id = self.pending_id();
        if is_plausible_label(candidate) {
            let label = candidate.to_owned();
            self.mark(SegmentKind::Label, end, Some(id));
            if let Some(p) = self.pending.as_mut() {
                p.label = Some(label);
            }
        }
        self.open_pending(Vec::new(), Some("unclosed <|ref|>".to_owned()));
        self.state = State::Content;
    }

    fn step_after_label(&mut self, more_may_come: bool) -> bool {
        let rest = &self.raw[self.pos..];
        if rest.is_empty() && more_may_come {
            return false;
        }
        match tag_at(rest, more_may_come) {
            TagMatch::Partial => false,
            TagMatch::Tag(Tag::Det) => {
                let id = self.pending_id();
                self.mark(
                    SegmentKind::Tag(Tag::Det),
                    self.pos + Tag::Det.text().len(),
                    Some(id),
                );
                self.state = State::Boxes;
                true
            }
            _ => {
                self.open_pending(Vec::new(), Some("no <|det|> after <|ref|>".to_owned()));
                self.state = State::Content;
                true
            }
        }
    }

    fn step_boxes(&mut self, more_may_come: bool) -> bool {
        let rest = &self.raw[self.pos..];
        let stop = match field_end(rest, BOXES_MAX) {
            FieldEnd::Open if more_may_come => return false,
            FieldEnd::Open => rest.len(),
            FieldEnd::Overflow => floor_boundary(rest, BOXES_MAX),
            FieldEnd::At(i) => match tag_at(&rest[i..], more_may_come) {
                TagMatch::Partial => return false,
                TagMatch::Tag(Tag::DetEnd) => {
                    self.close_boxes(self.pos + i);
                    return true;
                }
                _ => i,
            },
        };
        self.abort_boxes(self.pos + stop);
        true
    }

    /// `<|/det|>` at `end`: the block opens with the boxes it lists.
    fn close_boxes(&mut self, end: usize) {
        let id = self.pending_id();
        let parsed = parse_boxes(&self.raw[self.pos..end]);
        self.mark(SegmentKind::Boxes, end, Some(id));
        self.mark(
            SegmentKind::Tag(Tag::DetEnd),
            end + Tag::DetEnd.text().len(),
            Some(id),
        );
        match parsed {
            Ok(boxes) => self.open_pending(boxes, None),
            Err(e) => self.open_pending(Vec::new(), Some(e.to_string())),
        }
        self.state = State::AfterBoxes;
    }

    /// The `<|/det|>` never came before `end`: what looks like a box list is the payload, the
    /// rest is the block's content, so no text is lost.
    fn abort_boxes(&mut self, end: usize) {
        let id = self.pending_id();
        let payload_len = self.raw.as_bytes()[self.pos..end]
            .iter()
            .take_while(|b| is_box_list_byte(**b))
            .count();
        let payload_end = self.pos + payload_len;
        let parsed = parse_boxes(&self.raw[self.pos..payload_end]);
        self.mark(SegmentKind::Boxes, payload_end, Some(id));
        let unclosed = "unclosed <|det|>".to_owned();
        match parsed {
            Ok(boxes) => self.open_pending(boxes, Some(unclosed)),
            Err(e) => self.open_pending(Vec::new(), Some(format!("{unclosed}: {e}"))),
        }
        self.state = State::Content;
    }

    fn step_after_boxes(&mut self, more_may_come: bool) -> bool {
        match self.raw.as_bytes().get(self.pos) {
            None if more_may_come => return false,
            Some(b'\n') => {
                let block = self.open_id();
                self.mark(SegmentKind::Separator, self.pos + 1, block);
            }
            _ => {}
        }
        self.state = State::Content;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plausible_label_is_a_short_word() {
        assert!(is_plausible_label("equation"));
        assert!(is_plausible_label("image_caption"));
        assert!(!is_plausible_label(""));
        assert!(!is_plausible_label("a label"));
        assert!(!is_plausible_label(&"x".repeat(PLAUSIBLE_LABEL_MAX + 1)));
    }

    #[test]
    fn floor_boundary_never_splits_a_character() {
        let text = "aé";
        assert_eq!(floor_boundary(text, 2), 1);
        assert_eq!(floor_boundary(text, 3), 3);
        assert_eq!(floor_boundary(text, 10), 3);
    }
}
