//! Repetition measured as novelty: the share of recent k-character spans that did not already
//! occur shortly before. Normal text is mostly new; a loop, even one the model varies slightly
//! to get past the no-repeat n-gram ban, is almost all old.
//!
//! Two normalisations keep real pages from looking like loops and real loops from hiding:
//! - `<td>`, `</td>`, `<tr>`, `</tr>` are skipped: tables repeat them legitimately (the reference
//!   exempts `<td>`/`</td>` from its n-gram ban for the same reason);
//! - outside tables every digit counts as `0`, so a loop that counts up (`\frac{1}{779}`,
//!   `\frac{1}{781}`, ...) repeats; inside tables digits stay, since a column of numbers is not one.

use std::collections::HashMap;

/// Skipped table markup, and the strings that switch the table state.
const TABLE_CELL_TAGS: [&str; 4] = ["<td>", "</td>", "<tr>", "</tr>"];
const TABLE_OPEN: &str = "<table";
const TABLE_CLOSE: &str = "</table>";
/// Longest of the strings above, for holding back a cut one.
const LONGEST_MARKUP: usize = TABLE_CLOSE.len();

const HASH_BASE: u64 = 0x100_0000_01b3;

/// Streams text and tracks how novel the most recent `window` spans of `gram` symbols are.
#[derive(Debug)]
pub(crate) struct Novelty {
    gram: usize,
    window: usize,
    history: usize,
    /// All text seen, and how much of it became symbols.
    text: String,
    consumed: usize,
    in_table: bool,
    /// Byte offset in the text of every symbol.
    offsets: Vec<usize>,
    /// For the span starting at each symbol: how many symbols back it last occurred, or 0 when
    /// it is new (not within `history`). Filled once the span's last symbol has arrived.
    distance: Vec<u32>,
    novel_in_window: usize,
    /// The last `gram` symbols and their rolling hash.
    recent: std::collections::VecDeque<u32>,
    hash: u64,
    base_pow: u64,
    last_seen: HashMap<u64, usize>,
}

impl Novelty {
    pub(crate) fn new(gram: usize, window: usize, history: usize) -> Self {
        let gram = gram.max(1);
        Novelty {
            gram,
            window: window.max(1),
            history,
            text: String::new(),
            consumed: 0,
            in_table: false,
            offsets: Vec::new(),
            distance: Vec::new(),
            novel_in_window: 0,
            recent: std::collections::VecDeque::with_capacity(gram),
            hash: 0,
            base_pow: HASH_BASE.wrapping_pow(gram as u32 - 1),
            last_seen: HashMap::new(),
        }
    }

    /// Reads more text; table markup cut at the end waits for the next call.
    pub(crate) fn push(&mut self, delta: &str) {
        self.text.push_str(delta);
        while let Some(c) = self.text[self.consumed..].chars().next() {
            if c == '<' {
                match markup_at(&self.text[self.consumed..]) {
                    Markup::Cut => break,
                    Markup::Skip(len) => {
                        self.consumed += len;
                        continue;
                    }
                    Markup::TableOpen => self.in_table = true,
                    Markup::TableClose => self.in_table = false,
                    Markup::None => {}
                }
            }
            let at = self.consumed;
            self.consumed += c.len_utf8();
            let symbol = if c.is_ascii_digit() && !self.in_table {
                '0'
            } else {
                c
            };
            self.add_symbol(symbol as u32, at);
        }
    }

    fn add_symbol(&mut self, symbol: u32, byte_offset: usize) {
        let index = self.offsets.len();
        self.offsets.push(byte_offset);
        if self.recent.len() == self.gram {
            // Symbols enter the hash as `symbol + 1`, so that NUL still counts.
            let oldest = self.recent.pop_front().map_or(0, |s| u64::from(s) + 1);
            self.hash = self.hash.wrapping_sub(oldest.wrapping_mul(self.base_pow));
        }
        self.recent.push_back(symbol);
        self.hash = self
            .hash
            .wrapping_mul(HASH_BASE)
            .wrapping_add(u64::from(symbol) + 1);
        if self.recent.len() < self.gram {
            return;
        }
        let distance = self
            .last_seen
            .insert(self.hash, index)
            .map(|previous| index - previous)
            .filter(|d| *d <= self.history)
            .map_or(0, |d| u32::try_from(d).unwrap_or(0));
        self.distance.push(distance);
        self.novel_in_window += usize::from(distance == 0);
        if self.distance.len() > self.window {
            let leaving = self.distance[self.distance.len() - 1 - self.window];
            self.novel_in_window -= usize::from(leaving == 0);
        }
    }

    /// Share of new spans among the last `window`, once that many exist.
    pub(crate) fn recent_novelty(&self) -> Option<f32> {
        (self.distance.len() >= self.window)
            .then(|| self.novel_in_window as f32 / self.window as f32)
    }

    /// Byte offset where the repetition that ends the text began: the text before it and the
    /// first instance of the repeated unit are kept.
    ///
    /// A loop repeats a unit of some period P, so its spans recur at short distances; a phrase
    /// that merely recurs from further back (a heading used again, the tag syntax) is not part of
    /// it. Going back from the end, the loop extends while spans recur within about 2P, and stops
    /// at the first stretch of `min_run` spans that do not.
    pub(crate) fn repetition_start(&self, min_run: usize) -> usize {
        let period = self.recent_period();
        let tight = 2 * period + self.gram;
        let mut run = 0;
        let mut first_repeat = None;
        for (i, d) in self.distance.iter().enumerate().rev() {
            let in_loop = *d != 0 && (*d as usize) <= tight;
            if in_loop {
                run = 0;
                first_repeat = Some(i);
            } else {
                run += 1;
                if run >= min_run {
                    break;
                }
            }
        }
        let cut = first_repeat
            .and_then(|i| self.offsets.get(i).copied())
            .unwrap_or(self.text.len());
        self.back_to_word_start(cut)
    }

    /// The loop's period, as the 90th percentile of how far back the recent repeated spans recur.
    fn recent_period(&self) -> usize {
        let from = self.distance.len().saturating_sub(self.window);
        let mut recent: Vec<u32> = self.distance[from..]
            .iter()
            .copied()
            .filter(|d| *d != 0)
            .collect();
        if recent.is_empty() {
            return self.history;
        }
        recent.sort_unstable();
        recent[(recent.len() - 1) * 9 / 10] as usize
    }

    /// A cut inside a word moves back to the word's start, if that is near, so the kept text
    /// does not end in half a word or half a LaTeX command.
    fn back_to_word_start(&self, cut: usize) -> usize {
        let before = &self.text[..cut];
        match before
            .char_indices()
            .rev()
            .take(self.gram)
            .find(|(_, c)| c.is_whitespace())
        {
            Some((i, c)) if !before.ends_with(char::is_whitespace) => i + c.len_utf8(),
            _ => cut,
        }
    }
}

enum Markup {
    /// Table cell markup of this many bytes: not a symbol.
    Skip(usize),
    /// The text ends inside what may be table markup.
    Cut,
    TableOpen,
    TableClose,
    None,
}

/// What the text at a `<` means to the novelty count.
fn markup_at(rest: &str) -> Markup {
    if let Some(tag) = TABLE_CELL_TAGS.iter().find(|t| rest.starts_with(**t)) {
        return Markup::Skip(tag.len());
    }
    if rest.starts_with(TABLE_OPEN) {
        return Markup::TableOpen;
    }
    if rest.starts_with(TABLE_CLOSE) {
        return Markup::TableClose;
    }
    let could_be = rest.len() < LONGEST_MARKUP
        && TABLE_CELL_TAGS
            .iter()
            .chain([&TABLE_OPEN, &TABLE_CLOSE])
            .any(|t| t.starts_with(rest));
    if could_be {
        Markup::Cut
    } else {
        Markup::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_text_is_novel_and_a_repeated_unit_is_not() {
        let mut n = Novelty::new(8, 64, 4096);
        n.push(
            "The quick brown fox jumps over the lazy dog while seven wizards hex a jolly quartz.",
        );
        assert!(n.recent_novelty().is_some_and(|v| v > 0.9));
        for _ in 0..20 {
            n.push("again and again ");
        }
        assert_eq!(n.recent_novelty(), Some(0.0));
    }

    #[test]
    fn table_cells_and_counting_are_seen_through() {
        let mut cells = Novelty::new(8, 32, 4096);
        cells.push("<table>");
        for _ in 0..200 {
            cells.push("<td></td>");
        }
        // Nothing but cell markup: no symbols, so no verdict either way.
        assert_eq!(cells.recent_novelty(), None);

        let mut counting = Novelty::new(8, 64, 4096);
        for i in 100..200 {
            counting.push(&format!("\\frac{{1}}{{{i}}} + "));
        }
        assert_eq!(counting.recent_novelty(), Some(0.0));
    }

    #[test]
    fn the_repetition_starts_after_the_first_instance() {
        let mut n = Novelty::new(4, 16, 4096);
        let intro = "Introduction text that is all new.";
        let unit = " xyzzy";
        n.push(intro);
        for _ in 0..10 {
            n.push(unit);
        }
        let cut = n.repetition_start(8);
        // Keeps the introduction and at most one instance of the unit.
        assert!(cut >= intro.len(), "cut at {cut}");
        assert!(cut <= intro.len() + unit.len(), "cut at {cut}");
    }
}
