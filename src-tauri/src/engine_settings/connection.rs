//! The settings panel's connection test: does the server answer, with this key, and does it serve
//! the model named? Every outcome is a sentence; none is an error of the command.

use deepread_core::recognizer::remote::list_models;
use deepread_core::recognizer::ReadingMode;
use serde::Serialize;

use super::EngineSettings;

#[derive(Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionReport {
    /// The server answered and lists the model.
    pub ok: bool,
    pub message: String,
    /// What the server serves, in its order; empty when it did not answer.
    pub models: Vec<String>,
}

impl ConnectionReport {
    fn failed(message: String) -> Self {
        ConnectionReport {
            ok: false,
            message,
            models: Vec::new(),
        }
    }
}

/// Asks `settings`' server for its models, with `api_key`: `None` takes the key kept for that
/// endpoint, `""` sends none. Blocks up to the connect timeout (and on the keyring): call it off the
/// window's thread.
pub fn test_connection(settings: &EngineSettings, api_key: Option<String>) -> ConnectionReport {
    let settings = settings.clone().trimmed();
    if let Err(problem) = settings.check_remote() {
        return ConnectionReport::failed(problem);
    }
    let (api_key, keyring_problem) = match api_key.map(|key| key.trim().to_owned()) {
        Some(key) if key.is_empty() => (None, None),
        Some(key) => (Some(key), None),
        None => match settings.stored_api_key() {
            Ok(key) => (key, None),
            Err(error) => (None, Some(error)),
        },
    };
    let report = match list_models(&settings.remote(ReadingMode::default(), api_key)) {
        Ok(models) => judged(&settings, models),
        Err(error) => ConnectionReport::failed(format!("{error}.")),
    };
    match keyring_problem {
        // The key may be what is missing: say why it was not sent.
        Some(error) if !report.ok => ConnectionReport {
            message: format!("{} (No stored API key was sent: {error}.)", report.message),
            ..report
        },
        _ => report,
    }
}

/// Whether the models a server lists include the one asked for, in words.
fn judged(settings: &EngineSettings, models: Vec<String>) -> ConnectionReport {
    let (endpoint, model) = (&settings.endpoint, &settings.model);
    let (ok, message) = if models.iter().any(|served| served == model) {
        (true, format!("{endpoint} answers and serves {model}."))
    } else if models.is_empty() {
        (
            false,
            format!("{endpoint} answers, but lists no models: it cannot read with {model}."),
        )
    } else {
        (
            false,
            format!(
                "{endpoint} answers, but does not serve {model}; it serves {}.",
                models.join(", ")
            ),
        )
    };
    ConnectionReport {
        ok,
        message,
        models,
    }
}

#[cfg(test)]
mod tests {
    use super::super::EngineKind;
    use super::*;

    fn settings(endpoint: &str) -> EngineSettings {
        EngineSettings {
            engine: EngineKind::Remote,
            endpoint: endpoint.to_owned(),
            model: "deepseek-ai/DeepSeek-OCR-2".to_owned(),
            ..EngineSettings::default()
        }
    }

    #[test]
    fn the_chosen_model_among_those_served_is_a_success() {
        let served = vec!["a/b".to_owned(), "deepseek-ai/DeepSeek-OCR-2".to_owned()];
        let report = judged(&settings("https://gpu.example.com/v1"), served.clone());
        assert!(report.ok);
        assert_eq!(report.models, served);
        assert_eq!(
            report.message,
            "https://gpu.example.com/v1 answers and serves deepseek-ai/DeepSeek-OCR-2."
        );
    }

    #[test]
    fn a_server_serving_other_models_only_is_a_failure_naming_them() {
        let served = vec!["Qwen/Qwen2-VL".to_owned(), "other/ocr".to_owned()];
        let report = judged(&settings("https://gpu.example.com/v1"), served.clone());
        assert!(!report.ok);
        assert_eq!(report.models, served);
        assert!(
            report.message.ends_with(
                "does not serve deepseek-ai/DeepSeek-OCR-2; it serves Qwen/Qwen2-VL, other/ocr."
            ),
            "{}",
            report.message
        );
        assert!(!judged(&settings("https://gpu.example.com/v1"), Vec::new()).ok);
    }

    #[test]
    fn settings_that_cannot_be_read_with_fail_without_asking_anyone() {
        // "" sends no key, so the keyring is not asked either.
        let report = test_connection(&settings("http://10.0.0.5/v1"), Some(String::new()));
        assert!(!report.ok);
        assert!(report.message.contains("plain http"), "{}", report.message);
    }

    #[test]
    fn a_server_that_is_not_there_is_a_failure_in_words() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let endpoint = format!("http://127.0.0.1:{port}/v1");
        let report = test_connection(&settings(&endpoint), Some("sk-test".into()));
        assert_eq!(
            report,
            ConnectionReport::failed(format!(
                "{endpoint} refused the connection (is the server running, on that port?)."
            ))
        );
    }
}
