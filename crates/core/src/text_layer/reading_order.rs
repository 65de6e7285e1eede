//! Reading order by recursive XY-cut: split the page at the widest empty band, across (a gap between
//! stacked parts) or down (a column gutter), read the parts in order, and recurse.

use deepread_pdf::Rect;

use super::PageBlock;

/// Empty bands narrower than this (points) are spacing inside the text, not separations.
const MIN_GUTTER_PT: f32 = 6.0;
const MIN_BAND_PT: f32 = 2.0;

#[derive(Clone, Copy, PartialEq)]
enum Axis {
    /// Cut along y: parts stacked top to bottom.
    Rows,
    /// Cut along x: columns left to right.
    Columns,
}

pub fn order_blocks(blocks: Vec<PageBlock>) -> Vec<PageBlock> {
    let mut ordered = Vec::with_capacity(blocks.len());
    cut(blocks, &mut ordered);
    ordered
}

fn cut(mut blocks: Vec<PageBlock>, out: &mut Vec<PageBlock>) {
    if blocks.len() <= 1 {
        out.append(&mut blocks);
        return;
    }
    let rows = widest_gap(&blocks, Axis::Rows);
    let columns = widest_gap(&blocks, Axis::Columns);
    // A column gutter runs the whole height of the region it splits, so prefer it when it is wide;
    // otherwise take the widest band. Stacked parts are read before columns only when the band
    // between them is the clearer separation.
    let chosen = match (rows, columns) {
        (Some(r), Some(c)) if c.1 >= MIN_GUTTER_PT && c.1 * 1.5 >= r.1 => {
            Some((Axis::Columns, c.0))
        }
        (Some(r), _) => Some((Axis::Rows, r.0)),
        (None, Some(c)) if c.1 >= MIN_GUTTER_PT => Some((Axis::Columns, c.0)),
        _ => None,
    };
    let Some((axis, at)) = chosen else {
        blocks.sort_by(|a, b| {
            a.bbox()
                .top
                .total_cmp(&b.bbox().top)
                .then(a.bbox().left.total_cmp(&b.bbox().left))
        });
        out.append(&mut blocks);
        return;
    };
    let (before, after): (Vec<_>, Vec<_>) = blocks
        .into_iter()
        .partition(|b| span(b.bbox(), axis).1 <= at);
    cut(before, out);
    cut(after, out);
}

fn span(bbox: &Rect, axis: Axis) -> (f32, f32) {
    match axis {
        Axis::Rows => (bbox.top, bbox.bottom),
        Axis::Columns => (bbox.left, bbox.right),
    }
}

/// The widest empty band between the blocks' projections on one axis: (where to cut, its width).
fn widest_gap(blocks: &[PageBlock], axis: Axis) -> Option<(f32, f32)> {
    let mut spans: Vec<(f32, f32)> = blocks.iter().map(|b| span(b.bbox(), axis)).collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut reach = spans.first()?.1;
    let mut best: Option<(f32, f32)> = None;
    for &(start, end) in &spans[1..] {
        let gap = start - reach;
        if gap >= MIN_BAND_PT && best.is_none_or(|(_, w)| gap > w) {
            best = Some(((start + reach) / 2.0, gap));
        }
        reach = reach.max(end);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::super::blocks::group_into_blocks;
    use super::super::lines::group_into_lines;
    use super::super::test_words::line;
    use super::*;

    fn read(words: Vec<deepread_pdf::Word>) -> Vec<String> {
        let blocks = group_into_blocks(group_into_lines(&words));
        let blocks = blocks.into_iter().map(PageBlock::Text).collect();
        order_blocks(blocks)
            .iter()
            .map(|b| match b {
                PageBlock::Text(text) => text.text(),
                PageBlock::Table(table) => table.markdown(),
            })
            .collect()
    }

    #[test]
    fn two_columns_are_read_left_then_right_under_a_full_width_title() {
        let mut words = line("A Title Across Both Columns", 150.0, 60.0, 18.0);
        for (i, y) in [100.0, 112.0, 124.0].into_iter().enumerate() {
            words.extend(line(&format!("left line {i}"), 72.0, y, 10.0));
            words.extend(line(&format!("right line {i}"), 320.0, y, 10.0));
        }
        // Paragraph break in the left column level with text in the right one.
        words.extend(line("left after break", 72.0, 150.0, 10.0));
        words.extend(line("right line 3", 320.0, 136.0, 10.0));
        words.extend(line("right line 4", 320.0, 148.0, 10.0));
        assert_eq!(
            read(words),
            [
                "A Title Across Both Columns",
                "left line 0 left line 1 left line 2",
                "left after break",
                "right line 0 right line 1 right line 2 right line 3 right line 4",
            ]
        );
    }

    #[test]
    fn stacked_paragraphs_read_top_to_bottom() {
        let mut words = line("Second", 72.0, 200.0, 10.0);
        words.extend(line("First", 72.0, 100.0, 10.0));
        assert_eq!(read(words), ["First", "Second"]);
    }
}
