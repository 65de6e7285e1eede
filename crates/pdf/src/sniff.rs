//! Telling what a file is from its first bytes, never from its name.

/// What the bytes look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sniffed {
    Pdf,
    Image(image::ImageFormat),
    Unknown,
}

/// Viewers accept a PDF header anywhere in the first kilobyte (junk before `%PDF-` is common in
/// files written by broken mailers and servers), so we do too.
const PDF_HEADER_WINDOW: usize = 1024;

pub(crate) fn sniff(bytes: &[u8]) -> Sniffed {
    if let Some(format) = image_format(bytes) {
        return Sniffed::Image(format);
    }
    let window = &bytes[..bytes.len().min(PDF_HEADER_WINDOW)];
    if window.windows(5).any(|w| w == b"%PDF-") {
        return Sniffed::Pdf;
    }
    Sniffed::Unknown
}

/// Only the formats this crate decodes: PNG, JPEG, TIFF and WebP.
fn image_format(bytes: &[u8]) -> Option<image::ImageFormat> {
    use image::ImageFormat;
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageFormat::Png)
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(ImageFormat::Jpeg)
    } else if bytes.starts_with(b"II*\0") || bytes.starts_with(b"MM\0*") {
        Some(ImageFormat::Tiff)
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some(ImageFormat::WebP)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_magic_numbers_from_the_format_specifications() {
        assert_eq!(sniff(b"%PDF-1.7\n"), Sniffed::Pdf);
        assert_eq!(sniff(b"junk\n%PDF-1.1\n"), Sniffed::Pdf);
        assert_eq!(
            sniff(b"\x89PNG\r\n\x1a\n...."),
            Sniffed::Image(image::ImageFormat::Png)
        );
        assert_eq!(
            sniff(&[0xFF, 0xD8, 0xFF, 0xE0]),
            Sniffed::Image(image::ImageFormat::Jpeg)
        );
        assert_eq!(
            sniff(b"MM\0*\0\0\0\x08"),
            Sniffed::Image(image::ImageFormat::Tiff)
        );
        assert_eq!(
            sniff(b"RIFF\x10\0\0\0WEBPVP8 "),
            Sniffed::Image(image::ImageFormat::WebP)
        );
        assert_eq!(sniff(b""), Sniffed::Unknown);
        assert_eq!(sniff(b"GIF89a"), Sniffed::Unknown);
    }

    #[test]
    fn a_pdf_header_past_the_first_kilobyte_is_not_a_pdf() {
        let mut bytes = vec![b' '; PDF_HEADER_WINDOW];
        bytes.extend_from_slice(b"%PDF-1.4");
        assert_eq!(sniff(&bytes), Sniffed::Unknown);
    }
}
