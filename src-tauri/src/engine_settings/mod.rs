//! Which engine reads: the model on this computer, or an OpenAI-compatible server (vLLM, SGLang,
//! `deepread serve`) the person points the app at. The choice is kept in a settings file
//! ([`file`]), the server's API key in the system keyring ([`keyring`]), and both are read when a
//! reading starts, so that a save takes effect on the next one.

mod connection;
mod file;

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};

use deepread_core::recognizer::remote::{Endpoint, DEFAULT_CONCURRENCY};
use deepread_core::recognizer::{ReadingMode, RemoteSettings, WeightFormat};
use serde::{Deserialize, Serialize};

use crate::keyring;

pub use connection::{test_connection, ConnectionReport};

/// The most pages a server may be sent at once, as the command line allows.
const MAX_CONCURRENCY: u32 = 1024;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// DeepSeek-OCR-2 in process (or the text layer without it).
    #[default]
    Local,
    /// An OpenAI-compatible server.
    Remote,
}

/// The engine settings, as the settings panel shows them and the settings file keeps them. Fields
/// left out take their defaults, so that a file from an older DeepRead still reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EngineSettings {
    pub engine: EngineKind,
    /// The server's API base, such as `http://127.0.0.1:8000/v1`.
    pub endpoint: String,
    /// The name the server serves the model under.
    pub model: String,
    /// Pages in flight at once; `None`: [`DEFAULT_CONCURRENCY`].
    pub concurrency: Option<u32>,
    /// Plain http to a server on another machine (pages and text cross the network unencrypted).
    pub allow_http: bool,
    /// The local model's language-model weights: bf16 as downloaded, or int8 (half the memory).
    pub weights: WeightFormat,
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings {
            engine: EngineKind::Local,
            endpoint: "http://127.0.0.1:8000/v1".to_owned(),
            model: "deepseek-ai/DeepSeek-OCR-2".to_owned(),
            concurrency: None,
            allow_http: false,
            weights: WeightFormat::Dense,
        }
    }
}

impl EngineSettings {
    /// Whether the remote fields can be read with: a server address (plain http to another machine
    /// only if allowed), a model name, and 1 to 1024 pages at once. The error is a sentence.
    pub fn check_remote(&self) -> Result<(), String> {
        // Its message starts with the address as given, so it stays in lower case.
        let endpoint =
            Endpoint::parse(&self.endpoint, self.allow_http).map_err(|e| e.to_string())?;
        if self.model.trim().is_empty() {
            return Err(format!(
                "Name the model {endpoint} serves, such as deepseek-ai/DeepSeek-OCR-2."
            ));
        }
        match self.concurrency {
            Some(pages) if !(1..=MAX_CONCURRENCY).contains(&pages) => Err(format!(
                "Pages in flight must be from 1 to {MAX_CONCURRENCY}, not {pages}."
            )),
            _ => Ok(()),
        }
    }

    /// What the server is sent at once.
    pub fn pages_in_flight(&self) -> usize {
        self.concurrency.map_or(DEFAULT_CONCURRENCY, |n| n as usize)
    }

    /// The remote recognizer's settings for a reading in `mode`, with `api_key`.
    pub fn remote(&self, mode: ReadingMode, api_key: Option<String>) -> RemoteSettings {
        RemoteSettings {
            api_key,
            concurrency: self.pages_in_flight(),
            allow_plain_http: self.allow_http,
            mode,
            ..RemoteSettings::new(self.endpoint.trim(), self.model.trim())
        }
    }

    /// The keyring account of this endpoint's API key: each server keeps its own.
    pub fn api_key_account(&self) -> String {
        format!("remote-api-key:{}", self.endpoint)
    }

    /// The API key kept for this endpoint; `Err` says why the keyring could not be asked.
    pub fn stored_api_key(&self) -> Result<Option<String>, keyring::SecretError> {
        keyring::load(&self.api_key_account())
    }

    /// Without the spaces a paste brings along.
    fn trimmed(mut self) -> Self {
        self.endpoint = self.endpoint.trim().to_owned();
        self.model = self.model.trim().to_owned();
        self
    }
}

/// What the settings panel shows: the settings, whether a key is kept for their endpoint, and why the
/// keyring could not say.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SettingsView {
    settings: EngineSettings,
    api_key_stored: bool,
    keyring_problem: Option<String>,
}

/// The engine settings of this window: read from their file once at start, replaced by each save.
pub struct Settings {
    path: Option<PathBuf>,
    current: Mutex<EngineSettings>,
}

impl Settings {
    /// The settings at [`file::default_path`], and a notice when that file could not be used.
    pub fn load() -> (Settings, Option<String>) {
        Settings::load_from(file::default_path())
    }

    fn load_from(path: Option<PathBuf>) -> (Settings, Option<String>) {
        let (settings, notice) = match &path {
            Some(path) => file::load(path),
            None => (EngineSettings::default(), None),
        };
        let current = Mutex::new(settings);
        (Settings { path, current }, notice)
    }

    /// The settings now: what the next reading uses.
    pub fn current(&self) -> EngineSettings {
        self.lock().clone()
    }

    /// The settings and what the keyring holds for their endpoint. Asks the keyring: call it off the
    /// window's thread.
    pub fn view(&self) -> SettingsView {
        let settings = self.current();
        let (api_key_stored, keyring_problem) = match settings.stored_api_key() {
            Ok(key) => (key.is_some(), None),
            // In lower case: the panel puts it inside a sentence of its own.
            Err(error) => (false, Some(error.to_string())),
        };
        SettingsView {
            settings,
            api_key_stored,
            keyring_problem,
        }
    }

    /// Checks and saves `settings` (the remote fields only when the server reads), then keeps, forgets
    /// or leaves the endpoint's API key as `api_key` says: `None` leaves it, `""` forgets it. The
    /// settings are saved even when the keyring fails; the error then says the key was not kept.
    pub fn save(
        &self,
        settings: EngineSettings,
        api_key: Option<String>,
    ) -> Result<SettingsView, String> {
        let settings = settings.trimmed();
        if settings.engine == EngineKind::Remote {
            settings.check_remote()?;
        }
        let path = self.path.as_ref().ok_or(
            "There is no configuration folder to keep settings in (no home folder): set \
             DEEPREAD_SETTINGS to a file.",
        )?;
        file::write(path, &settings).map_err(|error| {
            format!(
                "The settings could not be saved to {}: {error}",
                path.display()
            )
        })?;
        tracing::info!(engine = ?settings.engine, endpoint = %settings.endpoint, "engine settings saved");
        let account = settings.api_key_account();
        *self.lock() = settings;
        let kept = match api_key.as_deref().map(str::trim) {
            None => Ok(()),
            Some("") => keyring::forget(&account),
            Some(key) => keyring::store(&account, key),
        };
        kept.map_err(|error| {
            format!("The settings were saved, but the API key was not kept: {error}.")
        })?;
        Ok(self.view())
    }

    fn lock(&self) -> MutexGuard<'_, EngineSettings> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(endpoint: &str) -> EngineSettings {
        EngineSettings {
            engine: EngineKind::Remote,
            endpoint: endpoint.to_owned(),
            ..EngineSettings::default()
        }
    }

    #[test]
    fn the_defaults_read_locally_and_name_a_server_on_this_machine() {
        let settings: EngineSettings = serde_json::from_str("{}").unwrap();
        assert_eq!(settings, EngineSettings::default());
        assert_eq!(settings.engine, EngineKind::Local);
        assert_eq!(settings.endpoint, "http://127.0.0.1:8000/v1");
        assert_eq!(settings.model, "deepseek-ai/DeepSeek-OCR-2");
        assert_eq!(settings.pages_in_flight(), DEFAULT_CONCURRENCY);
        assert!(!settings.allow_http);
        assert_eq!(settings.check_remote(), Ok(()));
    }

    #[test]
    fn remote_settings_that_cannot_be_read_with_are_refused_naming_the_problem() {
        let error = remote("gpu:8000").check_remote().unwrap_err();
        assert!(
            error.starts_with("gpu:8000 is not a server address"),
            "{error}"
        );
        let error = remote("http://10.0.0.5:8000/v1")
            .check_remote()
            .unwrap_err();
        assert!(error.contains("plain http to another machine"), "{error}");
        let allowed = EngineSettings {
            allow_http: true,
            ..remote("http://10.0.0.5:8000/v1")
        };
        assert_eq!(allowed.check_remote(), Ok(()));
        let error = EngineSettings {
            model: "  ".into(),
            ..remote("https://gpu.example.com/v1")
        }
        .check_remote()
        .unwrap_err();
        assert!(
            error.starts_with("Name the model https://gpu.example.com/v1 serves"),
            "{error}"
        );
        for pages in [0, 1025] {
            let error = EngineSettings {
                concurrency: Some(pages),
                ..remote("https://gpu.example.com/v1")
            }
            .check_remote()
            .unwrap_err();
            assert_eq!(
                error,
                format!("Pages in flight must be from 1 to 1024, not {pages}.")
            );
        }
    }

    #[test]
    fn a_save_checks_the_remote_fields_only_when_the_server_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let (settings, notice) = Settings::load_from(Some(path.clone()));
        assert_eq!(notice, None);

        let refused = settings.save(remote("ftp://gpu/v1"), None).unwrap_err();
        assert!(refused.contains("http:// or https://"), "{refused}");
        assert!(
            !path.exists(),
            "nothing is written when the settings are refused"
        );
        assert_eq!(settings.current(), EngineSettings::default());

        let local = EngineSettings {
            endpoint: "ftp://gpu/v1".into(),
            concurrency: Some(0),
            ..EngineSettings::default()
        };
        // `None`: the keyring is left alone, so this runs without one.
        settings.save(local.clone(), None).unwrap();
        assert_eq!(settings.current(), local);
        assert_eq!(file::load(&path), (local, None));
    }

    #[test]
    fn a_save_keeps_the_fields_without_surrounding_spaces() {
        let dir = tempfile::tempdir().unwrap();
        let (settings, _) = Settings::load_from(Some(dir.path().join("settings.json")));
        let pasted = EngineSettings {
            model: " my/ocr\n".into(),
            ..remote("  https://gpu.example.com/v1 ")
        };
        settings.save(pasted, None).unwrap();
        let saved = settings.current();
        assert_eq!(
            (saved.endpoint.as_str(), saved.model.as_str()),
            ("https://gpu.example.com/v1", "my/ocr")
        );
        assert_eq!(
            saved.api_key_account(),
            "remote-api-key:https://gpu.example.com/v1"
        );
    }

    #[test]
    fn the_remote_recognizer_gets_the_mode_key_and_pages_in_flight() {
        let settings = EngineSettings {
            concurrency: Some(3),
            allow_http: true,
            ..remote("http://10.0.0.5:8000/v1")
        };
        let remote = settings.remote(ReadingMode::Plain, Some("sk-1".into()));
        assert_eq!(remote.endpoint, "http://10.0.0.5:8000/v1");
        assert_eq!(remote.model, "deepseek-ai/DeepSeek-OCR-2");
        assert_eq!(remote.api_key.as_deref(), Some("sk-1"));
        assert_eq!(remote.concurrency, 3);
        assert!(remote.allow_plain_http);
        assert_eq!(remote.mode, ReadingMode::Plain);
    }
}
