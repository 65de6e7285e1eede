//! `deepread serve`: the model behind an OpenAI-compatible API (`/v1/chat/completions`, as vLLM serves
//! DeepSeek-OCR-2), every client's pages read together by the engine's continuous batching. Stops cleanly on
//! Ctrl-C or SIGTERM.

use std::path::PathBuf;

use anyhow::Context;
use clap::builder::RangedU64ValueParser;
use clap::Args;
use deepread_core::recognizer::{DeepSeekOcr2, ReadingMode};
use deepread_server::{
    serve, ServeOptions, API_KEY_ENV, DEFAULT_MAX_BODY_BYTES, DEFAULT_MODEL_NAME, DEFAULT_QUEUE,
};
use tokio::net::TcpListener;

use crate::convert::load_model;
use crate::failure::Failure;
use deepread_engine::quant::WeightFormat;

#[derive(Args)]
pub struct ServeArgs {
    /// Model folder (default: $DEEPREAD_MODEL, the Hugging Face cache, then the data folder: `deepread models list`).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Address to listen on; 0.0.0.0 serves the whole network (set DEEPREAD_SERVE_API_KEY then).
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to listen on (0: any free port; the URL printed says which).
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// The model name clients ask for, as vLLM's `--served-model-name`.
    #[arg(long, default_value = DEFAULT_MODEL_NAME)]
    served_model_name: String,
    /// Most pages decoding together (default: as many as the GPU's memory holds, up to 64; 4 on the CPU).
    #[arg(long)]
    slots: Option<usize>,
    /// The language model's weights: bf16, or int8 (see `deepread convert --weights`).
    #[arg(long, default_value = "bf16")]
    weights: WeightFormat,
    /// Pages that may wait for a slot; past them requests get 429 with Retry-After.
    #[arg(long, default_value_t = DEFAULT_QUEUE, value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    queue: usize,
}

pub fn run(args: ServeArgs) -> Result<(), Failure> {
    let api_key = std::env::var(API_KEY_ENV)
        .ok()
        .filter(|key| !key.trim().is_empty());
    let model = load_model(
        args.model.as_deref(),
        ReadingMode::Layout,
        args.slots,
        args.weights,
    )?;
    let options = ServeOptions {
        served_model_name: args.served_model_name,
        queue: args.queue,
        api_key,
        max_body_bytes: DEFAULT_MAX_BODY_BYTES,
    };
    let runtime = tokio::runtime::Runtime::new()
        .context("could not start the async runtime")
        .map_err(Failure::Unexpected)?;
    runtime
        .block_on(listen_and_serve(&args.host, args.port, model, options))
        .map_err(Failure::Unexpected)?;
    eprintln!("deepread serve: stopped");
    Ok(())
}

async fn listen_and_serve(
    host: &str,
    port: u16,
    model: DeepSeekOcr2,
    options: ServeOptions,
) -> anyhow::Result<()> {
    let listener = TcpListener::bind((host, port))
        .await
        .with_context(|| format!("cannot listen on {host}:{port}"))?;
    let address = listener
        .local_addr()
        .context("the listening socket has no address")?;
    if !address.ip().is_loopback() && options.api_key.is_none() {
        eprintln!(
            "warning: serving {} without an API key: anyone who can reach this machine can use its GPU; \
             set {API_KEY_ENV} to require one",
            address.ip()
        );
    }
    // Tests and scripts wait for this line.
    eprintln!("deepread serve: listening on http://{address}");
    serve(listener, model, options, stop_signal())
        .await
        .context("the server failed")
}

/// Ctrl-C or SIGTERM (what `systemctl stop` and `docker stop` send).
async fn stop_signal() {
    let interrupt = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                terminate.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => eprintln!("deepread serve: interrupted, stopping"),
        () = terminate => eprintln!("deepread serve: terminated, stopping"),
    }
}
