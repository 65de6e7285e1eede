//! Rows of a table without a grid: bands of lines side by side, runs of such rows down the page, a cell's
//! second line joined to its row, rules between rows honoured.

use deepread_pdf::Rect;

use super::super::lines::{vertical_overlap, Line};

/// A run of rows breaks at a blank this many line heights tall.
const MAX_ROW_GAP: f32 = 1.5;
/// A band between two rules with more lines of text than this is a block of rows, not one row.
const MAX_LINES_PER_RULED_ROW: usize = 3;
/// A line this close under a row (in line heights) may be a cell's second line.
const TIGHT_GAP: f32 = 0.35;
/// A row this much closer to the one above than the table's usual pitch continues its cells.
const WRAPPED_PITCH: f32 = 0.7;

/// A band of lines side by side: one row of a table, if it is in one.
#[derive(Debug, Clone)]
pub(super) struct Row {
    pub lines: Vec<Line>,
    pub bbox: Rect,
}

impl Row {
    pub fn of(lines: Vec<Line>) -> Row {
        let bbox = lines
            .iter()
            .map(|l| l.bbox)
            .reduce(|a, b| a.union(&b))
            .unwrap_or(Rect {
                left: 0.0,
                top: 0.0,
                right: 0.0,
                bottom: 0.0,
            });
        Row { lines, bbox }
    }
}

/// Where rules are drawn between the rows (at least three ruled bands, none holding more than
/// `MAX_LINES_PER_RULED_ROW` lines of text), each band is one row, however many lines its cells take.
/// Otherwise (a booktabs table's rules set off only the header) None.
pub(super) fn rows_between_rules(rows: &[Row], separators: &[f32]) -> Option<Vec<Row>> {
    let bands: Vec<Vec<&Row>> = separators
        .windows(2)
        .map(|w| {
            rows.iter()
                .filter(|r| {
                    let middle = (r.bbox.top + r.bbox.bottom) / 2.0;
                    middle > w[0] && middle < w[1]
                })
                .collect::<Vec<_>>()
        })
        .filter(|band| !band.is_empty())
        .collect();
    if bands.len() < 3 || bands.iter().any(|b| b.len() > MAX_LINES_PER_RULED_ROW) {
        return None;
    }
    let joined = bands
        .into_iter()
        .map(|band| Row::of(band.into_iter().flat_map(|r| r.lines.clone()).collect()))
        .collect();
    Some(joined)
}

/// Rows set much closer than the table's usual pitch are a cell's second line, not a row of their own
/// ("State funded" over "legal aid").
pub(super) fn join_wrapped_rows(rows: &[Row]) -> Vec<Row> {
    let mut pitches: Vec<f32> = rows
        .windows(2)
        .map(|w| w[1].bbox.top - w[0].bbox.top)
        .collect();
    pitches.sort_by(f32::total_cmp);
    let Some(&pitch) = pitches.get(pitches.len() / 2) else {
        return rows.to_vec();
    };
    let mut joined: Vec<Row> = Vec::new();
    for row in rows {
        match joined.last_mut() {
            Some(last) if row.bbox.top - last.lines[0].bbox.top < WRAPPED_PITCH * pitch => {
                let mut lines = std::mem::take(&mut last.lines);
                lines.extend(row.lines.iter().cloned());
                *last = Row::of(lines);
            }
            _ => joined.push(row.clone()),
        }
    }
    joined
}

pub(super) fn rows_of(mut lines: Vec<Line>) -> Vec<Row> {
    lines.sort_by(|a, b| a.bbox.top.total_cmp(&b.bbox.top));
    let mut rows: Vec<Row> = Vec::new();
    for line in lines {
        match rows
            .iter_mut()
            .rev()
            .take(3)
            .find(|row| vertical_overlap(&row.lines[0].bbox, &line.bbox) >= 0.5)
        {
            Some(row) => {
                row.bbox = row.bbox.union(&line.bbox);
                row.lines.push(line);
            }
            None => rows.push(Row {
                bbox: line.bbox,
                lines: vec![line],
            }),
        }
    }
    for row in &mut rows {
        row.lines
            .sort_by(|a, b| a.bbox.left.total_cmp(&b.bbox.left));
    }
    rows
}

/// Consecutive rows of two or more runs of text, not far apart.
pub(super) fn loose_runs(rows: Vec<Row>) -> Vec<Vec<Row>> {
    let mut runs: Vec<Vec<Row>> = Vec::new();
    for row in rows {
        let joins = runs.last().is_some_and(|run| {
            let last = &run[run.len() - 1];
            let height = last.bbox.height().max(row.bbox.height()).max(1.0);
            let gap = row.bbox.top - last.bbox.bottom;
            let table_like = run.iter().any(|r| r.lines.len() >= 2);
            // A lone line set tight under a row of cells is a cell's second line (but a paragraph's
            // lines, each tight under the last, are not).
            let continues_cell =
                row.lines.len() == 1 && last.lines.len() >= 2 && gap <= TIGHT_GAP * height;
            table_like && gap <= MAX_ROW_GAP * height && (row.lines.len() >= 2 || continues_cell)
        });
        match runs.last_mut() {
            Some(run) if joins => run.push(row),
            _ => runs.push(vec![row]),
        }
    }
    runs
}
