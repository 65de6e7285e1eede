//! The local-tile grid: which (cols, rows) an image is cut into (`dynamic_preprocess` in the official
//! `process/image_process.py`).

/// A grid of `cols × rows` square tiles; tiles are numbered row-major.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileGrid {
    pub cols: u32,
    pub rows: u32,
}

impl TileGrid {
    pub fn count(&self) -> usize {
        self.cols as usize * self.rows as usize
    }
}

/// Candidate grids with `min_tiles ≤ cols·rows ≤ max_tiles`, in ascending tile count.
///
/// The official code sorts a Python `set` by tile count, so inside one count the order is CPython's
/// set iteration order, while transformers enumerates cols then rows. The order inside one count only
/// decides when the image's aspect ratio lies exactly midway between two equal-count candidates with no
/// candidate between them; for the defaults (2..=6) every such pair has a closer candidate in between
/// (ratio 1 or between), so both orders pick the same grid. `tests/preprocess_grid.rs` checks this
/// against the official order on every size up to 4096².
pub fn candidate_grids(min_tiles: u32, max_tiles: u32) -> Vec<TileGrid> {
    let mut grids: Vec<TileGrid> = (1..=max_tiles)
        .flat_map(|cols| (1..=max_tiles).map(move |rows| TileGrid { cols, rows }))
        .filter(|g| (min_tiles..=max_tiles).contains(&(g.cols * g.rows)))
        .collect();
    grids.sort_by_key(|g| g.cols * g.rows); // stable: keeps the enumeration order within a count
    grids
}

/// `find_closest_aspect_ratio`: the candidate whose cols/rows is nearest to width/height.
///
/// On an exact tie a later candidate replaces the best one only when the image covers more than half
/// of that candidate's tile area (so small images are not cut into more tiles than they fill).
pub fn closest_grid(
    width: u32,
    height: u32,
    tile_size: u32,
    candidates: &[TileGrid],
) -> Option<TileGrid> {
    let aspect = f64::from(width) / f64::from(height);
    let area = f64::from(width) * f64::from(height);
    let mut best: Option<(f64, TileGrid)> = None;
    for &grid in candidates {
        let diff = (aspect - f64::from(grid.cols) / f64::from(grid.rows)).abs();
        match best {
            Some((best_diff, _)) if diff > best_diff => {}
            Some((best_diff, _)) if diff == best_diff => {
                let half_tiles_area = 0.5
                    * f64::from(tile_size)
                    * f64::from(tile_size)
                    * f64::from(grid.cols)
                    * f64::from(grid.rows);
                if area > half_tiles_area {
                    best = Some((diff, grid));
                }
            }
            _ => best = Some((diff, grid)),
        }
    }
    best.map(|(_, grid)| grid)
}

/// The grid the official code tiles an image with, or `None` when it gets no local tiles: both sides
/// fit in one tile, or (only possible with `min_tiles = 1`) the chosen grid is a single tile.
pub fn choose_grid(
    width: u32,
    height: u32,
    tile_size: u32,
    min_tiles: u32,
    max_tiles: u32,
) -> Option<TileGrid> {
    if width <= tile_size && height <= tile_size {
        return None;
    }
    closest_grid(
        width,
        height,
        tile_size,
        &candidate_grids(min_tiles, max_tiles),
    )
    .filter(|g| g.count() > 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_candidates_are_the_thirteen_grids_by_count() {
        let grids = candidate_grids(2, 6);
        assert_eq!(grids.len(), 13);
        let counts: Vec<u32> = grids.iter().map(|g| g.cols * g.rows).collect();
        assert_eq!(counts, [2, 2, 3, 3, 4, 4, 4, 5, 5, 6, 6, 6, 6]);
        assert!(!grids.contains(&TileGrid { cols: 1, rows: 1 }));
    }
}
