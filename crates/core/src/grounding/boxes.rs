//! The box list between `<|det|>` and `<|/det|>`: a Python list such as `[[x1, y1, x2, y2], ...]`.
//!
//! Read leniently (spaces anywhere, a trailing comma, a single flat box, signs, huge numbers) because
//! real outputs contain all of those; anything else makes the whole payload malformed, as it is
//! for the reference, which `eval`s the payload in one piece.

use thiserror::Error;

use crate::events::BoxNorm;

/// Why a box list could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BoxListError {
    #[error("box list is empty")]
    Empty,
    #[error("box {index} has {count} coordinates, not 4")]
    WrongArity { index: usize, count: usize },
    #[error("box list is malformed at byte {at}: {payload:?}")]
    Malformed { at: usize, payload: String },
}

/// Reads a box list, clamping every coordinate to 0..=999 and ordering each box's corners.
pub fn parse_boxes(payload: &str) -> Result<Vec<BoxNorm>, BoxListError> {
    let mut reader = Reader {
        bytes: payload.as_bytes(),
        at: 0,
    };
    let boxes = reader
        .box_list()
        .ok_or_else(|| malformed(payload, reader.at))??;
    reader.skip_space();
    if reader.at != reader.bytes.len() {
        return Err(malformed(payload, reader.at));
    }
    if boxes.is_empty() {
        return Err(BoxListError::Empty);
    }
    Ok(boxes)
}

fn malformed(payload: &str, at: usize) -> BoxListError {
    BoxListError::Malformed {
        at,
        payload: payload.to_owned(),
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

/// `None` is a syntax error at `reader.at`; `Some(Err)` a well-formed list of wrong shape.
type Parsed<T> = Option<Result<T, BoxListError>>;

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        if self.peek() == Some(byte) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// `[[..], [..]]`, `[]`, or one flat box `[x1, y1, x2, y2]`.
    fn box_list(&mut self) -> Parsed<Vec<BoxNorm>> {
        if !self.eat(b'[') {
            return None;
        }
        self.skip_space();
        match self.peek() {
            Some(b'[') => self.nested_boxes(),
            Some(b']') => {
                self.at += 1;
                Some(Ok(Vec::new()))
            }
            _ => {
                let numbers = self.numbers_until_close()?;
                Some(to_box(0, &numbers).map(|b| vec![b]))
            }
        }
    }

    fn nested_boxes(&mut self) -> Parsed<Vec<BoxNorm>> {
        let mut boxes = Vec::new();
        loop {
            if self.eat(b']') {
                return Some(Ok(boxes));
            }
            if !self.eat(b'[') {
                return None;
            }
            let numbers = self.numbers_until_close()?;
            match to_box(boxes.len(), &numbers) {
                Ok(b) => boxes.push(b),
                Err(e) => return Some(Err(e)),
            }
            if !self.eat(b',') && !matches!(self.peek_after_space(), Some(b']')) {
                return None;
            }
        }
    }

    fn peek_after_space(&mut self) -> Option<u8> {
        self.skip_space();
        self.peek()
    }

    /// Comma-separated integers up to and including the closing `]`.
    fn numbers_until_close(&mut self) -> Option<Vec<i64>> {
        let mut numbers = Vec::with_capacity(4);
        loop {
            if self.eat(b']') {
                return Some(numbers);
            }
            numbers.push(self.integer()?);
            if !self.eat(b',') && !matches!(self.peek_after_space(), Some(b']')) {
                return None;
            }
        }
    }

    fn integer(&mut self) -> Option<i64> {
        self.skip_space();
        let negative = match self.peek() {
            Some(b'-') => true,
            Some(b'+') => false,
            _ => {
                return self.digits();
            }
        };
        self.at += 1;
        self.digits().map(|v| if negative { -v } else { v })
    }

    /// Saturating, since any value past 999 is clamped anyway.
    fn digits(&mut self) -> Option<i64> {
        let start = self.at;
        let mut value: i64 = 0;
        while let Some(b) = self.peek().filter(u8::is_ascii_digit) {
            value = value.saturating_mul(10).saturating_add(i64::from(b - b'0'));
            self.at += 1;
        }
        (self.at > start).then_some(value)
    }
}

fn to_box(index: usize, numbers: &[i64]) -> Result<BoxNorm, BoxListError> {
    match *numbers {
        [x1, y1, x2, y2] => Ok(BoxNorm::from_model(x1, y1, x2, y2)),
        _ => Err(BoxListError::WrongArity {
            index,
            count: numbers.len(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(x1: u16, y1: u16, x2: u16, y2: u16) -> BoxNorm {
        BoxNorm { x1, y1, x2, y2 }
    }

    #[test]
    fn reads_the_usual_single_and_multiple_boxes() {
        assert_eq!(
            parse_boxes("[[60, 163, 597, 265]]"),
            Ok(vec![b(60, 163, 597, 265)])
        );
        assert_eq!(
            parse_boxes("[[1, 2, 3, 4], [5, 6, 7, 8]]"),
            Ok(vec![b(1, 2, 3, 4), b(5, 6, 7, 8)])
        );
    }

    #[test]
    fn clamps_and_orders_what_real_outputs_contain() {
        // From thukiy_R-G- captures: a negative y, x above 999 with x1 > x2, y2 = 1970.
        assert_eq!(
            parse_boxes("[[147, -463, 919, 504]]"),
            Ok(vec![b(147, 0, 919, 504)])
        );
        assert_eq!(
            parse_boxes("[[1200, 281, 465, 302]]"),
            Ok(vec![b(465, 281, 999, 302)])
        );
        assert_eq!(
            parse_boxes("[[120, 0, 380, 1970]]"),
            Ok(vec![b(120, 0, 380, 999)])
        );
        assert_eq!(
            parse_boxes("[[147,-552, 919, 579]]"),
            Ok(vec![b(147, 0, 919, 579)])
        );
    }

    #[test]
    fn is_lenient_with_spacing_flat_boxes_and_trailing_commas() {
        assert_eq!(
            parse_boxes(" [[390, 454, 710, 568]]"),
            Ok(vec![b(390, 454, 710, 568)])
        );
        assert_eq!(parse_boxes("[1,2,3,4]"), Ok(vec![b(1, 2, 3, 4)]));
        assert_eq!(parse_boxes("[[1,2,3,4],]"), Ok(vec![b(1, 2, 3, 4)]));
        assert_eq!(
            parse_boxes("[[+1, 2, 99999999999999999999999, 4]]"),
            Ok(vec![b(1, 2, 999, 4)])
        );
    }

    #[test]
    fn rejects_what_is_not_a_box_list() {
        for payload in [
            "[[44, raw 666, 501, 707]]",
            "[0.5]",
            "[[147,",
            "[[110, \\frac{1}{1+x^2}}",
            "",
            "[[1, 2, 3, 4]] trailing",
        ] {
            assert!(
                matches!(parse_boxes(payload), Err(BoxListError::Malformed { .. })),
                "{payload:?} was accepted"
            );
        }
        assert_eq!(
            parse_boxes("[[1, 2, 3]]"),
            Err(BoxListError::WrongArity { index: 0, count: 3 })
        );
        assert_eq!(parse_boxes("[]"), Err(BoxListError::Empty));
    }
}
