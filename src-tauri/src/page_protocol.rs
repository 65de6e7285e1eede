//! `page://localhost/<document>/<page>?w=<pixels>`: page images for the webview, rendered by PDFium
//! on a worker thread and cached, so the page view loads them like any image (no base64 over IPC).
//! With `&box=x1,y1,x2,y2` (0..999, repeatable), the figure under those boxes, cropped from the page
//! rendered at that width exactly as Export crops it.

use std::sync::Arc;

use deepread_core::export::crop_figure;
use deepread_core::BoxNorm;
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
    let pairs = || query.into_iter().flat_map(|q| q.split('&'));
    let requested = pairs()
        .find_map(|pair| pair.strip_prefix("w="))
        .and_then(|w| w.parse::<u32>().ok())
        .unwrap_or(DEFAULT_WIDTH);
    let width = requested.clamp(1, MAX_WIDTH).div_ceil(WIDTH_STEP) * WIDTH_STEP;
    let crop = pairs()
        .filter_map(|pair| pair.strip_prefix("box="))
        .map(parse_box)
        .collect::<Option<Vec<_>>>()?;
    Some(ImageKey {
        document,
        page,
        width,
        crop,
    })
}

/// `x1,y1,x2,y2` in 0..999, as the model wrote them (clamped and ordered as the parser does).
fn parse_box(text: &str) -> Option<BoxNorm> {
    let coords = text
        .split(',')
        .map(|c| c.trim().parse::<i64>().ok())
        .collect::<Option<Vec<_>>>()?;
    match coords[..] {
        [x1, y1, x2, y2] => Some(BoxNorm::from_model(x1, y1, x2, y2)),
        _ => None,
    }
}

fn page_image(library: &Library, key: ImageKey) -> Response<Vec<u8>> {
    if let Some(bytes) = library.cached_image(&key) {
        return image_response(bytes.as_ref().clone());
    }
    let Some(document) = library.document(&key.document) else {
        return error_response(StatusCode::NOT_FOUND, "this document is not open");
    };
    let render = || {
        document
            .render_page(key.page, deepread_pdf::RenderSize::Width(key.width))
            .map_err(|e| e.to_string())
    };
    let rendered = if key.crop.is_empty() {
        render().and_then(|page| encode_jpeg(&page))
    } else {
        library
            .page_for_figures(&key, render)
            .and_then(|page| encode_jpeg(&crop_figure(&page, &key.crop)))
    };
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

    #[test]
    fn a_figure_request_names_its_boxes_clamped_and_ordered_as_the_model_parser_does() {
        let key = parse_request(
            "/d/2",
            Some("w=2000&box=140,270,450,555&box=-3,900,1200,10"),
        )
        .unwrap();
        let boxes: Vec<_> = key.crop.iter().map(|b| [b.x1, b.y1, b.x2, b.y2]).collect();
        assert_eq!(boxes, [[140, 270, 450, 555], [0, 10, 999, 900]]);
        assert!(parse_request("/d/0", None).unwrap().crop.is_empty());
    }

    #[test]
    fn a_malformed_box_is_refused_rather_than_served_as_the_whole_page() {
        assert!(parse_request("/d/0", Some("box=1,2,3")).is_none());
        assert!(parse_request("/d/0", Some("box=a,b,c,d")).is_none());
    }
}
