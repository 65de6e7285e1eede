//! Columns of a table without a grid: where its rows' runs of text leave gaps free down the table, and
//! which columns each run falls in.

use deepread_pdf::Word;

use super::super::lines::Line;
use super::rows::Row;

/// A gap between columns is free of text in all but this share of the rows (a wide cell may cross it).
const GAP_CROSSING_SHARE: f32 = 0.15;
/// A run of text is in every column whose zone holds this share of its width.
const ZONE_SHARE: f32 = 0.2;

/// Column extents (left, right), from the gaps that the rows' runs of text leave free down the table.
pub(super) fn columns_of(rows: &[Row]) -> Vec<(f32, f32)> {
    let left = rows.iter().map(|r| r.bbox.left).fold(f32::MAX, f32::min);
    let right = rows.iter().map(|r| r.bbox.right).fold(f32::MIN, f32::max);
    let width = (right - left).ceil().max(1.0) as usize;
    // For each point across the table, how many rows have text there.
    let mut crossing = vec![0usize; width + 1];
    for row in rows {
        for line in &row.lines {
            let from = (line.bbox.left - left).floor().max(0.0) as usize;
            let to = ((line.bbox.right - left).ceil() as usize).min(width);
            for count in &mut crossing[from..=to] {
                *count += 1;
            }
        }
    }
    let allowed = (GAP_CROSSING_SHARE * rows.len() as f32).floor() as usize;
    let mut columns: Vec<(f32, f32)> = Vec::new();
    let mut start: Option<usize> = None;
    for (x, &count) in crossing.iter().enumerate() {
        match (count > allowed, start) {
            (true, None) => start = Some(x),
            (false, Some(s)) => {
                columns.push((left + s as f32, left + x as f32));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        columns.push((left + s as f32, right));
    }
    columns
}

/// Columns that only one row has text in, in a table of three rows or more: a header set over the gap
/// between the two columns it spans, not a column of its own.
pub(super) fn drop_lone_columns(rows: &[Row], columns: Vec<(f32, f32)>) -> Vec<(f32, f32)> {
    if rows.len() < 3 {
        return columns;
    }
    columns
        .into_iter()
        .filter(|&(left, right)| {
            let used = rows.iter().filter(|r| {
                r.lines
                    .iter()
                    .any(|l| l.bbox.right > left && l.bbox.left < right)
            });
            used.count() >= 2
        })
        .collect()
}

/// A row's runs of text put in the columns whose zone they reach into (each column's zone runs to the
/// middle of the gaps beside it): (first column, columns spanned, words).
pub(super) fn row_cells(row: &Row, columns: &[(f32, f32)]) -> Vec<(usize, usize, Vec<Word>)> {
    let zone = |i: usize| {
        let left = if i == 0 {
            f32::MIN
        } else {
            (columns[i - 1].1 + columns[i].0) / 2.0
        };
        let right = match columns.get(i + 1) {
            Some(next) => (columns[i].1 + next.0) / 2.0,
            None => f32::MAX,
        };
        (left, right)
    };
    let mut cells: Vec<(usize, usize, Vec<Word>)> = Vec::new();
    for line in &row.lines {
        let width = line.bbox.width().max(1.0);
        let overlapped: Vec<usize> = (0..columns.len())
            .filter(|&i| {
                let (l, r) = zone(i);
                line.bbox.right.min(r) - line.bbox.left.max(l) >= ZONE_SHARE * width
            })
            .collect();
        let (first, last) = match (overlapped.first(), overlapped.last()) {
            (Some(&f), Some(&l)) => (f, l),
            _ => (nearest_column(line, columns), nearest_column(line, columns)),
        };
        match cells
            .iter_mut()
            .find(|(c, span, _)| first < *c + *span && *c <= last)
        {
            Some((c, span, words)) => {
                let end = (*c + *span - 1).max(last);
                *c = (*c).min(first);
                *span = end + 1 - *c;
                words.extend(line.words.iter().cloned());
            }
            None => cells.push((first, last + 1 - first, line.words.clone())),
        }
    }
    cells.sort_by_key(|(c, _, _)| *c);
    cells
}

fn nearest_column(line: &Line, columns: &[(f32, f32)]) -> usize {
    let middle = (line.bbox.left + line.bbox.right) / 2.0;
    columns
        .iter()
        .enumerate()
        .min_by(|a, b| {
            let d = |(l, r): &(f32, f32)| ((l + r) / 2.0 - middle).abs();
            d(a.1).total_cmp(&d(b.1))
        })
        .map_or(0, |(i, _)| i)
}

pub(super) fn within_column(line: &Line, (left, right): (f32, f32)) -> bool {
    line.bbox.left >= left - 1.0 && line.bbox.right <= right + 1.0
}
