//! `page://localhost/<document>/<page>?w=<pixels>`: page images for the webview, rendered by PDFium
//! on a worker thread and cached, so the page view loads them like any image (no base64 over IPC).

use std::sync::Arc;

use image::codecs::jpeg::JpegEncoder;
use image::RgbImage;
use tauri::http::{header, Request, Response, StatusCode};
use tauri::{Manager, Runtime, UriSchemeContext, UriSchemeResponder};

use crate::library::{ImageKey, Library};

pub const SCHEME: &str = "page";

/// Widths are rounded up to a step so zooming does not render every pixel width anew.
const WIDTH_STEP: u32 = 100;
const MAX_WIDTH: u32 = 4000;
const DEFAULT_WIDTH: u32 = 1400;
const JPEG_QUALITY: u8 = 90;

pub fn serve<R: Runtime>(
    ctx: UriSchemeContext<'_, R>,
    request: Request<Vec<u8>>,
    responder: UriSchemeResponder,
) {
    let app = ctx.app_handle().clone();
    let uri = request.uri().clone();
    std::thread::spawn(move || {
        let library = app.state::<Library>();
        let response = match parse_request(uri.path(), uri.query()) {
            Some(key) => page_image(&library, key),
            None => error_response(
                StatusCode::BAD_REQUEST,
                "expected /<document>/<page>?w=<px>",
            ),
        };
        responder.respond(response);
    });
}

fn parse_request(path: &str, query: Option<&str>) -> Option<ImageKey> {
    let mut parts = path.trim_start_matches('/').split('/');
    let document = parts.next().filter(|d| !d.is_empty())?.to_owned();
    let page = parts.next()?.parse().ok()?;
    let requested = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|pair| pair.strip_prefix("w="))
        .and_then(|w| w.parse::<u32>().ok())
        .unwrap_or(DEFAULT_WIDTH);
    let width = requested.clamp(1, MAX_WIDTH).div_ceil(WIDTH_STEP) * WIDTH_STEP;
    Some(ImageKey {
        document,
        page,
        width,
    })
}

fn page_image(library: &Library, key: ImageKey) -> Response<Vec<u8>> {
    if let Some(bytes) = library.cached_image(&key) {
        return image_response(bytes.as_ref().clone());
    }
    let Some(document) = library.document(&key.document) else {
        return error_response(StatusCode::NOT_FOUND, "this document is not open");
    };
    let rendered = document
        .render_page(key.page, deepread_pdf::RenderSize::Width(key.width))
        .map_err(|e| e.to_string())
        .and_then(|image| encode_jpeg(&image));
    match rendered {
        Ok(bytes) => {
            let bytes = Arc::new(bytes);
            library.cache_image(key, Arc::clone(&bytes));
            image_response(bytes.as_ref().clone())
        }
        Err(message) => {
            tracing::warn!(page = key.page, %message, "page render failed");
            error_response(StatusCode::UNPROCESSABLE_ENTITY, &message)
        }
    }
}

fn encode_jpeg(image: &RgbImage) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    JpegEncoder::new_with_quality(&mut bytes, JPEG_QUALITY)
        .encode_image(image)
        .map_err(|e| format!("could not encode the page image: {e}"))?;
    Ok(bytes)
}

fn image_response(bytes: Vec<u8>) -> Response<Vec<u8>> {
    Response::builder()
        .header(header::CONTENT_TYPE, "image/jpeg")
        .header(header::CACHE_CONTROL, "max-age=3600")
        .body(bytes)
        .unwrap_or_default()
}

fn error_response(status: StatusCode, message: &str) -> Response<Vec<u8>> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(message.as_bytes().to_vec())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_names_document_page_and_a_rounded_width() {
        let key = parse_request("/abc123/4", Some("w=1234")).unwrap();
        assert_eq!(key.document, "abc123");
        assert_eq!(key.page, 4);
        assert_eq!(key.width, 1300);
    }

    #[test]
    fn width_defaults_and_is_capped() {
        assert_eq!(parse_request("/d/0", None).unwrap().width, DEFAULT_WIDTH);
        assert_eq!(
            parse_request("/d/0", Some("w=99999")).unwrap().width,
            MAX_WIDTH
        );
    }

    #[test]
    fn malformed_paths_are_refused() {
        assert!(parse_request("/", None).is_none());
        assert!(parse_request("/d/not-a-number", None).is_none());
    }
}
