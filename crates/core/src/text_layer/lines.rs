//! Words into lines: words that share a baseline band and sit close enough to be one run of text.
//! A column gutter is wider than any word space, so lines never cross columns.

use deepread_pdf::{Rect, Rule, Word};

/// Largest gap between two words of one line, in ems. Justified text rarely stretches a space past
/// half an em; the narrowest column gutters in the fixtures (a two-column handbook) are about one.
const MAX_WORD_GAP_EM: f32 = 0.8;
/// How much of the smaller word's height two words must share to be on one line.
const MIN_VERTICAL_OVERLAP: f32 = 0.5;

/// Wider gaps are never a stretched space (a running header's page number, a form's value), in ems.
const MAX_LONE_GAP_EM: f32 = 3.0;
/// The lines above and below that can show a gap is no gutter, in line heights.
const LONE_GAP_REACH: f32 = 2.5;
/// A box's sides meet its top or bottom to within this (points).
const BOX_JOIN_PT: f32 = 2.0;
/// Largest gap between a list bullet and its text, in ems.
const MAX_BULLET_GAP_EM: f32 = 4.0;

/// The glyphs that mark a list item, Wingdings' and Symbol's private-use bullets among them.
const BULLETS: &[char] = &[
    '•', '◦', '▪', '▫', '●', '○', '■', '□', '‣', '⁃', '∙', '·', '➢', '►', '▶', '✓', '\u{F0B7}',
    '\u{F0A7}',
];

/// A word that is only a list bullet: •, ◦, ▪, ● and the like.
pub fn is_bullet(text: &str) -> bool {
    let mut chars = text.chars();
    matches!((chars.next(), chars.next()), (Some(c), None) if BULLETS.contains(&c))
}

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

    /// Whether `word`, the next to the right in its band, continues this line. A list item's bullet is
    /// often set an indent away from its text, wider than a word space.
    fn continues_with(&self, word: &Word) -> bool {
        let em = self.font_size.max(word.font_size).max(1.0);
        let gap = word.bbox.left - self.bbox.right;
        let only_a_bullet = self.words.len() == 1 && is_bullet(&self.words[0].text);
        gap <= MAX_WORD_GAP_EM * em || (only_a_bullet && gap <= MAX_BULLET_GAP_EM * em)
    }

    /// The line starts with a list bullet.
    pub fn is_list_item(&self) -> bool {
        self.words.first().is_some_and(|w| is_bullet(&w.text))
    }

    fn push(&mut self, word: Word) {
        self.bbox = self.bbox.union(&word.bbox);
        self.font_size = self.font_size.max(word.font_size);
        self.words.push(word);
    }

    /// Arabic, Persian and Hebrew lines keep their words right to left.
    fn in_reading_order(mut self) -> Line {
        if reads_right_to_left(&self.words) {
            self.words.reverse();
        }
        self
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
    group_into_lines_between(words, &[])
}

/// Lines that never cross a box's side: a vertical rule meeting horizontal ones, between two words, is a
/// cell's or a panel's edge, however close the words. A vertical stroke on its own is a decoration.
pub fn group_into_lines_between(words: &[Word], rules: &[Rule]) -> Vec<Line> {
    let across: Vec<&Rule> = rules.iter().filter(|r| r.horizontal).collect();
    let meets = |v: &Rule, h: &Rule| {
        let touches = |end: f32| (end - h.at).abs() <= BOX_JOIN_PT;
        (touches(v.from) || touches(v.to))
            && v.at >= h.from - BOX_JOIN_PT
            && v.at <= h.to + BOX_JOIN_PT
    };
    let walls: Vec<&Rule> = rules
        .iter()
        .filter(|v| !v.horizontal && across.iter().any(|h| meets(v, h)))
        .collect();
    let mut banded: Vec<Vec<Line>> = bands(words)
        .into_iter()
        .map(|band| split_band(band, &walls))
        .collect();
    join_lone_gaps(&mut banded, &walls);
    banded
        .into_iter()
        .flatten()
        .map(Line::in_reading_order)
        .collect()
}

/// A wide gap in one line that the lines just above and below run across (or the one of them there is,
/// at a paragraph's first or last line) is a stretched word space (justified or kashida-stretched text,
/// a caption's quad after "Table 1."), not a gutter or a cell's edge, which run down the page: the line
/// is joined again.
fn join_lone_gaps(banded: &mut [Vec<Line>], walls: &[&Rule]) {
    for i in 0..banded.len() {
        let mut j = 0;
        while j + 1 < banded[i].len() {
            let (left, right) = (&banded[i][j], &banded[i][j + 1]);
            let gap = (left.bbox.right, right.bbox.left);
            // Some(whether it runs across) for a band within reach, None where there is none.
            let runs_across = |band: Option<&Vec<Line>>| {
                let near: Vec<&Line> = band
                    .into_iter()
                    .flatten()
                    .filter(|l| is_near(l, left))
                    .collect();
                (!near.is_empty()).then(|| near.iter().any(|l| spans(l, gap)))
            };
            let above = runs_across(i.checked_sub(1).map(|k| &banded[k]));
            let below = runs_across(banded.get(i + 1));
            let em = left.font_size.max(right.font_size).max(1.0);
            let narrow = gap.1 - gap.0 <= MAX_LONE_GAP_EM * em;
            let lone = narrow
                && matches!(
                    (above, below),
                    (Some(true), Some(true)) | (None, Some(true)) | (Some(true), None)
                )
                && !right.words.iter().any(|w| walled_off(left, w, walls));
            if lone {
                let right = banded[i].remove(j + 1);
                for word in right.words {
                    banded[i][j].push(word);
                }
            } else {
                j += 1;
            }
        }
    }
}

/// Whether `line` is a line or so above or below `beside`.
fn is_near(line: &Line, beside: &Line) -> bool {
    let height = beside.bbox.height().max(1.0);
    (line.bbox.top - beside.bbox.top).abs() <= LONE_GAP_REACH * height
}

/// Whether `line` runs across the gap (from, to).
fn spans(line: &Line, (from, to): (f32, f32)) -> bool {
    line.bbox.left < from && line.bbox.right > to
}

/// Whether a vertical rule stands between the end of `line` and `word`, level with the word.
fn walled_off(line: &Line, word: &Word, walls: &[&Rule]) -> bool {
    let middle = (word.bbox.top + word.bbox.bottom) / 2.0;
    walls.iter().any(|w| {
        w.at > line.bbox.right && w.at < word.bbox.left && w.from <= middle && w.to >= middle
    })
}

/// Words sharing a vertical band (most of their height), whatever their horizontal place: the
/// candidates for one line, or for several lines side by side in columns.
fn bands(words: &[Word]) -> Vec<Vec<Word>> {
    let mut sorted: Vec<&Word> = words.iter().filter(|w| !w.text.trim().is_empty()).collect();
    sorted.sort_by(|a, b| centre(a).total_cmp(&centre(b)));
    let mut bands: Vec<(Rect, Vec<Word>)> = Vec::new();
    for word in sorted {
        match bands.last_mut() {
            Some((extent, band))
                if vertical_overlap(extent, &word.bbox) >= MIN_VERTICAL_OVERLAP =>
            {
                // The band keeps the height of its first word, so it cannot creep down the page.
                extent.left = extent.left.min(word.bbox.left);
                extent.right = extent.right.max(word.bbox.right);
                band.push(word.clone());
            }
            _ => bands.push((word.bbox, vec![word.clone()])),
        }
    }
    bands.into_iter().map(|(_, band)| band).collect()
}

fn centre(word: &Word) -> f32 {
    (word.bbox.top + word.bbox.bottom) / 2.0
}

/// A band cut into lines at gaps wider than any word space (column gutters, table cells).
fn split_band(mut band: Vec<Word>, walls: &[&Rule]) -> Vec<Line> {
    band.sort_by(|a, b| a.bbox.left.total_cmp(&b.bbox.left));
    let mut lines: Vec<Line> = Vec::new();
    for word in band {
        match lines.last_mut() {
            Some(line) if line.continues_with(&word) && !walled_off(line, &word, walls) => {
                line.push(word)
            }
            _ => lines.push(Line::start(word)),
        }
    }
    lines
}

/// Arabic, Persian and Hebrew text reads from the right: its lines keep their words in reading order,
/// its tables their first column on the right.
pub fn reads_right_to_left<'w>(words: impl IntoIterator<Item = &'w Word>) -> bool {
    let chars = words.into_iter().flat_map(|w| w.text.chars());
    let (rtl, ltr) = chars.fold((0, 0), |(rtl, ltr), c| match c {
        '\u{0590}'..='\u{08FF}' | '\u{FB1D}'..='\u{FDFF}' | '\u{FE70}'..='\u{FEFF}' => {
            (rtl + 1, ltr)
        }
        c if c.is_alphabetic() => (rtl, ltr + 1),
        _ => (rtl, ltr),
    });
    rtl > ltr
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
    fn a_word_sorted_late_by_its_descender_still_joins_its_line() {
        let mut words = line("sadipscing elitr sed", 72.0, 100.0, 10.0);
        words[0].bbox.bottom += 0.1;
        let lines = group_into_lines(&words);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].text(), "sadipscing elitr sed");
    }

    #[test]
    fn arabic_lines_read_right_to_left() {
        let words = line("واحد اثنان", 72.0, 100.0, 10.0);
        assert_eq!(group_into_lines(&words)[0].text(), "اثنان واحد");
    }

    #[test]
    fn a_subscript_stays_on_its_line() {
        let mut words = line("x", 72.0, 100.0, 10.0);
        words.push(word("i", 78.0, 104.0, 7.0));
        assert_eq!(group_into_lines(&words).len(), 1);
    }

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(Line::text).collect()
    }

    #[test]
    fn a_bullet_set_an_indent_from_its_text_stays_on_its_line() {
        let mut words = vec![word("•", 72.0, 100.0, 10.0)];
        words.extend(line("first point", 95.0, 100.0, 10.0));
        let lines = group_into_lines(&words);
        assert_eq!(texts(&lines), ["• first point"]);
        assert!(lines[0].is_list_item());
    }

    #[test]
    fn a_stretched_space_inside_a_paragraph_is_no_gutter_but_a_gutter_down_the_page_is() {
        // Three lines of a paragraph; the middle one has a gap of two ems, the others run across it.
        let mut words = line("the first line of the paragraph runs on", 72.0, 100.0, 10.0);
        words.extend(line("middle", 72.0, 112.0, 10.0));
        words.extend(line("stretched", 125.0, 112.0, 10.0));
        words.extend(line(
            "the last line of the paragraph runs on too",
            72.0,
            124.0,
            10.0,
        ));
        assert_eq!(group_into_lines(&words).len(), 3);
        // The same gap, but in every line: two columns.
        let mut columns = Vec::new();
        for y in [100.0, 112.0, 124.0] {
            columns.extend(line("left", 72.0, y, 10.0));
            columns.extend(line("right", 115.0, y, 10.0));
        }
        assert_eq!(group_into_lines(&columns).len(), 6);
    }

    #[test]
    fn a_box_side_between_two_close_words_ends_the_line_a_lone_stroke_does_not() {
        let words = line("label value", 72.0, 100.0, 10.0);
        let gap = (words[0].bbox.right + words[1].bbox.left) / 2.0;
        let side = Rule {
            horizontal: false,
            at: gap,
            from: 95.0,
            to: 115.0,
        };
        let top = Rule {
            horizontal: true,
            at: 95.0,
            from: 60.0,
            to: 200.0,
        };
        assert_eq!(group_into_lines_between(&words, &[side, top]).len(), 2);
        assert_eq!(group_into_lines_between(&words, &[side]).len(), 1);
    }
}
