//! Geometry of the global view: `ImageOps.pad(image, (base, base), color=pad)` in Pillow, which runs
//! `ImageOps.contain` (aspect-preserving resize of the original image) and pastes the result centred.

/// Where the resized original lands on the square canvas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// Size after `contain`: the long side equals the canvas side; the short side may be 0.
    pub width: u32,
    pub height: u32,
    /// Top-left corner of the paste.
    pub x: u32,
    pub y: u32,
}

/// `ImageOps.contain` then `ImageOps.pad`'s offset, for a square canvas of side `side`.
///
/// The short side is `round(short / long · side)` and the offset `round((side − short) · 0.5)`, both with
/// Python's round-half-to-even (transformers' `pad_to_square` floors the offset instead: spec §8).
pub fn place(width: u32, height: u32, side: u32) -> Placement {
    let (w, h) = contained_size(width, height, side);
    if (w, h) == (side, side) {
        return Placement {
            width: w,
            height: h,
            x: 0,
            y: 0,
        };
    }
    if w != side {
        Placement {
            width: w,
            height: h,
            x: centred_offset(side - w),
            y: 0,
        }
    } else {
        Placement {
            width: w,
            height: h,
            x: 0,
            y: centred_offset(side - h),
        }
    }
}

fn contained_size(width: u32, height: u32, side: u32) -> (u32, u32) {
    let image_ratio = f64::from(width) / f64::from(height);
    // The target is square, so its ratio is exactly 1.
    if image_ratio > 1.0 {
        (
            side,
            python_round(f64::from(height) / f64::from(width) * f64::from(side)),
        )
    } else if image_ratio < 1.0 {
        (
            python_round(f64::from(width) / f64::from(height) * f64::from(side)),
            side,
        )
    } else {
        (side, side)
    }
}

fn centred_offset(gap: u32) -> u32 {
    python_round(f64::from(gap) * 0.5)
}

/// Python 3 `round(x)` for a non-negative float: half to even.
fn python_round(x: f64) -> u32 {
    x.round_ties_even() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_table_geometry() {
        // deepseek-ocr2.md §3 table: global resize and paste offset.
        assert_eq!(
            place(700, 700, 1024),
            Placement {
                width: 1024,
                height: 1024,
                x: 0,
                y: 0
            }
        );
        assert_eq!(
            place(1190, 1684, 1024),
            Placement {
                width: 724,
                height: 1024,
                x: 150,
                y: 0
            }
        );
        assert_eq!(
            place(1920, 1080, 1024),
            Placement {
                width: 1024,
                height: 576,
                x: 0,
                y: 224
            }
        );
        assert_eq!(
            place(800, 600, 1024),
            Placement {
                width: 1024,
                height: 768,
                x: 0,
                y: 128
            }
        );
        assert_eq!(
            place(1000, 3000, 1024),
            Placement {
                width: 341,
                height: 1024,
                x: 342,
                y: 0
            }
        );
    }

    #[test]
    fn offset_rounds_half_to_even() {
        // A gap of 299 gives 149.5, which Python rounds to 150; a gap of 233 gives 116.5 → 116.
        assert_eq!(centred_offset(299), 150);
        assert_eq!(centred_offset(233), 116);
    }
}
