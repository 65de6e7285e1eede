//! DeepSeek-OCR-2 on another machine: pages sent to an OpenAI-compatible server (vLLM, SGLang, or
//! `deepread serve`) as the in-process engine would read them (the same rendering, prompt and
//! decoding), several at once, their text streamed back into the same pipeline.

mod client;
mod dispatch;
mod endpoint;
mod fault;
mod probe;
mod request;
mod stream;

use std::sync::Arc;
use std::time::Duration;

use deepread_engine::GenerateOptions;
use sha2::{Digest, Sha256};

use super::deepseek::MODEL_PAGE;
use super::{PageFeed, PageNeeds, PageSink, ReadingMode, Recognizer, RENDER_DPI};
use client::Client;
use request::Decoding;

pub use client::MAX_ATTEMPTS;
pub use endpoint::Endpoint;
pub use fault::RemoteError;
pub use probe::list_models;
/// The page as it is sent, for the client's benchmark (`examples/remote_client.rs`).
pub use request::encode_png;

/// Pages in flight at once unless told otherwise: enough to keep a server's batch full.
pub const DEFAULT_CONCURRENCY: usize = 16;

/// How long the server may take before a page fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// To accept the connection (name lookup and TLS included).
    pub connect: Duration,
    /// With nothing sent: before the reply starts, and between two pieces of it. Generous, since a
    /// busy server may hold a page in its queue before it writes anything.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            idle: Duration::from_secs(120),
        }
    }
}

/// Where the server is and how to read with it.
#[derive(Clone)]
pub struct RemoteSettings {
    /// The API's base URL, such as `http://127.0.0.1:8000/v1`.
    pub endpoint: String,
    /// The model name the server serves, such as `deepseek-ai/DeepSeek-OCR-2`.
    pub model: String,
    /// Sent as `Authorization: Bearer …`; never part of the fingerprint or of any message.
    pub api_key: Option<String>,
    /// Most requests in flight at once.
    pub concurrency: usize,
    /// Plain http to a host other than this machine (refused otherwise).
    pub allow_plain_http: bool,
    pub mode: ReadingMode,
    /// Tokens a page may take: the in-process engine's cap unless told otherwise.
    pub max_tokens: usize,
    pub timeouts: Timeouts,
}

impl RemoteSettings {
    /// The defaults: the in-process engine's reading, 16 pages at once.
    pub fn new(endpoint: impl Into<String>, model: impl Into<String>) -> Self {
        RemoteSettings {
            endpoint: endpoint.into(),
            model: model.into(),
            api_key: None,
            concurrency: DEFAULT_CONCURRENCY,
            allow_plain_http: false,
            mode: ReadingMode::default(),
            max_tokens: GenerateOptions::default().max_new_tokens,
            timeouts: Timeouts::default(),
        }
    }
}

/// Written by hand so that the API key never reaches a log.
impl std::fmt::Debug for RemoteSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSettings")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .field("concurrency", &self.concurrency)
            .field("allow_plain_http", &self.allow_plain_http)
            .field("mode", &self.mode)
            .field("max_tokens", &self.max_tokens)
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

pub struct RemoteRecognizer {
    client: Arc<Client>,
    concurrency: usize,
    name: String,
    fingerprint: String,
}

impl RemoteRecognizer {
    /// Checks the endpoint (nothing is sent yet: a server that is down fails the pages, each saying so).
    pub fn new(settings: RemoteSettings) -> Result<Self, RemoteError> {
        let endpoint = Endpoint::parse(&settings.endpoint, settings.allow_plain_http)?;
        if settings.model.trim().is_empty() {
            return Err(RemoteError::NoModel {
                endpoint: endpoint.to_string(),
            });
        }
        let decoding = Decoding {
            max_tokens: settings.max_tokens,
            no_repeat_ngram: GenerateOptions::default().no_repeat_ngram,
        };
        let fingerprint = fingerprint(&endpoint, &settings.model, settings.mode, &decoding);
        let name = format!("{} (remote)", settings.model);
        let client = Client::new(
            endpoint,
            settings.model,
            settings.mode,
            decoding,
            settings.api_key,
            settings.timeouts,
        );
        Ok(RemoteRecognizer {
            client: Arc::new(client),
            concurrency: settings.concurrency.max(1),
            name,
            fingerprint,
        })
    }
}

impl Recognizer for RemoteRecognizer {
    fn name(&self) -> &str {
        &self.name
    }

    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The page as the in-process engine renders it, so that the server preprocesses the same pixels.
    fn needs(&self) -> PageNeeds {
        MODEL_PAGE
    }

    fn read(&self, pages: &mut dyn PageFeed, sink: &mut dyn PageSink) {
        dispatch::read(&self.client, self.concurrency, pages, sink);
    }
}

/// "remote/" and a digest of everything that changes what the server writes: where it is, which model,
/// the prompt, the rendering and the decoding. Results of a server never mix with the in-process
/// engine's, nor with another server's.
fn fingerprint(endpoint: &Endpoint, model: &str, mode: ReadingMode, decoding: &Decoding) -> String {
    let mut hasher = Sha256::new();
    for part in [
        endpoint.as_str(),
        model,
        mode.preset().text(),
        &format!("{RENDER_DPI} dpi png"),
        &format!("{decoding:?}"),
    ] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    format!("remote/{}", &hex::encode(hasher.finalize())[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print(settings: RemoteSettings) -> String {
        RemoteRecognizer::new(settings).unwrap().fingerprint
    }

    #[test]
    fn the_fingerprint_follows_what_changes_the_output_and_nothing_else() {
        let base = || RemoteSettings::new("http://127.0.0.1:8000/v1", "deepseek-ai/DeepSeek-OCR-2");
        let first = print(base());
        assert!(first.starts_with("remote/"), "{first}");
        let changed = [
            RemoteSettings {
                endpoint: "http://127.0.0.1:8001/v1".into(),
                ..base()
            },
            RemoteSettings {
                model: "deepseek-ai/DeepSeek-OCR".into(),
                ..base()
            },
            RemoteSettings {
                mode: ReadingMode::Plain,
                ..base()
            },
            RemoteSettings {
                max_tokens: 4096,
                ..base()
            },
        ];
        for settings in changed {
            assert_ne!(print(settings.clone()), first, "{settings:?}");
        }
        let same = [
            RemoteSettings {
                api_key: Some("sk-secret".into()),
                ..base()
            },
            RemoteSettings {
                concurrency: 3,
                ..base()
            },
            RemoteSettings {
                timeouts: Timeouts {
                    connect: Duration::from_secs(1),
                    idle: Duration::from_secs(1),
                },
                ..base()
            },
            RemoteSettings {
                endpoint: "http://127.0.0.1:8000/v1/".into(),
                ..base()
            },
        ];
        for settings in same {
            assert_eq!(print(settings.clone()), first, "{settings:?}");
        }
    }

    #[test]
    fn the_api_key_never_shows_in_debug_output() {
        let settings = RemoteSettings {
            api_key: Some("sk-secret".into()),
            ..RemoteSettings::new("https://gpu.example.com/v1", "m")
        };
        assert!(!format!("{settings:?}").contains("sk-secret"));
    }

    #[test]
    fn a_server_without_a_model_name_is_refused() {
        let error =
            RemoteRecognizer::new(RemoteSettings::new("http://127.0.0.1:8000/v1", " ")).err();
        assert!(
            matches!(&error, Some(RemoteError::NoModel { .. })),
            "{error:?}"
        );
    }
}
