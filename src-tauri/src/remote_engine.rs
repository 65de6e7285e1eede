//! Reading through the server the engine settings name: its recognizer for a reading, and what the
//! top bar says of it. The local model is never loaded for this.

use std::sync::Arc;

use deepread_core::recognizer::{ReadingMode, Recognizer, RemoteRecognizer, TextLayerRecognizer};

use crate::engine_settings::EngineSettings;
use crate::reading::{text_layer_notice, EngineStatus};

/// The server's recognizer for a reading in `mode`, with the API key kept for its endpoint, and a word
/// when the key could not be read. Settings the server cannot be read with (a bad address in a
/// hand-edited file, say) fall back to the text layer, saying why.
pub fn recognizer(
    settings: &EngineSettings,
    mode: ReadingMode,
) -> (Arc<dyn Recognizer>, Option<String>) {
    let (api_key, key_notice) = match settings.stored_api_key() {
        Ok(key) => (key, None),
        Err(error) => (
            None,
            Some(format!(
                "The server's API key could not be read ({error}): reading without one."
            )),
        ),
    };
    match RemoteRecognizer::new(settings.remote(mode, api_key)) {
        Ok(remote) => {
            tracing::info!(
                endpoint = %settings.endpoint, model = %settings.model,
                pages_in_flight = settings.pages_in_flight(), "reading through a server"
            );
            (Arc::new(remote), key_notice)
        }
        Err(error) => (
            Arc::new(TextLayerRecognizer::new()),
            Some(text_layer_notice(&unusable(&error))),
        ),
    }
}

/// Who reads and where, for the top bar: the server and the model it serves.
pub fn status(settings: &EngineSettings) -> EngineStatus {
    match RemoteRecognizer::new(settings.remote(ReadingMode::default(), None)) {
        Ok(remote) => EngineStatus {
            recognizer: remote.name().to_owned(),
            device: Some(format!("server at {}", settings.endpoint)),
            device_detail: Some(format!(
                "Pages are sent to {} and read there by {}, up to {} at once.",
                settings.endpoint,
                settings.model,
                settings.pages_in_flight()
            )),
            memory_bytes: None,
            reading_modes: true,
            notice: None,
            model_missing: false,
        },
        Err(error) => EngineStatus {
            recognizer: TextLayerRecognizer::new().name().to_owned(),
            device: None,
            device_detail: None,
            memory_bytes: None,
            reading_modes: false,
            notice: Some(text_layer_notice(&unusable(&error))),
            model_missing: false,
        },
    }
}

fn unusable(error: &impl std::fmt::Display) -> String {
    format!("The server in the engine settings cannot be used: {error}.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine_settings::EngineKind;

    fn remote(endpoint: &str) -> EngineSettings {
        EngineSettings {
            engine: EngineKind::Remote,
            endpoint: endpoint.to_owned(),
            concurrency: Some(8),
            ..EngineSettings::default()
        }
    }

    #[test]
    fn the_top_bar_names_the_server_the_model_and_pages_in_flight() {
        let status = serde_json::to_value(status(&remote("https://gpu.example.com/v1"))).unwrap();
        assert_eq!(
            status,
            serde_json::json!({
                "recognizer": "deepseek-ai/DeepSeek-OCR-2 (remote)",
                "device": "server at https://gpu.example.com/v1",
                "deviceDetail": "Pages are sent to https://gpu.example.com/v1 and read there by \
                                 deepseek-ai/DeepSeek-OCR-2, up to 8 at once.",
                "memoryBytes": null,
                "readingModes": true,
                "notice": null,
                "modelMissing": false,
            })
        );
    }

    #[test]
    fn a_server_address_that_cannot_be_used_falls_back_to_the_text_layer_saying_why() {
        let status = status(&remote("http://10.0.0.5:8000/v1"));
        assert_eq!(status.recognizer, TextLayerRecognizer::new().name());
        let notice = status.notice.unwrap();
        assert!(notice.contains("plain http"), "{notice}");
        assert!(
            notice.ends_with("Reading the PDF's own text layer instead."),
            "{notice}"
        );
    }
}
