//! A page's ruling lines: the horizontal and vertical strokes, thin bars and box edges that draw tables
//! and frame form fields, from PDFium's path objects (inside form XObjects too), in displayed page space.
//!
//! Only straight axis-aligned pieces are kept; curves and slanted strokes draw figures, not tables.
//! Collinear pieces that touch are joined, so a dashed rule or a table drawn cell by cell gives one
//! rule per line.

use pdfium_render::prelude::{
    PdfColor, PdfMatrix, PdfPage, PdfPageObject, PdfPageObjectCommon, PdfPageObjectsCommon,
    PdfPagePathObject, PdfPathFillMode, PdfPathSegmentType, PdfPathSegments,
};
use serde::Serialize;

use crate::geometry::DisplayTransform;

/// A straight rule across or down the displayed page.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rule {
    /// Runs left to right; otherwise top to bottom.
    pub horizontal: bool,
    /// Across the rule: a horizontal rule's y, a vertical one's x (points, top-left origin).
    pub at: f32,
    /// Along the rule, where it starts and ends (`from < to`).
    pub from: f32,
    pub to: f32,
}

impl Rule {
    pub fn len(&self) -> f32 {
        self.to - self.from
    }

    pub fn is_empty(&self) -> bool {
        self.len() <= 0.0
    }
}

/// A piece drawn thinner than this (points) is a line, not a box.
const MAX_THICKNESS_PT: f32 = 3.0;
/// A piece this much off the horizontal (or vertical) over its length is slanted.
const MAX_SLANT_PT: f32 = 1.0;
/// Shorter pieces are dots, tick marks or glyph parts.
const MIN_LENGTH_PT: f32 = 4.0;
/// Collinear pieces this close (across and along) are one rule.
const JOIN_ACROSS_PT: f32 = 1.5;
const JOIN_ALONG_PT: f32 = 2.5;
/// More rules than this on one page are a drawing's strokes.
const MAX_RULES: usize = 2000;
/// Form XObjects nest; deeper than this is a malformed or hostile file.
const MAX_FORM_DEPTH: usize = 8;

pub(crate) fn read_rules(page: &PdfPage, transform: &DisplayTransform) -> Vec<Rule> {
    let mut pieces = Vec::new();
    for object in page.objects().iter() {
        collect(&object, PdfMatrix::IDENTITY, 0, transform, &mut pieces);
    }
    let mut rules = join_collinear(pieces);
    if rules.len() > MAX_RULES {
        // A drawing (a map, a chart of thousands of strokes), not a form: its longest lines are what
        // could frame a table, and the layout stays quick.
        rules.sort_by(|a, b| b.len().total_cmp(&a.len()));
        rules.truncate(MAX_RULES);
    }
    rules
}

fn collect(
    object: &PdfPageObject,
    parent: PdfMatrix,
    depth: usize,
    transform: &DisplayTransform,
    pieces: &mut Vec<Rule>,
) {
    match object {
        PdfPageObject::Path(path) if is_drawn(path) => {
            let Ok(own) = path.matrix() else { return };
            let points = display_points(path, own.multiply(parent), transform);
            pieces.extend(path_rules(&points));
        }
        PdfPageObject::XObjectForm(form) if depth < MAX_FORM_DEPTH => {
            let Ok(own) = form.matrix() else { return };
            let matrix = own.multiply(parent);
            for child in form.iter() {
                collect(&child, matrix, depth + 1, transform, pieces);
            }
        }
        _ => {}
    }
}

/// Stroked, or filled with something other than white: white boxes are page backgrounds and masks.
fn is_drawn(path: &PdfPagePathObject) -> bool {
    let stroked =
        path.is_stroked().unwrap_or(false) && path.stroke_color().is_ok_and(|c| is_visible(&c));
    let filled = path
        .fill_mode()
        .is_ok_and(|mode| mode != PdfPathFillMode::None)
        && path
            .fill_color()
            .is_ok_and(|c| is_visible(&c) && !is_white(&c));
    stroked || filled
}

fn is_visible(color: &PdfColor) -> bool {
    color.alpha() > 0
}

fn is_white(color: &PdfColor) -> bool {
    color.red() > 245 && color.green() > 245 && color.blue() > 245
}

/// The path's sub-paths as point lists in displayed space; a closed sub-path repeats its first point.
fn display_points(
    path: &PdfPagePathObject,
    matrix: PdfMatrix,
    transform: &DisplayTransform,
) -> Vec<Vec<(f32, f32)>> {
    let segments = path.segments().transform(matrix);
    let mut subpaths: Vec<Vec<(f32, f32)>> = Vec::new();
    for segment in segments.iter() {
        let (x, y) = segment.point();
        let point = transform.point(x.value, y.value);
        match segment.segment_type() {
            PdfPathSegmentType::MoveTo => subpaths.push(vec![point]),
            PdfPathSegmentType::LineTo => match subpaths.last_mut() {
                Some(current) => current.push(point),
                None => subpaths.push(vec![point]),
            },
            // A curve breaks the straight run: it starts a new one at its end point.
            _ => subpaths.push(vec![point]),
        }
        if segment.is_close() {
            if let Some(current) = subpaths.last_mut() {
                if let Some(&first) = current.first() {
                    current.push(first);
                }
            }
        }
    }
    subpaths
}

/// The rules one path draws: a thin box (a filled bar) is one rule along its middle; otherwise each
/// straight axis-aligned edge is one.
fn path_rules(subpaths: &[Vec<(f32, f32)>]) -> Vec<Rule> {
    let mut rules = Vec::new();
    for points in subpaths {
        if let Some(bar) = thin_box(points) {
            rules.push(bar);
            continue;
        }
        rules.extend(points.windows(2).filter_map(|w| edge_rule(w[0], w[1])));
    }
    rules
}

fn thin_box(points: &[(f32, f32)]) -> Option<Rule> {
    if points.len() < 4 {
        return None;
    }
    let (mut left, mut top, mut right, mut bottom) = (f32::MAX, f32::MAX, f32::MIN, f32::MIN);
    for &(x, y) in points {
        left = left.min(x);
        right = right.max(x);
        top = top.min(y);
        bottom = bottom.max(y);
    }
    let (width, height) = (right - left, bottom - top);
    let rule = if height <= MAX_THICKNESS_PT && width >= MIN_LENGTH_PT && width > height {
        Rule {
            horizontal: true,
            at: (top + bottom) / 2.0,
            from: left,
            to: right,
        }
    } else if width <= MAX_THICKNESS_PT && height >= MIN_LENGTH_PT {
        Rule {
            horizontal: false,
            at: (left + right) / 2.0,
            from: top,
            to: bottom,
        }
    } else {
        return None;
    };
    Some(rule)
}

fn edge_rule(a: (f32, f32), b: (f32, f32)) -> Option<Rule> {
    let (dx, dy) = ((b.0 - a.0).abs(), (b.1 - a.1).abs());
    if dy <= MAX_SLANT_PT && dx >= MIN_LENGTH_PT {
        Some(Rule {
            horizontal: true,
            at: (a.1 + b.1) / 2.0,
            from: a.0.min(b.0),
            to: a.0.max(b.0),
        })
    } else if dx <= MAX_SLANT_PT && dy >= MIN_LENGTH_PT {
        Some(Rule {
            horizontal: false,
            at: (a.0 + b.0) / 2.0,
            from: a.1.min(b.1),
            to: a.1.max(b.1),
        })
    } else {
        None
    }
}

/// Pieces on one line that touch or overlap become one rule; the line's place is the first piece's.
pub(crate) fn join_collinear(mut pieces: Vec<Rule>) -> Vec<Rule> {
    pieces.sort_by(|a, b| {
        a.horizontal
            .cmp(&b.horizontal)
            .then(a.at.total_cmp(&b.at))
            .then(a.from.total_cmp(&b.from))
    });
    let mut lines: Vec<Vec<Rule>> = Vec::new();
    for piece in pieces {
        match lines.last_mut() {
            Some(line)
                if line[0].horizontal == piece.horizontal
                    && (piece.at - line[0].at).abs() <= JOIN_ACROSS_PT =>
            {
                line.push(piece)
            }
            _ => lines.push(vec![piece]),
        }
    }
    lines.into_iter().flat_map(join_along).collect()
}

fn join_along(mut line: Vec<Rule>) -> Vec<Rule> {
    line.sort_by(|a, b| a.from.total_cmp(&b.from));
    let mut joined: Vec<Rule> = Vec::new();
    for piece in line {
        match joined.last_mut() {
            Some(last) if piece.from <= last.to + JOIN_ALONG_PT => last.to = last.to.max(piece.to),
            _ => joined.push(piece),
        }
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(at: f32, from: f32, to: f32) -> Rule {
        Rule {
            horizontal: true,
            at,
            from,
            to,
        }
    }

    #[test]
    fn a_stroked_box_gives_its_four_edges() {
        let square = vec![
            (10.0, 10.0),
            (110.0, 10.0),
            (110.0, 60.0),
            (10.0, 60.0),
            (10.0, 10.0),
        ];
        let rules = path_rules(&[square]);
        assert_eq!(rules.len(), 4);
        assert_eq!(rules.iter().filter(|r| r.horizontal).count(), 2);
        assert!(rules.contains(&h(60.0, 10.0, 110.0)));
    }

    #[test]
    fn a_thin_filled_bar_is_one_rule_along_its_middle() {
        let bar = vec![
            (10.0, 100.0),
            (300.0, 100.0),
            (300.0, 100.8),
            (10.0, 100.8),
            (10.0, 100.0),
        ];
        assert_eq!(path_rules(&[bar]), [h(100.4, 10.0, 300.0)]);
    }

    #[test]
    fn slanted_and_tiny_strokes_are_not_rules() {
        let slanted = vec![(0.0, 0.0), (100.0, 20.0)];
        let dot = vec![(5.0, 5.0), (6.0, 5.0)];
        assert!(path_rules(&[slanted, dot]).is_empty());
    }

    #[test]
    fn a_dashed_or_cell_by_cell_rule_is_joined_but_a_gap_is_kept() {
        let pieces = vec![
            h(50.0, 0.0, 40.0),
            h(50.4, 41.0, 80.0),
            h(50.0, 81.5, 120.0),
            h(50.0, 200.0, 260.0),
            h(90.0, 0.0, 120.0),
        ];
        let joined = join_collinear(pieces);
        assert_eq!(
            joined,
            [
                h(50.0, 0.0, 120.0),
                h(50.0, 200.0, 260.0),
                h(90.0, 0.0, 120.0)
            ]
        );
    }
}
