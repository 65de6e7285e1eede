//! A page image (PNG, JPEG, TIFF, WebP) read as a one-page document.
//!
//! Its size in points is its size in pixels: we treat every image as 72 dpi, whatever resolution the
//! file states, so one pixel of the upright image is one point of the page, and [`RenderSize::Native`]
//! gives its pixels as they are. A TIFF with several frames is read as its first frame.

use std::io::Cursor;

use image::imageops::FilterType;
use image::{DynamicImage, ImageDecoder, ImageError, ImageFormat, ImageReader, RgbImage};

use crate::error::PdfError;
use crate::geometry::PageSize;
use crate::render::RenderSize;

pub(crate) struct ImageDoc {
    /// Upright (EXIF orientation applied), flattened onto white.
    page: RgbImage,
}

impl ImageDoc {
    pub(crate) fn decode(bytes: &[u8], format: ImageFormat) -> Result<Self, PdfError> {
        let mut decoder = ImageReader::with_format(Cursor::new(bytes), format)
            .into_decoder()
            .map_err(decode_error)?;
        let (width, height) = decoder.dimensions();
        // Refuse before decoding: the pixels are allocated by `from_decoder`.
        RenderSize::Dpi(72.0).pixels_for(
            0,
            PageSize {
                width_pt: width as f32,
                height_pt: height as f32,
            },
        )?;
        let orientation = decoder.orientation().map_err(decode_error)?;
        let mut image = DynamicImage::from_decoder(decoder).map_err(decode_error)?;
        image.apply_orientation(orientation);
        tracing::debug!(?format, ?orientation, width, height, "decoded page image");
        Ok(ImageDoc {
            page: flatten_on_white(image),
        })
    }

    pub(crate) fn page_size(&self) -> PageSize {
        PageSize {
            width_pt: self.page.width() as f32,
            height_pt: self.page.height() as f32,
        }
    }

    pub(crate) fn render(&self, size: RenderSize) -> Result<RgbImage, PdfError> {
        let size = match size {
            RenderSize::Native { .. } => RenderSize::Dpi(72.0),
            size => size,
        };
        let (width, height) = size.pixels_for(0, self.page_size())?;
        if (width, height) == self.page.dimensions() {
            return Ok(self.page.clone());
        }
        Ok(image::imageops::resize(
            &self.page,
            width,
            height,
            FilterType::CatmullRom,
        ))
    }
}

fn decode_error(error: ImageError) -> PdfError {
    PdfError::Corrupt {
        reason: format!("the image cannot be decoded: {error}"),
    }
}

/// Transparent pixels are shown on white, as a PDF page would be.
fn flatten_on_white(image: DynamicImage) -> RgbImage {
    if !image.color().has_alpha() {
        return image.to_rgb8();
    }
    let rgba = image.to_rgba8();
    let (width, height) = rgba.dimensions();
    let mut rgb = RgbImage::new(width, height);
    for (out, px) in rgb.pixels_mut().zip(rgba.pixels()) {
        let alpha = u32::from(px[3]);
        for channel in 0..3 {
            let blended = (u32::from(px[channel]) * alpha + 255 * (255 - alpha) + 127) / 255;
            out[channel] = blended as u8;
        }
    }
    rgb
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgba, RgbaImage};

    #[test]
    fn transparency_is_composited_on_white() {
        let mut rgba = RgbaImage::new(3, 1);
        rgba.put_pixel(0, 0, Rgba([0, 0, 0, 0])); // fully transparent: white
        rgba.put_pixel(1, 0, Rgba([0, 0, 0, 255])); // opaque black stays black
        rgba.put_pixel(2, 0, Rgba([0, 0, 0, 128])); // half black on white: mid grey
        let rgb = flatten_on_white(DynamicImage::ImageRgba8(rgba));
        assert_eq!(rgb.get_pixel(0, 0).0, [255, 255, 255]);
        assert_eq!(rgb.get_pixel(1, 0).0, [0, 0, 0]);
        assert_eq!(rgb.get_pixel(2, 0).0, [127, 127, 127]);
    }
}
