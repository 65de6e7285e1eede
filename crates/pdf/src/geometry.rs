//! Page sizes and boxes in displayed page space: PDF points, origin at the top-left corner of the
//! page as a viewer shows it (after /Rotate), y growing downwards.

use serde::Serialize;

/// A page's size as displayed, in PDF points (1/72 inch).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PageSize {
    pub width_pt: f32,
    pub height_pt: f32,
}

/// An axis-aligned box in displayed page space (points, top-left origin, y down).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rect {
    pub left: f32,
    pub top: f32,
    pub right: f32,
    pub bottom: f32,
}

impl Rect {
    pub fn width(&self) -> f32 {
        self.right - self.left
    }

    pub fn height(&self) -> f32 {
        self.bottom - self.top
    }

    pub fn contains(&self, x: f32, y: f32) -> bool {
        (self.left..=self.right).contains(&x) && (self.top..=self.bottom).contains(&y)
    }

    /// The smallest box holding both.
    pub fn union(&self, other: &Rect) -> Rect {
        Rect {
            left: self.left.min(other.left),
            top: self.top.min(other.top),
            right: self.right.max(other.right),
            bottom: self.bottom.max(other.bottom),
        }
    }
}

/// Maps PDF user space (y up, origin wherever the page's box puts it) to displayed page space.
///
/// `bbox` is the visible page box (CropBox clipped to MediaBox) as (left, bottom, right, top) and
/// `quarter_turns` the page's /Rotate in clockwise quarter turns, as PDFium applies them when it
/// renders.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DisplayTransform {
    left: f32,
    bottom: f32,
    right: f32,
    top: f32,
    quarter_turns: u8,
}

impl DisplayTransform {
    pub(crate) fn new(bbox: (f32, f32, f32, f32), quarter_turns: u8) -> Self {
        let (left, bottom, right, top) = bbox;
        DisplayTransform {
            left,
            bottom,
            right,
            top,
            quarter_turns: quarter_turns % 4,
        }
    }

    /// The page's /Rotate in degrees (clockwise).
    pub(crate) fn rotation_degrees(&self) -> f32 {
        f32::from(self.quarter_turns) * 90.0
    }

    /// One point of user space, in displayed space.
    pub(crate) fn point(&self, x: f32, y: f32) -> (f32, f32) {
        match self.quarter_turns {
            0 => (x - self.left, self.top - y),
            1 => (y - self.bottom, x - self.left),
            2 => (self.right - x, y - self.bottom),
            _ => (self.top - y, self.right - x),
        }
    }

    /// A box PDFium gives in user space, in displayed space.
    pub(crate) fn pdf_rect(&self, r: &pdfium_render::prelude::PdfRect) -> Rect {
        self.rect(
            r.left().value,
            r.bottom().value,
            r.right().value,
            r.top().value,
        )
    }

    /// A user-space box (left, bottom, right, top), in displayed space.
    pub(crate) fn rect(&self, left: f32, bottom: f32, right: f32, top: f32) -> Rect {
        let (x1, y1) = self.point(left, bottom);
        let (x2, y2) = self.point(right, top);
        Rect {
            left: x1.min(x2),
            top: y1.min(y2),
            right: x1.max(x2),
            bottom: y1.max(y2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A US Letter page (612 x 792) whose bottom-left corner is at user-space (10, 20).
    fn letter(quarter_turns: u8) -> DisplayTransform {
        DisplayTransform::new((10.0, 20.0, 622.0, 812.0), quarter_turns)
    }

    // Where the unrotated page's corners must land, by the PDF spec's definition of /Rotate
    // (the page is turned clockwise by that many degrees when displayed).
    #[test]
    fn upright_page_puts_the_top_left_corner_at_the_origin() {
        assert_eq!(letter(0).point(10.0, 812.0), (0.0, 0.0));
        assert_eq!(letter(0).point(622.0, 20.0), (612.0, 792.0));
    }

    #[test]
    fn rotate_90_turns_the_page_clockwise() {
        // The old bottom-left corner becomes the top-left; the old top-left becomes the top-right.
        assert_eq!(letter(1).point(10.0, 20.0), (0.0, 0.0));
        assert_eq!(letter(1).point(10.0, 812.0), (792.0, 0.0));
        assert_eq!(letter(1).point(622.0, 20.0), (0.0, 612.0));
    }

    #[test]
    fn rotate_180_turns_the_page_upside_down() {
        assert_eq!(letter(2).point(622.0, 20.0), (0.0, 0.0));
        assert_eq!(letter(2).point(10.0, 812.0), (612.0, 792.0));
    }

    #[test]
    fn rotate_270_turns_the_page_counter_clockwise() {
        // The old top-right corner becomes the top-left; the old top-left becomes the bottom-left.
        assert_eq!(letter(3).point(622.0, 812.0), (0.0, 0.0));
        assert_eq!(letter(3).point(10.0, 812.0), (0.0, 612.0));
    }

    #[test]
    fn boxes_stay_ordered_after_rotation() {
        let r = letter(1).rect(110.0, 120.0, 130.0, 150.0);
        assert_eq!(
            (r.left, r.top, r.right, r.bottom),
            (100.0, 100.0, 130.0, 120.0)
        );
        assert!(r.width() > 0.0 && r.height() > 0.0);
    }
}
