//! `deepread ocr FILE [--page N] --model DIR`: one page through the model, its raw output (grounding
//! tags included) streamed to stdout as it is generated.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use deepread_core::recognizer::{locate_model, ReadingMode, MODEL_RENDER};
use deepread_engine::{default_device, Flow, GenerateOptions, Ocr, TextEvent};

use crate::failure::Failure;
use crate::password::{open_document, PasswordArgs};
use crate::Mode;

#[derive(Args)]
pub struct OcrArgs {
    /// A PDF or a page image.
    file: PathBuf,
    /// Page number, from 1.
    #[arg(long, default_value_t = 1)]
    page: usize,
    /// Model folder (default: $DEEPREAD_MODEL, the Hugging Face cache, then the data folder: `deepread models list`).
    #[arg(long)]
    model: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Mode::Layout)]
    mode: Mode,
    /// Stop a page after this many tokens.
    #[arg(long, default_value_t = 8192)]
    max_new_tokens: usize,
    #[command(flatten)]
    password: PasswordArgs,
}

pub fn run(args: OcrArgs) -> Result<(), Failure> {
    let document = open_document(&args.file, args.password.password()?.as_deref())?;
    let index = args
        .page
        .checked_sub(1)
        .filter(|&p| p < document.page_count())
        .ok_or_else(|| {
            Failure::Usage(format!(
                "page {} does not exist: {} has {} page(s)",
                args.page,
                args.file.display(),
                document.page_count()
            ))
        })?;
    let image = document
        .render_page(index, MODEL_RENDER)
        .map_err(|e| Failure::document(&args.file, e))?;
    let dir = locate_model(args.model.as_deref()).map_err(Failure::model)?;
    let (device, dtype) = default_device();
    let ocr = Ocr::load(&dir, &device, dtype).map_err(Failure::model)?;
    let prompt = ReadingMode::from(args.mode).preset().text();
    let input = ocr.prepare(&image, prompt).map_err(Failure::model)?;
    let options = GenerateOptions {
        max_new_tokens: args.max_new_tokens,
        ..GenerateOptions::default()
    };
    let mut stdout = std::io::stdout().lock();
    let mut write_failed = None;
    ocr.read(&[input], &options, |event| {
        if let TextEvent::Text { text, .. } = event {
            if let Err(e) = stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
            {
                write_failed = Some(e);
                return Flow::StopPage;
            }
        }
        Flow::Continue
    })
    .map_err(Failure::model)?;
    if let Some(error) = write_failed {
        return Err(Failure::Output(format!(
            "could not write to stdout: {error}"
        )));
    }
    let _ = writeln!(stdout);
    Ok(())
}
