//! Word list numbering for the Markdown's lists: real numbering definitions, so Word shows and
//! continues them as lists rather than as paragraphs that start with a typed bullet.

use docx_rs::{
    AbstractNumbering, Docx, IndentLevel, Level, LevelJc, LevelOverride, LevelText, NumberFormat,
    Numbering, NumberingId, Paragraph, SpecialIndentType, Start,
};

// docx-rs always writes an abstract numbering 1 and a numbering 1 of its own; ours come after.
const BULLETS_ABSTRACT: usize = 2;
const NUMBERS_ABSTRACT: usize = 3;
const BULLETS_ID: usize = 2;
const FIRST_NUMBERED_ID: usize = 3;

/// The deepest list level Word has (levels are 0 to 8); deeper Markdown lists stay at it.
const DEEPEST_LEVEL: usize = 8;

const BULLETS: [&str; 3] = ["\u{2022}", "\u{25E6}", "\u{25AA}"];

/// Indentation of one list level and the hanging indent of its marker, in twips.
const LEVEL_INDENT: i32 = 720;
const MARKER_HANGING: i32 = 360;

/// The lists of a document: bulleted lists share one numbering; each numbered list gets its own,
/// so it starts at its own first number instead of continuing the previous list.
#[derive(Debug, Default)]
pub(super) struct ListNumbering {
    /// Per numbered list after [`FIRST_NUMBERED_ID`]: its level and first number.
    numbered: Vec<(usize, usize)>,
}

/// Where a list's paragraphs take their numbers from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ListId {
    id: usize,
    level: usize,
}

impl ListNumbering {
    /// A bulleted list nested `depth` lists deep (0 for a top-level list).
    pub fn bulleted(&self, depth: usize) -> ListId {
        ListId {
            id: BULLETS_ID,
            level: depth.min(DEEPEST_LEVEL),
        }
    }

    /// A numbered list nested `depth` lists deep, whose first item is `start`.
    pub fn numbered(&mut self, depth: usize, start: u64) -> ListId {
        let level = depth.min(DEEPEST_LEVEL);
        let start = usize::try_from(start).unwrap_or(usize::MAX);
        self.numbered.push((level, start));
        ListId {
            id: FIRST_NUMBERED_ID + self.numbered.len() - 1,
            level,
        }
    }

    /// Adds the numbering definitions of every list handed out to the document.
    pub fn define(self, docx: Docx) -> Docx {
        let mut docx = docx
            .add_abstract_numbering(abstract_numbering(BULLETS_ABSTRACT, bullet_level))
            .add_abstract_numbering(abstract_numbering(NUMBERS_ABSTRACT, number_level))
            .add_numbering(Numbering::new(BULLETS_ID, BULLETS_ABSTRACT));
        for (n, (level, start)) in self.numbered.into_iter().enumerate() {
            let numbering = Numbering::new(FIRST_NUMBERED_ID + n, NUMBERS_ABSTRACT)
                .add_override(LevelOverride::new(level).start(start));
            docx = docx.add_numbering(numbering);
        }
        docx
    }
}

impl ListId {
    /// `paragraph` as an item of this list, with its bullet or number.
    pub fn item(self, paragraph: Paragraph) -> Paragraph {
        paragraph.numbering(NumberingId::new(self.id), IndentLevel::new(self.level))
    }

    /// `paragraph` as a further paragraph of an item: indented as the item's text, unnumbered.
    pub fn continuation(self, paragraph: Paragraph) -> Paragraph {
        paragraph.indent(Some(level_indent(self.level)), None, None, None)
    }
}

fn abstract_numbering(id: usize, level: fn(usize) -> Level) -> AbstractNumbering {
    (0..=DEEPEST_LEVEL).fold(AbstractNumbering::new(id), |numbering, n| {
        numbering.add_level(level(n))
    })
}

fn bullet_level(n: usize) -> Level {
    let bullet = BULLETS[n % BULLETS.len()];
    indented(Level::new(
        n,
        Start::new(1),
        NumberFormat::new("bullet"),
        LevelText::new(bullet),
        LevelJc::new("left"),
    ))
}

fn number_level(n: usize) -> Level {
    indented(Level::new(
        n,
        Start::new(1),
        NumberFormat::new("decimal"),
        LevelText::new(format!("%{}.", n + 1)),
        LevelJc::new("left"),
    ))
}

fn indented(level: Level) -> Level {
    let left = level_indent(level.level);
    level.indent(
        Some(left),
        Some(SpecialIndentType::Hanging(MARKER_HANGING)),
        None,
        None,
    )
}

fn level_indent(level: usize) -> i32 {
    // `level` is at most DEEPEST_LEVEL, so this cannot overflow.
    LEVEL_INDENT * (level as i32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_numbered_list_gets_its_own_numbering_and_bullets_share_one() {
        let mut lists = ListNumbering::default();
        let first = lists.numbered(0, 1);
        let second = lists.numbered(1, 4);
        assert_ne!(first, second);
        assert_eq!(lists.bulleted(0).id, lists.bulleted(3).id);
        assert_eq!(lists.bulleted(20).level, DEEPEST_LEVEL);
        assert_eq!(lists.numbered, [(0, 1), (1, 4)]);
    }
}
