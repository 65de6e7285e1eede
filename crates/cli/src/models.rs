//! `deepread models list|download|verify|check-quant`: where the model is looked for and what is there, fetching
//! it from the Hugging Face hub, whether its weights load, and how far int8 weights move it.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use clap::{Args, Subcommand};
use deepread_core::recognizer::locate_model;
use deepread_engine::Model;
use deepread_models::{
    candidates, locate_in, DownloadError, DownloadOptions, Env, ModelFiles, Place, Progress,
    PINNED_REVISION, REPO,
};
use indicatif::{HumanBytes, HumanDuration, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::check_quant::{self, CheckQuantArgs};
use crate::failure::Failure;

#[derive(Subcommand)]
pub enum ModelsCommand {
    /// Where DeepRead looks for the model, in order, what each place holds, and which one is used.
    List {
        /// A model folder to look in first, as `--model` does for convert and ocr.
        #[arg(long)]
        model: Option<PathBuf>,
    },
    /// Downloads DeepSeek-OCR-2 from the Hugging Face hub (HF_ENDPOINT, HF_TOKEN honoured), checking
    /// every file's hash. Stopped (Ctrl+C, a lost connection), it resumes where it was when run again.
    Download(DownloadArgs),
    /// Loads a model's weights and checks every tensor against its config.
    Verify {
        /// Model folder (default: the one `deepread models list` marks).
        #[arg(long)]
        model: Option<PathBuf>,
    },
    /// How far int8 weights (`--weights int8`) move the model on your own pages: each page read in bf16,
    /// then its tokens teacher-forced through bf16 and int8, the logits compared.
    CheckQuant(CheckQuantArgs),
}

#[derive(Args)]
pub struct DownloadArgs {
    /// Commit, branch or tag of deepseek-ai/DeepSeek-OCR-2 (default: the commit DeepRead was checked
    /// against).
    #[arg(long, default_value = PINNED_REVISION)]
    revision: String,
    /// A Hugging Face cache folder to download into (default: $HF_HUB_CACHE, else $HF_HOME/hub, else
    /// ~/.cache/huggingface/hub, where Python tools look too).
    #[arg(long)]
    to: Option<PathBuf>,
}

pub fn run(command: ModelsCommand) -> Result<(), Failure> {
    match command {
        ModelsCommand::List { model } => list(model.as_deref()),
        ModelsCommand::Download(args) => download(args),
        ModelsCommand::Verify { model } => {
            verify(&locate_model(model.as_deref()).map_err(Failure::model)?)
        }
        ModelsCommand::CheckQuant(args) => check_quant::run(args),
    }
}

fn list(explicit: Option<&Path>) -> Result<(), Failure> {
    let env = Env::from_process();
    let used = locate_in(explicit, &env).ok();
    println!("Where DeepRead looks for DeepSeek-OCR-2, in order (* marks the one used):");
    for (number, place) in candidates(explicit, &env).iter().enumerate() {
        let is_used = used.as_ref().is_some_and(|used| {
            used.source == place.source && place.dir.as_ref() == Some(&used.dir)
        });
        println!("{}", describe(number + 1, place, is_used));
    }
    match used {
        Some(used) => println!("Uses {}", used.dir.display()),
        None => println!(
            "No model found: download it with `deepread models download`, or name its folder with --model."
        ),
    }
    print_device();
    Ok(())
}

/// Where the model reads: the GPU with its memory and compute capability beside the build's, or the CPU
/// and why a GPU that is there is not used.
fn print_device() {
    let placement = deepread_engine::device::place();
    println!("Reads on: {}", placement.describe());
    if let Some(problem) = &placement.problem {
        println!("{problem}");
    }
}

/// One place, e.g. `* 3. Hugging Face cache, pinned revision aaa02f3: /…/snapshots/aaa…: 3 files, 6.79 GB`.
fn describe(number: usize, place: &Place, is_used: bool) -> String {
    let marker = if is_used { '*' } else { ' ' };
    let dir = place
        .dir
        .as_ref()
        .map(|dir| format!(": {}", dir.display()))
        .unwrap_or_default();
    let contents = match &place.contents {
        Ok(files) => size(files),
        Err(why) => why.clone(),
    };
    format!("{marker} {number}. {}{dir}: {contents}", place.source)
}

fn size(files: &ModelFiles) -> String {
    let gb = files.bytes as f64 / 1e9;
    if gb >= 0.1 {
        format!("{} files, {gb:.2} GB", files.files)
    } else {
        format!("{} files, {:.1} MB", files.files, files.bytes as f64 / 1e6)
    }
}

fn download(args: DownloadArgs) -> Result<(), Failure> {
    let env = Env::from_process();
    let hub_cache = args
        .to
        .or_else(|| env.hub_cache.clone())
        .ok_or_else(|| download_failure(DownloadError::NoCacheDir))?;
    let options = DownloadOptions {
        token: env.token.clone(),
        revision: args.revision,
        ..DownloadOptions::new(env.endpoint.clone(), hub_cache)
    };
    eprintln!(
        "Downloading {REPO} at {} from {} into {}",
        options.revision,
        options.endpoint,
        options.hub_cache.display()
    );
    let bar = DownloadBar::new();
    // Ctrl+C needs no handler: the partial file is written straight to disk and resumed next time.
    let cancel = AtomicBool::new(false);
    let outcome = deepread_models::download(&options, &cancel, |progress| bar.show(progress));
    bar.finish(outcome.is_ok());
    let snapshot = outcome.map_err(download_failure)?;
    println!("{}", snapshot.display());
    match locate_in(None, &env) {
        Ok(located) if located.dir == snapshot => {
            eprintln!("DeepRead will read with it (see `deepread models list`).")
        }
        _ => eprintln!(
            "To read with it, pass --model {0} or set DEEPREAD_MODEL={0}.",
            snapshot.display()
        ),
    }
    Ok(())
}

/// Network and disk trouble may pass by running again (exit 9); the rest is about the model itself.
fn download_failure(error: DownloadError) -> Failure {
    if error.is_retryable() {
        Failure::Download(error.to_string())
    } else {
        Failure::Model(error.to_string())
    }
}

/// The download's bar: bytes of the whole model, and the rate and time left the download computes.
struct DownloadBar {
    bar: ProgressBar,
}

impl DownloadBar {
    fn new() -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style =
            ProgressStyle::with_template("[{bar:30}] {bytes}/{total_bytes} {prefix} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
        bar.set_style(style);
        DownloadBar { bar }
    }

    fn show(&self, progress: &Progress) {
        self.bar.set_length(progress.total);
        self.bar.set_position(progress.done);
        let left = progress.eta.map_or_else(
            || "…".to_owned(),
            |eta| HumanDuration(round(eta)).to_string(),
        );
        self.bar.set_prefix(format!(
            "· {}/s · {left} left",
            HumanBytes(progress.rate as u64)
        ));
        self.bar.set_message(progress.file.clone());
    }

    fn finish(&self, whole: bool) {
        if whole {
            self.bar.finish_with_message("done");
        } else {
            self.bar.abandon();
        }
    }
}

/// Whole seconds: "3 minutes" reads better than a figure that jitters in the milliseconds.
fn round(duration: Duration) -> Duration {
    Duration::from_secs(duration.as_secs_f64().round() as u64)
}

fn verify(dir: &Path) -> Result<(), Failure> {
    // bf16 keeps the check's memory at the size of the files.
    Model::load(dir, &candle_device(), candle_dtype()).map_err(Failure::model)?;
    deepread_engine::prompt::Tokenizer::from_model_dir(dir).map_err(Failure::model)?;
    println!(
        "{}: every tensor present with the shape its config asks for; tokenizer loads",
        dir.display()
    );
    Ok(())
}

fn candle_device() -> candle_core::Device {
    deepread_engine::default_device().0
}

fn candle_dtype() -> candle_core::DType {
    candle_core::DType::BF16
}
