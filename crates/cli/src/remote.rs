//! `convert --engine remote`: reading through an OpenAI-compatible server (vLLM, SGLang) instead of
//! the GPU of this machine. The server's API key comes from `$DEEPREAD_API_KEY`, never from a flag,
//! where any user could read it in the process list.

use std::path::Path;

use anyhow::{bail, Context};
use clap::Args;
use deepread_core::recognizer::remote::DEFAULT_CONCURRENCY;
use deepread_core::recognizer::{ReadingMode, RemoteError, RemoteRecognizer, RemoteSettings};

/// The environment variable the API key is read from.
pub const API_KEY_VAR: &str = "DEEPREAD_API_KEY";

#[derive(Args)]
pub struct RemoteArgs {
    /// With --engine remote: the server's OpenAI-compatible API, such as http://127.0.0.1:8000/v1
    /// (vLLM, SGLang). An API key, if it wants one, is read from $DEEPREAD_API_KEY.
    #[arg(long, value_name = "URL", required_if_eq("engine", "remote"))]
    endpoint: Option<String>,
    /// With --engine remote: most pages sent to the server at once [default: 16].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    concurrency: Option<u32>,
    /// With --engine remote: allow plain http to a server on another machine (pages and text cross
    /// the network unencrypted; http to this machine is always allowed).
    #[arg(long)]
    allow_http: bool,
}

impl RemoteArgs {
    /// Whether any remote option was given (they mean nothing with another engine).
    pub fn given(&self) -> bool {
        self.endpoint.is_some() || self.concurrency.is_some() || self.allow_http
    }

    /// The recognizer for `--engine remote`; `model` is `--model`, the name the server serves.
    pub fn recognizer(
        &self,
        model: Option<&Path>,
        mode: ReadingMode,
    ) -> anyhow::Result<RemoteRecognizer> {
        let (Some(endpoint), Some(model)) = (&self.endpoint, model) else {
            bail!("--engine remote needs --endpoint URL and --model NAME");
        };
        let model = model
            .to_str()
            .context("--model: the model name is not valid UTF-8")?;
        let settings = RemoteSettings {
            api_key: api_key()?,
            concurrency: self.concurrency.map_or(DEFAULT_CONCURRENCY, |n| n as usize),
            allow_plain_http: self.allow_http,
            mode,
            ..RemoteSettings::new(endpoint.as_str(), model)
        };
        let concurrency = settings.concurrency;
        let recognizer = RemoteRecognizer::new(settings).map_err(|error| match error {
            RemoteError::PlainHttp { .. } => {
                anyhow::anyhow!("{error} (--allow-http)")
            }
            other => anyhow::Error::new(other).context("--engine remote"),
        })?;
        eprintln!("reading with {model} at {endpoint}, up to {concurrency} page(s) at once");
        Ok(recognizer)
    }
}

/// `$DEEPREAD_API_KEY`, if set and not empty.
fn api_key() -> anyhow::Result<Option<String>> {
    match std::env::var(API_KEY_VAR) {
        Ok(key) if key.trim().is_empty() => Ok(None),
        Ok(key) => Ok(Some(key.trim().to_owned())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(error) => Err(error).with_context(|| format!("${API_KEY_VAR}")),
    }
}
