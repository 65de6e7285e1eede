//! Choosing a page's pixel size, and turning PDFium's bitmaps into RGB images.

use image::RgbImage;
use pdfium_render::prelude::{PdfBitmapFormat, PdfPage, PdfRenderConfig};

use crate::error::PdfError;
use crate::geometry::PageSize;

/// The longest side we render, in pixels. PDFium and the GPU both struggle beyond this.
pub const MAX_SIDE_PX: u64 = 16_384;
/// The most pixels in one render (200 Mpx is 600 MB of RGB): anything larger is a mistake or an attack.
pub const MAX_PIXELS: u64 = 200_000_000;

/// How large to render a page.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RenderSize {
    /// At this resolution in dots per inch (72 dpi: one pixel per point).
    Dpi(f32),
    /// An image document at its own pixels, a PDF page (which has none) at `pdf_dpi`: what a reader of the
    /// page should see, since upscaling a photo adds nothing to read and changes what the model is given.
    Native { pdf_dpi: f32 },
    /// As large as fits in the box, keeping the aspect ratio.
    Fit { max_width: u32, max_height: u32 },
    /// This many pixels wide, the height following the aspect ratio.
    Width(u32),
}

impl RenderSize {
    /// The pixel size of `page` rendered at this size, refused before anything is allocated when it
    /// is not positive or exceeds [`MAX_SIDE_PX`] / [`MAX_PIXELS`].
    pub fn pixels_for(&self, page_index: usize, page: PageSize) -> Result<(u32, u32), PdfError> {
        let scale = self.scale(page_index, page)?;
        let width = scaled_side(page.width_pt, scale);
        let height = scaled_side(page.height_pt, scale);
        check_limits(page_index, width, height)?;
        // Both sides are within MAX_SIDE_PX, so they fit in u32.
        Ok((width as u32, height as u32))
    }

    /// Pixels per point.
    fn scale(&self, page_index: usize, page: PageSize) -> Result<f64, PdfError> {
        let width = f64::from(page.width_pt);
        let height = f64::from(page.height_pt);
        let scale = match *self {
            RenderSize::Dpi(dpi) | RenderSize::Native { pdf_dpi: dpi } => f64::from(dpi) / 72.0,
            RenderSize::Width(px) => f64::from(px) / width,
            RenderSize::Fit {
                max_width,
                max_height,
            } => (f64::from(max_width) / width).min(f64::from(max_height) / height),
        };
        if scale.is_finite() && scale > 0.0 {
            Ok(scale)
        } else {
            Err(PdfError::Render {
                page: page_index,
                reason: format!("the requested size {self:?} is not a positive size"),
            })
        }
    }
}

/// Rounded to the nearest pixel, and never zero: a hairline page still renders one pixel.
fn scaled_side(points: f32, scale: f64) -> u64 {
    let px = (f64::from(points) * scale).round();
    if px.is_finite() && px >= 1.0 {
        px as u64
    } else {
        1
    }
}

fn check_limits(page: usize, width: u64, height: u64) -> Result<(), PdfError> {
    if width > MAX_SIDE_PX || height > MAX_SIDE_PX || width * height > MAX_PIXELS {
        return Err(PdfError::PageTooLarge {
            page,
            width,
            height,
        });
    }
    Ok(())
}

/// Renders a PDF page at exactly `width` x `height` pixels, on white, with annotations and form
/// fields drawn as a viewer draws them. The caller holds the PDFium lock.
pub(crate) fn render_pdf_page(
    page: &PdfPage,
    index: usize,
    width: u32,
    height: u32,
) -> Result<RgbImage, PdfError> {
    let config = PdfRenderConfig::new()
        .set_fixed_size(width as i32, height as i32)
        .set_format(PdfBitmapFormat::BGRx)
        .set_reverse_byte_order(true)
        .render_annotations(true)
        .render_form_data(true);
    let bitmap = page
        .render_with_config(&config)
        .map_err(|e| PdfError::from_page(index, e))?;
    rgbx_to_rgb(index, &bitmap.as_raw_bytes(), width, height)
}

/// PDFium rows may be padded past `width * 4` bytes; the stride is what the buffer holds per row.
fn rgbx_to_rgb(index: usize, raw: &[u8], width: u32, height: u32) -> Result<RgbImage, PdfError> {
    let row_bytes = width as usize * 4;
    let stride = raw.len() / (height.max(1) as usize);
    if stride < row_bytes {
        return Err(PdfError::Render {
            page: index,
            reason: format!(
                "PDFium returned {} bytes for a {width}x{height} bitmap",
                raw.len()
            ),
        });
    }
    let mut rgb = Vec::with_capacity(width as usize * height as usize * 3);
    for row in raw.chunks_exact(stride).take(height as usize) {
        for pixel in row[..row_bytes].chunks_exact(4) {
            rgb.extend_from_slice(&pixel[..3]);
        }
    }
    RgbImage::from_raw(width, height, rgb).ok_or_else(|| PdfError::Render {
        page: index,
        reason: "the rendered bitmap is shorter than its size".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LETTER: PageSize = PageSize {
        width_pt: 612.0,
        height_pt: 792.0,
    };

    #[test]
    fn dpi_scales_points_by_dpi_over_72() {
        // 8.5 x 11 inches at 144 dpi is 1224 x 1584 by definition of the inch.
        assert_eq!(
            RenderSize::Dpi(144.0).pixels_for(0, LETTER).unwrap(),
            (1224, 1584)
        );
        assert_eq!(
            RenderSize::Dpi(72.0).pixels_for(0, LETTER).unwrap(),
            (612, 792)
        );
    }

    #[test]
    fn width_keeps_the_aspect_ratio() {
        // 792 / 612 * 306 = 396.
        assert_eq!(
            RenderSize::Width(306).pixels_for(0, LETTER).unwrap(),
            (306, 396)
        );
    }

    #[test]
    fn fit_is_bounded_by_the_tighter_side() {
        let fit = RenderSize::Fit {
            max_width: 1000,
            max_height: 396,
        };
        assert_eq!(fit.pixels_for(0, LETTER).unwrap(), (306, 396));
    }

    #[test]
    fn oversized_renders_are_refused_with_their_size() {
        match RenderSize::Dpi(72.0 * 30.0).pixels_for(4, LETTER) {
            Err(PdfError::PageTooLarge {
                page: 4,
                width: 18360,
                height: 23760,
            }) => {}
            other => panic!("expected PageTooLarge, got {other:?}"),
        }
    }

    #[test]
    fn too_many_pixels_is_refused_even_when_each_side_fits() {
        let square = PageSize {
            width_pt: 15_000.0,
            height_pt: 15_000.0,
        };
        assert!(matches!(
            RenderSize::Dpi(72.0).pixels_for(0, square),
            Err(PdfError::PageTooLarge { .. })
        ));
    }

    #[test]
    fn non_positive_sizes_are_errors() {
        for size in [
            RenderSize::Dpi(0.0),
            RenderSize::Dpi(f32::NAN),
            RenderSize::Width(0),
            RenderSize::Fit {
                max_width: 0,
                max_height: 100,
            },
        ] {
            assert!(matches!(
                size.pixels_for(0, LETTER),
                Err(PdfError::Render { .. })
            ));
        }
    }

    #[test]
    fn padded_rows_are_unpadded() {
        // 2x2 pixels, rows padded to 12 bytes.
        let raw = [
            1, 2, 3, 0, 4, 5, 6, 0, 9, 9, 9, 9, //
            7, 8, 9, 0, 10, 11, 12, 0, 9, 9, 9, 9,
        ];
        let img = rgbx_to_rgb(0, &raw, 2, 2).unwrap();
        assert_eq!(img.as_raw(), &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    }
}
