//! `deepread`: documents to Markdown on the command line, with the same engine, cache and events as
//! the desktop app.

mod bench;
mod check_quant;
mod convert;
mod failure;
mod models;
mod ocr;
mod page_ranges;
mod password;
mod progress;
mod remote;
mod serve;
mod synthesize;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(
    name = "deepread",
    version,
    about = "Read documents to Markdown with DeepSeek-OCR-2, locally"
)]
#[command(after_help = failure::EXIT_CODES_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Convert documents to Markdown (plus figures, and JSON with --json).
    Convert(convert::ConvertArgs),
    /// Read one page and stream the model's raw output to stdout.
    Ocr(ocr::OcrArgs),
    /// List or check model weights.
    Models {
        #[command(subcommand)]
        command: models::ModelsCommand,
    },
    /// Time the engine on synthetic pages: vision + prefill, decode step per batch size, tokens/s.
    Bench(bench::BenchArgs),
    /// Write a DeepSeek-OCR-2 checkpoint folder with random weights, for tests (`--model DIR` loads it).
    Synthesize(synthesize::SynthesizeArgs),
    /// Serve the model over an OpenAI-compatible API (/v1/chat/completions, as vLLM serves it).
    Serve(serve::ServeArgs),
}

/// The reading prompt.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Mode {
    /// Markdown with layout boxes ("<|grounding|>Convert the document to markdown.").
    Layout,
    /// Plain text ("Free OCR.").
    Plain,
}

impl From<Mode> for deepread_core::recognizer::ReadingMode {
    fn from(mode: Mode) -> Self {
        match mode {
            Mode::Layout => deepread_core::recognizer::ReadingMode::Layout,
            Mode::Plain => deepread_core::recognizer::ReadingMode::Plain,
        }
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Convert(args) => convert::run(args),
        Command::Ocr(args) => ocr::run(args),
        Command::Models { command } => models::run(command),
        Command::Bench(args) => bench::run(args),
        Command::Synthesize(args) => synthesize::run(args),
        Command::Serve(args) => serve::run(args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("deepread: {failure}");
            failure.exit_code()
        }
    }
}
