//! Tables drawn with rules: rules that cross one another make a grid; a missing stretch of rule between
//! two grid cells joins them into one spanning cell, as the eye reads it.

use deepread_pdf::{PageSize, Rect, Rule};

/// Rules this close (points) meet, and rule positions this close are one grid line.
const TOUCH_PT: f32 = 3.0;
const SAME_LINE_PT: f32 = 2.0;
/// A rule dividing a row or column meets the rules at its ends this closely (points): drawn joins are
/// exact to about a line's width, glyph strokes stop short.
const JOIN_PT: f32 = 1.2;
/// A stretch of grid line counts as drawn when rules cover this share of it.
const DRAWN_SHARE: f32 = 0.6;
/// Rules along the page's edge frame the page, not a table.
const PAGE_EDGE_PT: f32 = 2.0;

/// One cell of a grid: where it starts, how far it spans, and its box.
#[derive(Debug, Clone, PartialEq)]
pub struct Area {
    pub row: usize,
    pub col: usize,
    pub row_span: usize,
    pub col_span: usize,
    pub bbox: Rect,
}

/// A grid of at least two rows and two columns, its cells in row-major order.
#[derive(Debug, Clone)]
pub struct Grid {
    pub bbox: Rect,
    pub rows: usize,
    pub cols: usize,
    /// Where the columns start and end: `cols + 1` positions, left to right.
    pub xs: Vec<f32>,
    pub areas: Vec<Area>,
}

pub fn ruled_grids(rules: &[Rule], page: PageSize) -> Vec<Grid> {
    let rules: Vec<Rule> = rules
        .iter()
        .copied()
        .filter(|r| !along_page_edge(r, page))
        .collect();
    connected(&rules)
        .into_iter()
        .filter_map(|group| grid_of(&group))
        .collect()
}

fn along_page_edge(rule: &Rule, page: PageSize) -> bool {
    let extent = if rule.horizontal {
        page.height_pt
    } else {
        page.width_pt
    };
    rule.at <= PAGE_EDGE_PT || rule.at >= extent - PAGE_EDGE_PT
}

fn crosses(h: &Rule, v: &Rule) -> bool {
    v.at >= h.from - TOUCH_PT
        && v.at <= h.to + TOUCH_PT
        && h.at >= v.from - TOUCH_PT
        && h.at <= v.to + TOUCH_PT
}

/// Rules grouped by crossing one another (through any chain of crossings).
fn connected(rules: &[Rule]) -> Vec<Vec<Rule>> {
    let mut parent: Vec<usize> = (0..rules.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    // Horizontal rules by their y: each vertical rule looks only at those level with it, so a drawing of
    // thousands of strokes costs no more than its crossings.
    let mut across: Vec<usize> = (0..rules.len()).filter(|&i| rules[i].horizontal).collect();
    across.sort_by(|&a, &b| rules[a].at.total_cmp(&rules[b].at));
    for (v, down) in rules.iter().enumerate().filter(|(_, r)| !r.horizontal) {
        let first = across.partition_point(|&h| rules[h].at < down.from - TOUCH_PT);
        for &h in across[first..]
            .iter()
            .take_while(|&&h| rules[h].at <= down.to + TOUCH_PT)
        {
            if crosses(&rules[h], down) {
                let (rv, rh) = (root(&mut parent, v), root(&mut parent, h));
                parent[rv] = rh;
            }
        }
    }
    let mut groups: std::collections::BTreeMap<usize, Vec<Rule>> = Default::default();
    for (i, rule) in rules.iter().enumerate() {
        groups.entry(root(&mut parent, i)).or_default().push(*rule);
    }
    groups.into_values().collect()
}

fn grid_of(rules: &[Rule]) -> Option<Grid> {
    let (across, down): (Vec<Rule>, Vec<Rule>) = rules.iter().partition(|r| r.horizontal);
    if across.is_empty() || down.is_empty() {
        return None;
    }
    // The outer edges are where the rules end, drawn or not: many tables leave their sides open.
    let left = across.iter().map(|r| r.from).fold(f32::MAX, f32::min);
    let right = across.iter().map(|r| r.to).fold(f32::MIN, f32::max);
    let top = down.iter().map(|r| r.from).fold(f32::MAX, f32::min);
    let bottom = down.iter().map(|r| r.to).fold(f32::MIN, f32::max);
    let xs = grid_lines(down.iter().map(|r| r.at), left, right);
    let ys = grid_lines(across.iter().map(|r| r.at), top, bottom);
    let xs = dividing_lines(xs, &down, &ys);
    let ys = dividing_lines(ys, &across, &xs);
    if xs.len() < 3 || ys.len() < 3 {
        return None;
    }
    let areas = merge_cells(&xs, &ys, &across, &down);
    let mut grid = Grid {
        bbox: Rect {
            left: xs[0],
            top: ys[0],
            right: xs[xs.len() - 1],
            bottom: ys[ys.len() - 1],
        },
        rows: ys.len() - 1,
        cols: xs.len() - 1,
        xs,
        areas,
    };
    grid.drop_unused_lines();
    (grid.rows >= 2 && grid.cols >= 2).then_some(grid)
}

impl Grid {
    /// Grid lines that no cell starts at separate nothing: short strokes inside cells (a barcode's bars,
    /// a tick box) put them there. Cells spanning them span one line fewer.
    fn drop_unused_lines(&mut self) {
        for col in drop_unused(&mut self.areas, &mut self.cols, |a| {
            (&mut a.col, &mut a.col_span)
        }) {
            self.xs.remove(col);
        }
        drop_unused(&mut self.areas, &mut self.rows, |a| {
            (&mut a.row, &mut a.row_span)
        });
    }
}

/// Along one axis (`axis` gives an area's start and span on it): drops the lines no area starts at, and
/// answers which, last first.
fn drop_unused(
    areas: &mut [Area],
    count: &mut usize,
    axis: fn(&mut Area) -> (&mut usize, &mut usize),
) -> Vec<usize> {
    let mut dropped = Vec::new();
    for line in (1..*count).rev() {
        if areas.iter_mut().any(|a| *axis(a).0 == line) {
            continue;
        }
        for area in areas.iter_mut() {
            let (start, span) = axis(area);
            if *start > line {
                *start -= 1;
            } else if *start + *span > line {
                *span -= 1;
            }
        }
        *count -= 1;
        dropped.push(line);
    }
    dropped
}

/// Sorted distinct positions of the grid's lines, between and including its two outer edges.
fn grid_lines(at: impl Iterator<Item = f32>, low: f32, high: f32) -> Vec<f32> {
    let mut all: Vec<f32> = at.chain([low, high]).collect();
    all.sort_by(f32::total_cmp);
    let mut lines: Vec<f32> = Vec::new();
    for v in all {
        match lines.last() {
            Some(&last) if v - last <= SAME_LINE_PT => {}
            _ => lines.push(v),
        }
    }
    lines
}

/// The grid lines drawn across at least one whole row (or column) of the grid, meeting the rules at both
/// its ends: strokes inside a cell (vector glyphs, a barcode's bars, tick marks) divide nothing. The
/// outer edges stay.
fn dividing_lines(lines: Vec<f32>, rules: &[Rule], crossing: &[f32]) -> Vec<f32> {
    let last = lines.len().saturating_sub(1);
    let divides = |at: f32| {
        rules.iter().any(|r| {
            (r.at - at).abs() <= SAME_LINE_PT
                && crossing
                    .windows(2)
                    .any(|w| r.from <= w[0] + JOIN_PT && r.to >= w[1] - JOIN_PT)
        })
    };
    lines
        .iter()
        .enumerate()
        .filter(|&(i, &at)| i == 0 || i == last || divides(at))
        .map(|(_, &at)| at)
        .collect()
}

/// Whether rules along `at` cover most of `from..to`.
fn drawn(rules: &[Rule], at: f32, from: f32, to: f32) -> bool {
    let covered: f32 = rules
        .iter()
        .filter(|r| (r.at - at).abs() <= SAME_LINE_PT)
        .map(|r| (r.to.min(to) - r.from.max(from)).max(0.0))
        .sum();
    covered >= DRAWN_SHARE * (to - from)
}

/// The grid's cells, neighbours with no rule between them joined: first along each row, then down,
/// where the cell below spans the same columns, so every cell stays a rectangle.
fn merge_cells(xs: &[f32], ys: &[f32], across: &[Rule], down: &[Rule]) -> Vec<Area> {
    let (rows, cols) = (ys.len() - 1, xs.len() - 1);
    let mut spans: Vec<Vec<(usize, usize)>> = Vec::with_capacity(rows);
    for r in 0..rows {
        let mut row = Vec::new();
        let mut c = 0;
        while c < cols {
            let start = c;
            while c + 1 < cols && !drawn(down, xs[c + 1], ys[r], ys[r + 1]) {
                c += 1;
            }
            row.push((start, c + 1 - start));
            c += 1;
        }
        spans.push(row);
    }
    let mut taken = vec![vec![false; cols]; rows];
    let mut areas = Vec::new();
    for r in 0..rows {
        for &(col, col_span) in &spans[r] {
            if taken[r][col] {
                continue;
            }
            let mut row_span = 1;
            while r + row_span < rows
                && spans[r + row_span].contains(&(col, col_span))
                && !drawn(across, ys[r + row_span], xs[col], xs[col + col_span])
            {
                taken[r + row_span][col] = true;
                row_span += 1;
            }
            areas.push(Area {
                row: r,
                col,
                row_span,
                col_span,
                bbox: Rect {
                    left: xs[col],
                    top: ys[r],
                    right: xs[col + col_span],
                    bottom: ys[r + row_span],
                },
            });
        }
    }
    areas
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: PageSize = PageSize {
        width_pt: 612.0,
        height_pt: 792.0,
    };

    fn h(at: f32, from: f32, to: f32) -> Rule {
        Rule {
            horizontal: true,
            at,
            from,
            to,
        }
    }

    fn v(at: f32, from: f32, to: f32) -> Rule {
        Rule {
            horizontal: false,
            at,
            from,
            to,
        }
    }

    fn spans(grid: &Grid) -> Vec<(usize, usize, usize, usize)> {
        grid.areas
            .iter()
            .map(|a| (a.row, a.col, a.row_span, a.col_span))
            .collect()
    }

    #[test]
    fn a_full_grid_gives_every_cell() {
        let rules = [
            h(100.0, 50.0, 350.0),
            h(120.0, 50.0, 350.0),
            h(140.0, 50.0, 350.0),
            v(50.0, 100.0, 140.0),
            v(200.0, 100.0, 140.0),
            v(350.0, 100.0, 140.0),
        ];
        let grids = ruled_grids(&rules, PAGE);
        assert_eq!(grids.len(), 1);
        assert_eq!((grids[0].rows, grids[0].cols), (2, 2));
        assert_eq!(
            spans(&grids[0]),
            [(0, 0, 1, 1), (0, 1, 1, 1), (1, 0, 1, 1), (1, 1, 1, 1)]
        );
    }

    #[test]
    fn open_sides_and_missing_rules_make_spanning_cells() {
        // A header cell over two columns (the rule between them starts below it), and a first-column
        // cell over the two header rows (the rule under the header's first row stops short of it).
        let rules = [
            h(100.0, 50.0, 350.0),
            h(115.0, 150.0, 350.0),
            h(130.0, 50.0, 350.0),
            h(150.0, 50.0, 350.0),
            v(150.0, 100.0, 150.0),
            v(250.0, 115.0, 150.0),
        ];
        let grid = &ruled_grids(&rules, PAGE)[0];
        assert_eq!((grid.rows, grid.cols), (3, 3));
        assert_eq!(
            spans(grid),
            [
                (0, 0, 2, 1),
                (0, 1, 1, 2),
                (1, 1, 1, 1),
                (1, 2, 1, 1),
                (2, 0, 1, 1),
                (2, 1, 1, 1),
                (2, 2, 1, 1)
            ]
        );
        assert_eq!(grid.bbox.left, 50.0);
        assert_eq!(grid.bbox.right, 350.0);
    }

    #[test]
    fn a_frame_around_the_page_or_one_box_is_no_grid() {
        let page_frame = [
            h(0.0, 0.0, 612.0),
            h(792.0, 0.0, 612.0),
            v(0.0, 0.0, 792.0),
            v(612.0, 0.0, 792.0),
        ];
        assert!(ruled_grids(&page_frame, PAGE).is_empty());
        let one_box = [
            h(100.0, 50.0, 350.0),
            h(200.0, 50.0, 350.0),
            v(50.0, 100.0, 200.0),
            v(350.0, 100.0, 200.0),
        ];
        assert!(ruled_grids(&one_box, PAGE).is_empty());
    }
}
