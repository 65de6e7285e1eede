//! `deepread models list|verify`: which model folders there are, and whether their weights load.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use deepread_core::recognizer::default_model_dir;
use deepread_engine::Model;

use crate::failure::Failure;

#[derive(Subcommand)]
pub enum ModelsCommand {
    /// The model folders under models/ (or the given folder) and what is in them.
    List {
        #[arg(long, default_value = "models")]
        dir: PathBuf,
    },
    /// Loads a model's weights and checks every tensor against its config.
    Verify {
        /// Model folder (default: $DEEPREAD_MODEL or models/DeepSeek-OCR-2).
        #[arg(long)]
        model: Option<PathBuf>,
    },
}

pub fn run(command: ModelsCommand) -> Result<(), Failure> {
    match command {
        ModelsCommand::List { dir } => list(&dir),
        ModelsCommand::Verify { model } => verify(&model.unwrap_or_else(default_model_dir)),
    }
}

fn list(dir: &Path) -> Result<(), Failure> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Failure::Model(format!("cannot list {}: {e}", dir.display())))?;
    let mut found = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.join("config.json").is_file() {
            found += 1;
            println!("{}\t{}", path.display(), describe(&path));
        }
    }
    if found == 0 {
        println!("no models in {} (see models/README.md)", dir.display());
    }
    Ok(())
}

/// The weight files' total size, as a person reads it.
fn describe(dir: &Path) -> String {
    let bytes: u64 = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "safetensors"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    format!("{:.2} GB of weights", bytes as f64 / 1e9)
}

fn verify(dir: &Path) -> Result<(), Failure> {
    if !dir.join("config.json").is_file() {
        return Err(Failure::Model(format!(
            "no model in {}: it needs config.json, tokenizer.json and the safetensors files (see models/README.md)",
            dir.display()
        )));
    }
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
