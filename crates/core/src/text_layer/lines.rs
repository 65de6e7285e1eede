//! Words into lines: words that share a baseline band and sit close enough to be one run of text.
//! A column gutter is wider than any word space, so lines never cross columns.

use deepread_pdf::{Rect, Word};

/// Largest gap between two words of one line, in ems. Justified text stretches spaces to about
/// 0.8 em; column gutters are 1.5 em and more.
const MAX_WORD_GAP_EM: f32 = 1.2;
/// How much of the smaller word's height two words must share to be on one line.
const MIN_VERTICAL_OVERLAP: f32 = 0.5;

#[derive(Debug, Clone)]
pub struct Line {
    pub words: Vec<Word>,
    pub bbox: Rect,
    pub font_size: f32,
}

impl Line {
    fn start(word: Word) -> Self {
        Line {
            bbox: word.bbox,
            font_size: word.font_size,
            words: vec![word],
        }
    }

    fn accepts(&self, word: &Word) -> bool {
        let em = self.font_size.max(word.font_size).max(1.0);
        let gap = word.bbox.left - self.bbox.right;
        vertical_overlap(&self.bbox, &word.bbox) >= MIN_VERTICAL_OVERLAP
            && gap <= MAX_WORD_GAP_EM * em
            && gap >= -0.5 * em
    }

    fn push(&mut self, word: Word) {
        self.bbox = self.bbox.union(&word.bbox);
        self.font_size = self.font_size.max(word.font_size);
        self.words.push(word);
    }

    pub fn text(&self) -> String {
        let words: Vec<&str> = self.words.iter().map(|w| w.text.as_str()).collect();
        words.join(" ")
    }

    pub fn bold(&self) -> bool {
        self.words.iter().all(|w| w.bold)
    }
}

/// Shared height of two boxes as a fraction of the smaller one.
pub fn vertical_overlap(a: &Rect, b: &Rect) -> f32 {
    let shared = a.bottom.min(b.bottom) - a.top.max(b.top);
    let smaller = a.height().min(b.height()).max(0.01);
    (shared / smaller).max(0.0)
}

pub fn group_into_lines(words: &[Word]) -> Vec<Line> {
    let mut sorted: Vec<&Word> = words.iter().filter(|w| !w.text.trim().is_empty()).collect();
    sorted.sort_by(|a, b| {
        let centre = |w: &Word| (w.bbox.top + w.bbox.bottom) / 2.0;
        centre(a)
            .total_cmp(&centre(b))
            .then(a.bbox.left.total_cmp(&b.bbox.left))
    });
    // Sorting by centre puts a line's words together except where a neighbour on a slightly lower
    // baseline interleaves, so look back over the lines still overlapping this word.
    let mut lines: Vec<Line> = Vec::new();
    for word in sorted {
        let open = lines
            .iter_mut()
            .rev()
            .take_while(|line| line.bbox.bottom >= word.bbox.top)
            .find(|line| line.accepts(word));
        match open {
            Some(line) => line.push(word.clone()),
            None => lines.push(Line::start(word.clone())),
        }
    }
    for line in &mut lines {
        line.words
            .sort_by(|a, b| a.bbox.left.total_cmp(&b.bbox.left));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::super::test_words::{line, word};
    use super::*;

    #[test]
    fn words_on_one_baseline_form_one_line_in_left_to_right_order() {
        let mut words = line("reading order matters", 72.0, 100.0, 10.0);
        words.reverse();
        let lines = group_into_lines(&words);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].text(), "reading order matters");
    }

    #[test]
    fn a_column_gutter_splits_lines() {
        let mut words = line("left column text", 72.0, 100.0, 10.0);
        words.extend(line("right column text", 320.0, 100.0, 10.0));
        let lines = group_into_lines(&words);
        let texts: Vec<String> = lines.iter().map(Line::text).collect();
        assert_eq!(texts, ["left column text", "right column text"]);
    }

    #[test]
    fn lines_below_each_other_stay_apart() {
        let words = vec![
            word("first", 72.0, 100.0, 10.0),
            word("second", 72.0, 112.0, 10.0),
        ];
        assert_eq!(group_into_lines(&words).len(), 2);
    }

    #[test]
    fn a_subscript_stays_on_its_line() {
        let mut words = line("x", 72.0, 100.0, 10.0);
        words.push(word("i", 78.0, 104.0, 7.0));
        assert_eq!(group_into_lines(&words).len(), 1);
    }
}
